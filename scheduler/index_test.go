package scheduler

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/api/resource"
	"github.com/kobune/kobune/scheduler/framework"
	"github.com/kobune/kobune/scheduler/plugins"
)

// TestIndexAgreesWithFullScan churns a cache (pods placed, removed,
// relabelled, terminating; nodes added, relabelled, removed) and checks
// after every step that the spread and inter-pod affinity filters give the
// same verdict on every node with the cache's index as by walking every
// pod, for a variety of incoming pods — and so does the index minus the pods
// preemption takes off a node (framework.WithoutPods).
func TestIndexAgreesWithFullScan(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	c := newCache()
	apps := []string{"web", "db", "cache"}
	mkNode := func(i int) *core.Node {
		n := &core.Node{ObjectMeta: meta.ObjectMeta{Name: fmt.Sprintf("n%d", i), Labels: map[string]string{
			"zone": fmt.Sprintf("z%d", rng.IntN(3)), "kubernetes.io/hostname": fmt.Sprintf("n%d", i)}}}
		if rng.IntN(5) == 0 {
			delete(n.Labels, "zone") // some nodes lack the key
		}
		n.Status.Allocatable = resource.List{resource.CPU: resource.MustParse("100"), resource.Memory: resource.MustParse("100Gi"), resource.Pods: resource.MustParse("1000")}
		return n
	}
	randomPod := func(name string) *core.Pod {
		p := &core.Pod{ObjectMeta: meta.ObjectMeta{Name: name, Namespace: []string{"default", "other"}[rng.IntN(2)],
			Labels: map[string]string{"app": apps[rng.IntN(len(apps))]}}}
		key := []string{"zone", "kubernetes.io/hostname"}[rng.IntN(2)]
		term := core.PodAffinityTerm{TopologyKey: key, LabelSelector: &meta.LabelSelector{MatchLabels: map[string]string{"app": apps[rng.IntN(len(apps))]}}}
		switch rng.IntN(4) {
		case 0:
			p.Spec.Affinity = &core.Affinity{PodAntiAffinity: &core.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []core.PodAffinityTerm{term}}}
		case 1:
			p.Spec.Affinity = &core.Affinity{PodAffinity: &core.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []core.PodAffinityTerm{term}}}
		case 2:
			p.Spec.TopologySpreadConstraints = []core.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: key, WhenUnsatisfiable: "DoNotSchedule", LabelSelector: term.LabelSelector}}
		}
		return p
	}
	for i := range 8 {
		c.setNode(mkNode(i))
	}
	var placed []*core.Pod
	filters := []framework.FilterPlugin{plugins.InterPodAffinity{}, plugins.PodTopologySpread{}}
	check := func(step int) {
		t.Helper()
		c.mu.RLock()
		defer c.mu.RUnlock()
		nodes := c.list()
		// agree runs the filters with the index and by walking the nodes,
		// and fails on any node where their verdicts differ.
		agree := func(what string, incoming *core.Pod, nodes []*framework.NodeInfo, index framework.ClusterIndex) {
			withIndex := framework.NewCycleState(incoming, nodes)
			withIndex.Index = index
			scan := framework.NewCycleState(incoming, nodes)
			for _, f := range filters {
				f.(framework.PreFilterPlugin).PreFilter(context.Background(), withIndex, incoming)
				f.(framework.PreFilterPlugin).PreFilter(context.Background(), scan, incoming)
				for _, ni := range nodes {
					a, b := f.Filter(context.Background(), withIndex, incoming, ni), f.Filter(context.Background(), scan, incoming, ni)
					if a.Message() != b.Message() {
						t.Fatalf("step %d, %s on %s for %+v%s: index says %q, full scan %q", step, f.Name(), ni.Node.Name, incoming.Spec, what, a.Message(), b.Message())
					}
				}
			}
		}
		for k := range 6 {
			incoming := randomPod(fmt.Sprintf("in-%d-%d", step, k))
			agree("", incoming, nodes, c.index)
			// Preemption's question: the same, had some pods left one
			// node (withoutPods against a scan of the changed cluster).
			j := rng.IntN(len(nodes))
			var kept []*core.Pod
			for _, p := range nodes[j].Pods {
				if rng.IntN(2) == 0 {
					kept = append(kept, p)
				}
			}
			changed := append([]*framework.NodeInfo(nil), nodes...)
			changed[j] = framework.NewNodeInfo(nodes[j].Node, kept...)
			agree(fmt.Sprintf(" with %d of %d pods left on %s (index minus the removed)", len(kept), len(nodes[j].Pods), nodes[j].Node.Name),
				incoming, changed, framework.WithoutPods(c.index, nodes[j].Node, framework.RemovedPods(nodes[j].Pods, kept)))
		}
	}
	nextNode := 8
	for step := range 400 {
		switch r := rng.IntN(20); {
		case r < 9 || len(placed) == 0: // place a pod
			p := randomPod(fmt.Sprintf("p%d", step))
			p.Spec.NodeName = fmt.Sprintf("n%d", rng.IntN(nextNode))
			if rng.IntN(2) == 0 {
				c.assume(p, p.Spec.NodeName)
			} else {
				c.setPod(p)
			}
			placed = append(placed, p)
		case r < 13: // remove one
			i := rng.IntN(len(placed))
			c.removePod(placed[i])
			placed = append(placed[:i], placed[i+1:]...)
		case r < 15: // relabel or start terminating
			i := rng.IntN(len(placed))
			p := *placed[i]
			p.Labels = map[string]string{"app": apps[rng.IntN(len(apps))]}
			if rng.IntN(3) == 0 {
				now := meta.Now()
				p.DeletionTimestamp = &now
			}
			c.setPod(&p)
			placed[i] = &p
		case r < 17: // relabel a node
			n := mkNode(rng.IntN(nextNode))
			c.setNode(n)
		case r < 19: // a new node
			c.setNode(mkNode(nextNode))
			nextNode++
		default: // remove a node (its pods stay, uncounted, until deleted)
			c.removeNode(fmt.Sprintf("n%d", rng.IntN(nextNode)))
		}
		check(step)
	}
}
