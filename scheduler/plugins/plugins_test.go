package plugins

import (
	"context"
	"testing"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/api/resource"
	"github.com/kobune/kobune/scheduler/framework"
)

func node(name string, mutate ...func(*core.Node)) *core.Node {
	n := &core.Node{ObjectMeta: meta.ObjectMeta{Name: name, Labels: map[string]string{"zone": "a", "gpus": "2"}}}
	n.Status.Allocatable = resource.List{resource.CPU: resource.MustParse("2"), resource.Memory: resource.MustParse("4Gi"), resource.Pods: resource.MustParse("3")}
	n.Status.Conditions = []core.NodeCondition{{Type: core.NodeReady, Status: meta.ConditionTrue}}
	for _, m := range mutate {
		m(n)
	}
	return n
}

func pod(cpu, mem string, mutate ...func(*core.Pod)) *core.Pod {
	p := &core.Pod{ObjectMeta: meta.ObjectMeta{Name: "p", Namespace: "default"}}
	c := core.Container{Name: "c", Image: "i", Resources: core.ResourceRequirements{Requests: resource.List{}}}
	if cpu != "" {
		c.Resources.Requests[resource.CPU] = resource.MustParse(cpu)
	}
	if mem != "" {
		c.Resources.Requests[resource.Memory] = resource.MustParse(mem)
	}
	p.Spec.Containers = []core.Container{c}
	for _, m := range mutate {
		m(p)
	}
	return p
}

func TestFilters(t *testing.T) {
	full := node("n", func(n *core.Node) {})
	tests := []struct {
		name   string
		plugin framework.FilterPlugin
		pod    *core.Pod
		node   *framework.NodeInfo
		reason string // "" means the pod fits
	}{
		{"fits", NodeResourcesFit{}, pod("1", "1Gi"), framework.NewNodeInfo(node("n")), ""},
		{"cpu", NodeResourcesFit{}, pod("1500m", ""), framework.NewNodeInfo(node("n"), pod("1", "")), "Insufficient cpu"},
		{"memory", NodeResourcesFit{}, pod("", "3Gi"), framework.NewNodeInfo(node("n"), pod("", "2Gi")), "Insufficient memory"},
		{"pod count", NodeResourcesFit{}, pod("", ""), framework.NewNodeInfo(full, pod("", ""), pod("", ""), pod("", "")), "Too many pods"},
		{"cordoned", NodeUnschedulable{}, pod("", ""), framework.NewNodeInfo(node("n", func(n *core.Node) { n.Spec.Unschedulable = true })), "node(s) were unschedulable"},
		{"cordoned but tolerated", NodeUnschedulable{}, pod("", "", func(p *core.Pod) {
			p.Spec.Tolerations = []core.Toleration{{Key: "node.kubernetes.io/unschedulable", Operator: "Exists"}}
		}), framework.NewNodeInfo(node("n", func(n *core.Node) { n.Spec.Unschedulable = true })), ""},
		{"other node named", NodeName{}, pod("", "", func(p *core.Pod) { p.Spec.NodeName = "m" }), framework.NewNodeInfo(node("n")), "node(s) didn't match the requested node name"},
		{"not ready", NodeReady{}, pod("", ""), framework.NewNodeInfo(node("n", func(n *core.Node) { n.Status.Conditions = nil })), "node(s) were not ready"},
		{"untolerated taint", TaintToleration{}, pod("", ""), framework.NewNodeInfo(node("n", func(n *core.Node) {
			n.Spec.Taints = []core.Taint{{Key: "dedicated", Value: "gpu", Effect: core.TaintNoSchedule}}
		})), "node(s) had untolerated taint {dedicated: gpu}"},
		{"tolerated taint", TaintToleration{}, pod("", "", func(p *core.Pod) {
			p.Spec.Tolerations = []core.Toleration{{Key: "dedicated", Value: "gpu", Effect: core.TaintNoSchedule}}
		}), framework.NewNodeInfo(node("n", func(n *core.Node) {
			n.Spec.Taints = []core.Taint{{Key: "dedicated", Value: "gpu", Effect: core.TaintNoSchedule}}
		})), ""},
		{"PreferNoSchedule does not filter", TaintToleration{}, pod("", ""), framework.NewNodeInfo(node("n", func(n *core.Node) {
			n.Spec.Taints = []core.Taint{{Key: "spot", Effect: core.TaintPreferNoSchedule}}
		})), ""},
		{"nodeSelector", NodeAffinity{}, pod("", "", func(p *core.Pod) { p.Spec.NodeSelector = map[string]string{"zone": "b"} }), framework.NewNodeInfo(node("n")), "node(s) didn't match Pod's node affinity/selector"},
		{"affinity Gt", NodeAffinity{}, pod("", "", func(p *core.Pod) {
			p.Spec.Affinity = &core.Affinity{NodeAffinity: &core.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &core.NodeSelector{
				NodeSelectorTerms: []core.NodeSelectorTerm{{MatchExpressions: []core.NodeSelectorRequirement{{Key: "gpus", Operator: "Gt", Values: []string{"1"}}}}}}}}
		}), framework.NewNodeInfo(node("n")), ""},
		{"affinity NotIn", NodeAffinity{}, pod("", "", func(p *core.Pod) {
			p.Spec.Affinity = &core.Affinity{NodeAffinity: &core.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &core.NodeSelector{
				NodeSelectorTerms: []core.NodeSelectorTerm{{MatchExpressions: []core.NodeSelectorRequirement{{Key: "zone", Operator: "NotIn", Values: []string{"a"}}}}}}}}
		}), framework.NewNodeInfo(node("n")), "node(s) didn't match Pod's node affinity/selector"},
		{"host port taken", NodePorts{}, pod("", "", withHostPort(8080)), framework.NewNodeInfo(node("n"), pod("", "", withHostPort(8080))), "node(s) didn't have free ports for the requested pod ports"},
		{"other host port", NodePorts{}, pod("", "", withHostPort(8081)), framework.NewNodeInfo(node("n"), pod("", "", withHostPort(8080))), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := tt.plugin.Filter(context.Background(), tt.pod, tt.node)
			if tt.reason == "" && !st.IsSuccess() {
				t.Fatalf("%s rejected: %s", tt.plugin.Name(), st.Message())
			}
			if tt.reason != "" && (st.IsSuccess() || st.Message() != tt.reason) {
				t.Fatalf("%s: got %q, want %q", tt.plugin.Name(), st.Message(), tt.reason)
			}
		})
	}
}

