// Package network gives pods their network: a network namespace per pod,
// wired by CNI plugins (bridge with host-local IPAM from the node's pod CIDR,
// portmap for hostPorts, plus loopback) through libcni — the kubelet's CNI network plugin. The
// agent owns the narrow Network interface; the runtime calls it when it
// creates or removes a pod sandbox.
package network
