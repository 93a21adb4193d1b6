package plugins

import (
	"context"
	"testing"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/api/resource"
	"github.com/kobune/kobune/scheduler/framework"
)

// node is a Ready node with 2 cpu, 4Gi, room for 3 pods, labels zone=a and gpus=2.
func node(name string, mutate ...func(*core.Node)) *core.Node {
	n := &core.Node{ObjectMeta: meta.ObjectMeta{Name: name, Labels: map[string]string{"zone": "a", "gpus": "2", "kubernetes.io/hostname": name}}}
	n.Status.Allocatable = resource.List{resource.CPU: resource.MustParse("2"), resource.Memory: resource.MustParse("4Gi"), resource.Pods: resource.MustParse("3")}
	n.Status.Conditions = []core.NodeCondition{{Type: core.NodeReady, Status: meta.ConditionTrue}}
	for _, m := range mutate {
		m(n)
	}
	return n
}

func zone(z string) func(*core.Node) { return func(n *core.Node) { n.Labels["zone"] = z } }

// pod is a pod in default requesting cpu and memory ("" for none).
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

func labeled(name string, labels map[string]string) func(*core.Pod) {
	return func(p *core.Pod) { p.Name, p.Labels = name, labels }
}

// filterCase is a row of a filter table: the pod, the node it is judged
// on, the other nodes of the cluster (for plugins that look across nodes),
// and the reason wanted ("" means it fits).
type filterCase struct {
	name   string
	pod    *core.Pod
	node   *framework.NodeInfo
	others []*framework.NodeInfo
	reason string
}

// runFilters runs a filter table, with PreFilter first when the plugin has one.
func runFilters(t *testing.T, plugin framework.FilterPlugin, tests []filterCase) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			state := framework.NewCycleState(tt.pod, append([]*framework.NodeInfo{tt.node}, tt.others...))
			if pf, ok := plugin.(framework.PreFilterPlugin); ok {
				if st := pf.PreFilter(context.Background(), state, tt.pod); !st.IsSuccess() {
					t.Fatalf("PreFilter: %s", st.Message())
				}
			}
			st := plugin.Filter(context.Background(), state, tt.pod, tt.node)
			if tt.reason == "" && !st.IsSuccess() {
				t.Fatalf("%s rejected: %s", plugin.Name(), st.Message())
			}
			if tt.reason != "" && (st.IsSuccess() || st.Message() != tt.reason) {
				t.Fatalf("%s: got %q, want %q", plugin.Name(), st.Message(), tt.reason)
			}
		})
	}
}

// scoreCase is a row of a score table: the pod, the feasible nodes, and the
// normalized scores wanted in the same order.
type scoreCase struct {
	name  string
	pod   *core.Pod
	nodes []*framework.NodeInfo
	want  []int64
}

// runScores runs PreScore, Score and Normalize as the scheduler does.
func runScores(t *testing.T, plugin framework.ScorePlugin, tests []scoreCase) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			state := framework.NewCycleState(tt.pod, tt.nodes)
			if ps, ok := plugin.(framework.PreScorePlugin); ok {
				if st := ps.PreScore(ctx, state, tt.pod, tt.nodes); !st.IsSuccess() {
					t.Fatalf("PreScore: %s", st.Message())
				}
			}
			got := make([]int64, len(tt.nodes))
			for i, n := range tt.nodes {
				s, st := plugin.Score(ctx, state, tt.pod, n)
				if !st.IsSuccess() {
					t.Fatalf("Score: %s", st.Message())
				}
				got[i] = s
			}
			if norm, ok := plugin.(framework.ScoreNormalizer); ok {
				norm.Normalize(got)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Fatalf("%s scores %v, want %v", plugin.Name(), got, tt.want)
				}
			}
		})
	}
}

func ni(n *core.Node, pods ...*core.Pod) *framework.NodeInfo {
	return framework.NewNodeInfo(n, pods...)
}