func TestLeastAllocated(t *testing.T) {
	empty := framework.NewNodeInfo(node("empty"))
	busy := framework.NewNodeInfo(node("busy"), pod("1", "2Gi"))
	p := pod("500m", "1Gi")
	se, _ := LeastAllocated{}.Score(context.Background(), p, empty)
	sb, _ := LeastAllocated{}.Score(context.Background(), p, busy)
	if se != 75 || sb != 25 {
		t.Errorf("scores: empty %d (want 75), busy %d (want 25)", se, sb)
	}
}

func withHostPort(port int32) func(*core.Pod) {
	return func(p *core.Pod) {
		p.Spec.Containers[0].Ports = []core.ContainerPort{{ContainerPort: 80, HostPort: port, Protocol: core.ProtocolTCP}}
	}
}

func TestScorePlugins(t *testing.T) {
	ctx := context.Background()
	even := framework.NewNodeInfo(node("even"))                      // 2 cpu, 4Gi
	cpuHeavy := framework.NewNodeInfo(node("cpu"), pod("1500m", "")) // cpu mostly used
	p := pod("500m", "1Gi")
	be, _ := BalancedAllocation{}.Score(ctx, p, even)
	bc, _ := BalancedAllocation{}.Score(ctx, p, cpuHeavy)
	if be <= bc {
		t.Errorf("BalancedAllocation: even node %d should beat the cpu-heavy node %d", be, bc)
	}

	tainted := framework.NewNodeInfo(node("t", func(n *core.Node) {
		n.Spec.Taints = []core.Taint{{Key: "spot", Effect: core.TaintPreferNoSchedule}, {Key: "old", Effect: core.TaintPreferNoSchedule}}
	}))
	raw := map[string]int64{}
	for _, n := range []*framework.NodeInfo{tainted, even} {
		raw[n.Node.Name], _ = PreferNoSchedule{}.Score(ctx, pod("", ""), n)
	}
	PreferNoSchedule{}.Normalize(raw)
	if raw["even"] != 100 || raw["t"] != 0 {
		t.Errorf("PreferNoSchedule normalized %v, want even 100, t 0", raw)
	}

	pref := pod("", "", func(p *core.Pod) {
		p.Spec.Affinity = &core.Affinity{NodeAffinity: &core.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []core.PreferredSchedulingTerm{
			{Weight: 80, Preference: core.NodeSelectorTerm{MatchExpressions: []core.NodeSelectorRequirement{{Key: "zone", Operator: "In", Values: []string{"b"}}}}},
			{Weight: 20, Preference: core.NodeSelectorTerm{MatchExpressions: []core.NodeSelectorRequirement{{Key: "gpus", Operator: "Exists"}}}},
		}}}
	})
	zoneB := framework.NewNodeInfo(node("b", func(n *core.Node) { n.Labels["zone"] = "b" }))
	raw = map[string]int64{}
	for _, n := range []*framework.NodeInfo{zoneB, even} {
		raw[n.Node.Name], _ = PreferredNodeAffinity{}.Score(ctx, pref, n)
	}
	PreferredNodeAffinity{}.Normalize(raw)
	if raw["b"] != 100 || raw["even"] != 20 {
		t.Errorf("preferred affinity normalized %v, want b 100 (80+20 of 100), even 20", raw)
	}
}
