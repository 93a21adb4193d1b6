package plugins

import (
	"testing"

	"github.com/kobune/kobune/api/core"
)

func TestNodeUnschedulable(t *testing.T) {
	cordoned := ni(node("n", func(n *core.Node) { n.Spec.Unschedulable = true }))
	runFilters(t, NodeUnschedulable{}, []filterCase{
		{name: "schedulable", pod: pod("", ""), node: ni(node("n"))},
		{name: "cordoned", pod: pod("", ""), node: cordoned, reason: "node(s) were unschedulable"},
		{name: "cordoned but tolerated", pod: pod("", "", func(p *core.Pod) {
			p.Spec.Tolerations = []core.Toleration{{Key: "node.kubernetes.io/unschedulable", Operator: "Exists"}}
		}), node: cordoned},
	})
}

func TestNodeName(t *testing.T) {
	runFilters(t, NodeName{}, []filterCase{
		{name: "no name asked", pod: pod("", ""), node: ni(node("n"))},
		{name: "this node named", pod: pod("", "", func(p *core.Pod) { p.Spec.NodeName = "n" }), node: ni(node("n"))},
		{name: "other node named", pod: pod("", "", func(p *core.Pod) { p.Spec.NodeName = "m" }), node: ni(node("n")), reason: "node(s) didn't match the requested node name"},
	})
}

func TestNodeReady(t *testing.T) {
	runFilters(t, NodeReady{}, []filterCase{
		{name: "ready", pod: pod("", ""), node: ni(node("n"))},
		{name: "no condition", pod: pod("", ""), node: ni(node("n", func(n *core.Node) { n.Status.Conditions = nil })), reason: "node(s) were not ready"},
		{name: "unknown", pod: pod("", ""), node: ni(node("n", func(n *core.Node) { n.Status.Conditions[0].Status = "Unknown" })), reason: "node(s) were not ready"},
	})
}

func TestTaintToleration(t *testing.T) {
	gpu := func(effect core.TaintEffect) *core.Node {
		return node("n", func(n *core.Node) { n.Spec.Taints = []core.Taint{{Key: "dedicated", Value: "gpu", Effect: effect}} })
	}
	runFilters(t, TaintToleration{}, []filterCase{
		{name: "untolerated NoSchedule", pod: pod("", ""), node: ni(gpu(core.TaintNoSchedule)), reason: "node(s) had untolerated taint {dedicated: gpu}"},
		{name: "untolerated NoExecute", pod: pod("", ""), node: ni(gpu(core.TaintNoExecute)), reason: "node(s) had untolerated taint {dedicated: gpu}"},
		{name: "tolerated", pod: pod("", "", func(p *core.Pod) {
			p.Spec.Tolerations = []core.Toleration{{Key: "dedicated", Value: "gpu", Effect: core.TaintNoSchedule}}
		}), node: ni(gpu(core.TaintNoSchedule))},
		{name: "tolerated with Exists", pod: pod("", "", func(p *core.Pod) {
			p.Spec.Tolerations = []core.Toleration{{Key: "dedicated", Operator: "Exists"}}
		}), node: ni(gpu(core.TaintNoExecute))},
		{name: "PreferNoSchedule does not filter", pod: pod("", ""), node: ni(gpu(core.TaintPreferNoSchedule))},
	})
}

func withHostPort(port int32) func(*core.Pod) {
	return func(p *core.Pod) {
		p.Spec.Containers[0].Ports = []core.ContainerPort{{ContainerPort: 80, HostPort: port, Protocol: core.ProtocolTCP}}
	}
}

func TestNodePorts(t *testing.T) {
	runFilters(t, NodePorts{}, []filterCase{
		{name: "host port taken", pod: pod("", "", withHostPort(8080)), node: ni(node("n"), pod("", "", withHostPort(8080))), reason: "node(s) didn't have free ports for the requested pod ports"},
		{name: "other host port", pod: pod("", "", withHostPort(8081)), node: ni(node("n"), pod("", "", withHostPort(8080)))},
		{name: "no host port", pod: pod("", ""), node: ni(node("n"), pod("", "", withHostPort(8080)))},
	})
}
