// Package agent will hold kobune-agent, Kobune's counterpart of kubelet + kube-proxy: it will run pods on containerd and CNI.
//
// Not implemented yet (issue #3): the kobune-agent binary only connects to
// the API server and says that it does nothing.
package agent
