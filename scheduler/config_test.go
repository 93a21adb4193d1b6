package scheduler

import (
	"context"
	"strings"
	"testing"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/api/policy"
	"github.com/kobune/kobune/api/resource"
	"github.com/kobune/kobune/scheduler/framework"
)

func TestParseConfig(t *testing.T) {
	p, name, err := ParseConfig([]byte(`
apiVersion: kobune.io/v1
kind: SchedulerConfiguration
schedulerName: packer
percentageOfNodesToScore: 30
plugins:
  filter:
    disabled: [{name: NodePorts}]
  score:
    disabled: [{name: LeastAllocated}]
    enabled: [{name: MostAllocated}, {name: TaintToleration, weight: 7}]
`))
	if err != nil {
		t.Fatal(err)
	}
	if name != "packer" || p.PercentageOfNodesToScore != 30 {
		t.Errorf("name %q, percentage %d", name, p.PercentageOfNodesToScore)
	}
	got := p.String()
	for _, want := range []string{"MostAllocated×1", "TaintToleration×7", "BalancedAllocation×1"} {
		if !strings.Contains(got, want) {
			t.Errorf("profile %q lacks %q", got, want)
		}
	}
	for _, absent := range []string{"LeastAllocated", "NodePorts", "TaintToleration×3"} {
		if strings.Contains(got, absent) {
			t.Errorf("profile %q still has %q", got, absent)
		}
	}

	for _, bad := range []struct{ yaml, want string }{
		{"apiVersion: kobune.io/v1\nkind: SchedulerConfiguration\nplugins: {score: {enabled: [{name: Nope}]}}", `plugins.score.enabled[0].name: unknown score plugin "Nope"`},
		{"apiVersion: kobune.io/v1\nkind: SchedulerConfiguration\nplugins: {filter: {disabled: [{name: Nope}]}}", `plugins.filter.disabled[0].name: unknown filter plugin "Nope"`},
		{"apiVersion: kobune.io/v1\nkind: SchedulerConfiguration\nplugins: {score: {enabled: [{name: MostAllocated, weight: 500}]}}", "plugins.score.enabled[0].weight: must be between 1 and 100"},
		{"apiVersion: kobune.io/v1\nkind: SchedulerConfiguration\npercentageOfNodesToScore: 101", "percentageOfNodesToScore: must be between 0 and 100"},
		{"apiVersion: kobune.io/v1\nkind: SchedulerConfiguration\nweights: {}", `unknown field "weights"`},
		{"apiVersion: v1\nkind: Pod", "apiVersion/kind"},
	} {
		if _, _, err := ParseConfig([]byte(bad.yaml)); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%q: error %v, want %q", bad.yaml, err, bad.want)
		}
	}
}

func TestNumFeasibleNodesToFind(t *testing.T) {
	adaptive, all, ten := &Profile{}, &Profile{PercentageOfNodesToScore: 100}, &Profile{PercentageOfNodesToScore: 10}
	for _, tt := range []struct {
		p           *Profile
		nodes, want int
	}{
		{adaptive, 50, 50},     // small clusters: every node
		{adaptive, 1000, 420},  // 50 − 1000/125 = 42%
		{adaptive, 5000, 500},  // 50 − 40 = 10%
		{adaptive, 10000, 500}, // never below 5%
		{adaptive, 150, 100},   // at least 100
		{all, 5000, 5000},
		{ten, 5000, 500},
	} {
		if got := tt.p.numFeasibleNodesToFind(tt.nodes); got != tt.want {
			t.Errorf("%d%% of %d nodes: %d, want %d", tt.p.PercentageOfNodesToScore, tt.nodes, got, tt.want)
		}
	}
}

