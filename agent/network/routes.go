package network

import (
	"context"
	"fmt"
	"net"
	"os/exec"
	"strings"

	"github.com/kobune/kobune/api/core"
)

// routeProto marks the routes the agent installs (ip route ... proto 199),
// so that it can find and remove its own routes and no others.
const routeProto = "199"

// SyncRoutes makes this node's routing table send each other node's pod
// CIDR to that node's InternalIP (host-gateway networking: no overlay,
// nodes must share a subnet), and removes routes to nodes that are gone.
func SyncRoutes(ctx context.Context, self string, nodes []*core.Node) error {
	want := map[string]string{} // pod CIDR → next hop
	for _, n := range nodes {
		if n.Name == self || n.Spec.PodCIDR == "" {
			continue
		}
		ip := internalIP(n)
		if ip == "" || net.ParseIP(ip) == nil {
			continue
		}
		if _, _, err := net.ParseCIDR(n.Spec.PodCIDR); err != nil {
			continue
		}
		want[n.Spec.PodCIDR] = ip
	}
	out, err := exec.CommandContext(ctx, "ip", "route", "show", "proto", routeProto).Output()
	if err != nil {
		return fmt.Errorf("ip route show: %w", err)
	}
	have := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		if len(f) >= 3 && f[1] == "via" {
			have[f[0]] = f[2]
		}
	}
	for cidr, via := range want {
		if have[cidr] == via {
			continue
		}
		if out, err := exec.CommandContext(ctx, "ip", "route", "replace", cidr, "via", via, "proto", routeProto).CombinedOutput(); err != nil {
			return fmt.Errorf("ip route replace %s via %s: %v: %s", cidr, via, err, strings.TrimSpace(string(out)))
		}
	}
	for cidr := range have {
		if _, ok := want[cidr]; !ok {
			_ = exec.CommandContext(ctx, "ip", "route", "delete", cidr, "proto", routeProto).Run()
		}
	}
	return nil
}

func internalIP(n *core.Node) string {
	for _, a := range n.Status.Addresses {
		if a.Type == "InternalIP" {
			return a.Address
		}
	}
	return ""
}

// EnsureServiceRoute gives locally made connections to Service IPs a
// route when the node has none for them (a lab node has no default
// route): without one, connect() fails before the node proxy's DNAT can
// run. The route points at the loopback device, with the node's address as
// source: a packet the proxy rewrites is routed again to its pod, one it
// does not (an address no Service has) stays in the node — it can never
// leave the machine. A node that has a route already (its default route, on
// a VM) is left alone, as kube-proxy leaves it.
func EnsureServiceRoute(ctx context.Context, serviceCIDR, nodeIP string) error {
	ip, cidr, err := net.ParseCIDR(serviceCIDR)
	if err != nil {
		return fmt.Errorf("service range %q: %w", serviceCIDR, err)
	}
	if net.ParseIP(nodeIP) == nil {
		return fmt.Errorf("node address %q is not an IP", nodeIP)
	}
	if exec.CommandContext(ctx, "ip", "route", "get", ip.Mask(cidr.Mask).String()).Run() == nil {
		return nil
	}
	if out, err := exec.CommandContext(ctx, "ip", "route", "replace", cidr.String(), "dev", "lo", "src", nodeIP, "proto", routeProto).CombinedOutput(); err != nil {
		return fmt.Errorf("ip route replace %s dev lo src %s: %v: %s", cidr, nodeIP, err, strings.TrimSpace(string(out)))
	}
	return nil
}
