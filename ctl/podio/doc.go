// Package podio is kobectl's commands that reach into a running pod
// through the API server's node proxy: logs, exec, attach, cp and
// port-forward, each naming a pod or a workload whose pod it picks as
// kubectl does. It mirrors kubectl's pkg/cmd/logs, exec, attach, cp and
// portforward.
package podio