// Preemption is a PostFilter plugin like kube-scheduler's
// DefaultPreemption: on by default, off with plugins.postFilter.disabled,
// and an unknown name is an error naming the field.
func TestPostFilterConfig(t *testing.T) {
	low, high := int32(0), int32(100)
	n := &core.Node{ObjectMeta: meta.ObjectMeta{Name: "n1"}}
	n.Status.Allocatable = resource.List{resource.CPU: resource.MustParse("1"), resource.Memory: resource.MustParse("1Gi"), resource.Pods: resource.MustParse("10")}
	n.Status.Conditions = []core.NodeCondition{{Type: core.NodeReady, Status: meta.ConditionTrue}}
	cpu := func(name string, prio *int32, node string) *core.Pod {
		return &core.Pod{ObjectMeta: meta.ObjectMeta{Name: name, Namespace: "default"}, Spec: core.PodSpec{NodeName: node, Priority: prio,
			Containers: []core.Container{{Name: "c", Image: "i", Resources: core.ResourceRequirements{Requests: resource.List{resource.CPU: resource.MustParse("1")}}}}}}
	}
	nodes := []*framework.NodeInfo{framework.NewNodeInfo(n, cpu("busy", &low, "n1"))}
	pod := cpu("important", &high, "")
	insufficient := func(int) *framework.Status { return framework.NewStatus(framework.Unschedulable, "Insufficient cpu") }
	run := func(p *Profile) *framework.PostFilterResult {
		r, _ := p.framework(1).RunPostFilterPlugins(context.Background(), framework.NewCycleState(pod, nodes), pod, insufficient)
		return r
	}
	if r := run(DefaultProfile()); r == nil || r.NominatedNodeName != "n1" || len(r.Victims) != 1 || r.Victims[0].Name != "busy" {
		t.Errorf("default profile: %+v, want busy preempted on n1", r)
	}
	off, _, err := ParseConfig([]byte("apiVersion: kobune.io/v1\nkind: SchedulerConfiguration\nplugins: {postFilter: {disabled: [{name: DefaultPreemption}]}}"))
	if err != nil {
		t.Fatal(err)
	}
	if r := run(off); r != nil {
		t.Errorf("preemption disabled, still %+v", r)
	}
	if !strings.Contains(off.String(), "postFilters: []") {
		t.Errorf("profile %q", off)
	}
	_, _, err = ParseConfig([]byte("apiVersion: kobune.io/v1\nkind: SchedulerConfiguration\nplugins: {postFilter: {enabled: [{name: Nope}]}}"))
	if err == nil || !strings.Contains(err.Error(), `plugins.postFilter.enabled[0].name: unknown postFilter plugin "Nope"`) {
		t.Errorf("error %v", err)
	}
}

// TestPreemptionSparesBudgets: of two nodes where preempting one pod
// would make room, the one whose victim no PodDisruptionBudget protects
// is chosen (Kubernetes' first criterion); without budgets, the first.
func TestPreemptionSparesBudgets(t *testing.T) {
	low, high := int32(0), int32(100)
	node := func(name string) *core.Node {
		n := &core.Node{ObjectMeta: meta.ObjectMeta{Name: name}}
		n.Status.Allocatable = resource.List{resource.CPU: resource.MustParse("1"), resource.Memory: resource.MustParse("1Gi"), resource.Pods: resource.MustParse("10")}
		n.Status.Conditions = []core.NodeCondition{{Type: core.NodeReady, Status: meta.ConditionTrue}}
		return n
	}
	cpu := func(name string, prio *int32, nodeName string, labels map[string]string) *core.Pod {
		return &core.Pod{ObjectMeta: meta.ObjectMeta{Name: name, Namespace: "default", Labels: labels}, Spec: core.PodSpec{NodeName: nodeName, Priority: prio,
			Containers: []core.Container{{Name: "c", Image: "i", Resources: core.ResourceRequirements{Requests: resource.List{resource.CPU: resource.MustParse("1")}}}}}}
	}
	nodes := []*framework.NodeInfo{framework.NewNodeInfo(node("a"), cpu("guarded", &low, "a", map[string]string{"app": "db"})),
		framework.NewNodeInfo(node("b"), cpu("free", &low, "b", map[string]string{"app": "batch"}))}
	pod := cpu("important", &high, "", nil)
	insufficient := func(int) *framework.Status { return framework.NewStatus(framework.Unschedulable, "Insufficient cpu") }
	run := func(budgets []*policy.PodDisruptionBudget) *framework.PostFilterResult {
		state := framework.NewCycleState(pod, nodes)
		state.Budgets = func() []*policy.PodDisruptionBudget { return budgets }
		r, _ := DefaultProfile().framework(1).RunPostFilterPlugins(context.Background(), state, pod, insufficient)
		return r
	}
	if r := run(nil); r == nil || r.NominatedNodeName != "a" {
		t.Fatalf("without budgets: %+v, want the first node", r)
	}
	db := &policy.PodDisruptionBudget{ObjectMeta: meta.ObjectMeta{Name: "db", Namespace: "default"},
		Spec: policy.PodDisruptionBudgetSpec{Selector: &meta.LabelSelector{MatchLabels: map[string]string{"app": "db"}}}}
	if r := run([]*policy.PodDisruptionBudget{db}); r == nil || r.NominatedNodeName != "b" || r.Victims[0].Name != "free" {
		t.Errorf("the db pod's budget allows no disruption: %+v, want node b's pod preempted", r)
	}
	db.Status.DisruptionsAllowed = 1
	if r := run([]*policy.PodDisruptionBudget{db}); r == nil || r.NominatedNodeName != "a" {
		t.Errorf("the budget allows one: %+v, want the first node again", r)
	}
}
