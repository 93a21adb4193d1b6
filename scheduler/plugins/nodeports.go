package plugins

import (
	"context"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/scheduler/framework"
)

// NodePorts rejects a node where another pod already uses a hostPort (with
// the same protocol and an overlapping hostIP) that the pod asks for.
type NodePorts struct{}

var _ framework.FilterPlugin = NodePorts{}

// Name implements framework.Plugin.
func (NodePorts) Name() string { return "NodePorts" }

// Filter implements framework.FilterPlugin.
func (NodePorts) Filter(_ context.Context, _ *framework.CycleState, pod *core.Pod, n *framework.NodeInfo) *framework.Status {
	want := hostPorts(pod)
	if len(want) == 0 {
		return nil
	}
	for _, other := range n.Pods {
		for _, used := range hostPorts(other) {
			for _, w := range want {
				if w.port == used.port && w.protocol == used.protocol && (w.ip == used.ip || w.ip == "0.0.0.0" || used.ip == "0.0.0.0") {
					return framework.NewStatus(framework.Unschedulable, "node(s) didn't have free ports for the requested pod ports")
				}
			}
		}
	}
	return nil
}

type hostPort struct {
	ip, protocol string
	port         int32
}

func hostPorts(p *core.Pod) []hostPort {
	var out []hostPort
	for _, c := range p.Spec.Containers {
		for _, cp := range c.Ports {
			if cp.HostPort == 0 {
				continue
			}
			ip, proto := cp.HostIP, string(cp.Protocol)
			if ip == "" {
				ip = "0.0.0.0"
			}
			if proto == "" {
				proto = "TCP"
			}
			out = append(out, hostPort{ip: ip, protocol: proto, port: cp.HostPort})
		}
	}
	return out
}
