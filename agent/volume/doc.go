// Package volume is kobune-agent's volume manager (the kubelet's volume
// manager and its in-tree volume plugins): it makes each pod's volumes on
// the node before its containers start — emptyDir on disk or in a tmpfs,
// hostPath checked or made, configMap, secret, downwardAPI and projected
// directories written by an atomic writer and rewritten in place when
// their sources change — and removes them when the pod goes. The layout
// is the kubelet's: <pods>/<uid>/volumes/kubernetes.io~<plugin>/<name>.
package volume
