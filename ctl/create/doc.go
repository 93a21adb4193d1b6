// Package create is kobectl's generators: create deployment, configmap,
// secret, service, job, quota, poddisruptionbudget, priorityclass,
// namespace, serviceaccount, token, rolebinding and clusterrolebinding,
// and run and expose — one object built from flags, created, or only
// printed with --dry-run=client. One file per generator. It mirrors
// kubectl's pkg/cmd/create (and run, expose).
package create
