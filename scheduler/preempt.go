package scheduler

import (
	"context"
	"fmt"
	"maps"
	"sort"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/selector"
	"github.com/kobune/kobune/client"
	"github.com/kobune/kobune/scheduler/framework"
)

// Preemption (kube-scheduler's DefaultPreemption): when a pod fits nowhere,
// look for the node where deleting pods of lower priority makes room, with
// the fewest and least important victims. The victims are deleted
// gracefully, the pod's status.nominatedNodeName names the node, and the
// pod is tried again when they are gone; meanwhile the room is kept for it
// (pods of lower priority are filtered as if it were already there).

// preemption is a chosen node and the pods to delete there.
type preemption struct {
	node    string
	victims []*core.Pod
	// failure explains why no preemption was possible, in Kubernetes' words.
	failure string
}

func (p *preemption) message() string { return p.failure }

// findPreemption looks for a node and victims; nil when the pod may not
// preempt or is already waiting for earlier victims to go. Call with the
// cache's read lock held.
func (s *Scheduler) findPreemption(ctx context.Context, pod *core.Pod, nodes []*framework.NodeInfo, d *decision) *preemption {
	if pod.Spec.PreemptionPolicy != nil && *pod.Spec.PreemptionPolicy == "Never" {
		return nil
	}
	prio := podPriority(pod)
	if nn := pod.Status.NominatedNodeName; nn != "" {
		if ni, ok := s.cache.nodes[nn]; ok {
			for _, p := range ni.Pods {
				if p.DeletionTimestamp != nil && podPriority(p) < prio {
					return nil // earlier victims are still terminating
				}
			}
		}
	}
	var best *preemption
	var bestKey [3]int64
	noVictims, notHelpful := 0, 0
	// The cluster as the filters see it while victims are tried on one
	// node: one copy for the whole search, that node swapped in and out
	// (a copy per try made a search over 5,000 nodes allocate 2.3 GB).
	scratch := append([]*framework.NodeInfo(nil), nodes...)
	for i, ni := range nodes {
		if d.results == nil {
			notHelpful++ // a PreFilter ruled every node out
			continue
		}
		if r := d.verdict(i); r.plugin >= 0 && r.status.Code == framework.UnschedulableAndUnresolvable {
			notHelpful++
			continue
		}
		var lower, higher []*core.Pod
		for _, p := range ni.Pods {
			if podPriority(p) < prio {
				lower = append(lower, p)
			} else {
				higher = append(higher, p)
			}
		}
		if len(lower) == 0 {
			noVictims++
			continue
		}
		fits := func(placed []*core.Pod) bool { return s.fitsWith(ctx, pod, scratch, i, placed) }
		if !fits(higher) {
			notHelpful++
			continue
		}
		// Reprieve: put back as many as still leave room, the most
		// important first.
		sort.SliceStable(lower, func(a, b int) bool { return podPriority(lower[a]) > podPriority(lower[b]) })
		kept := higher
		var victims []*core.Pod
		for _, p := range lower {
			if fits(append(kept[:len(kept):len(kept)], p)) {
				kept = append(kept, p)
			} else {
				victims = append(victims, p)
			}
		}
		// Fewest and least important: the lowest highest-priority victim,
		// then the fewest victims, then the lowest sum of priorities.
		var top, sum int64 = -1 << 40, 0
		for _, v := range victims {
			top = max(top, int64(podPriority(v)))
			sum += int64(podPriority(v))
		}
		key := [3]int64{top, int64(len(victims)), sum}
		if best == nil || less(key, bestKey) {
			best, bestKey = &preemption{node: ni.Node.Name, victims: victims}, key
		}
	}
	if best == nil {
		return &preemption{failure: preemptionFailure(len(nodes), noVictims, notHelpful)}
	}
	return best
}

func less(a, b [3]int64) bool {
	for i := range a {
		if a[i] != b[i] {
			return a[i] < b[i]
		}
	}
	return false
}

func preemptionFailure(nodes, noVictims, notHelpful int) string {
	reasons := map[string]int{}
	if noVictims > 0 {
		reasons["No preemption victims found for incoming pod"] = noVictims
	}
	if notHelpful > 0 {
		reasons["Preemption is not helpful for scheduling"] = notHelpful
	}
	return "preemption: " + failureMessage(nodes, reasons, "")
}

// fitsWith reports whether pod passes every filter on nodes[i] if only the
// given pods were there. Filters that look across nodes get a fresh
// PreFilter over the changed cluster: nodes[i] is replaced for the call and
// put back before it returns.
func (s *Scheduler) fitsWith(ctx context.Context, pod *core.Pod, nodes []*framework.NodeInfo, i int, placed []*core.Pod) bool {
	orig := nodes[i]
	ni := framework.NewNodeInfo(orig.Node, placed...)
	nodes[i] = ni
	defer func() { nodes[i] = orig }()
	state := framework.NewCycleState(pod, nodes)
	if s.cache.index != nil {
		state.Index = &withoutPods{base: s.cache.index, node: orig.Node, removed: removedPods(orig.Pods, placed)}
	}
	for _, f := range s.profile.Filters {
		if pf, ok := f.(framework.PreFilterPlugin); ok {
			if st := pf.PreFilter(ctx, state, pod); !st.IsSuccess() {
				return false
			}
		}
	}
	for _, f := range s.profile.Filters {
		if st := f.Filter(ctx, state, pod, ni); !st.IsSuccess() {
			return false
		}
	}
	return true
}

// preempt nominates the node for the pod and deletes the victims
// gracefully, with a Preempted event on each.
func (s *Scheduler) preempt(ctx context.Context, pod *core.Pod, p *preemption, msg string) error {
	if err := s.markUnschedulable(ctx, pod, msg, p.node); err != nil {
		return err
	}
	for _, v := range p.victims {
		s.recorder.Event(v, core.EventTypeNormal, "Preempted", fmt.Sprintf("Preempted by pod %s/%s on node %s", pod.Namespace, pod.Name, p.node))
		err := client.For[*core.Pod](s.client).Delete(ctx, v.Namespace, v.Name, client.DeleteOptions{UID: v.UID})
		if err != nil && !client.IsNotFound(err) {
			return fmt.Errorf("preempt %s/%s: %w", v.Namespace, v.Name, err)
		}
		s.Metrics.Preemptions.Inc()
	}
	s.recorder.Event(pod, core.EventTypeNormal, "Nominated", fmt.Sprintf("Preempting %d lower-priority pod(s) on node %s", len(p.victims), p.node))
	return nil
}

// withoutPods is the cluster index as it would be if some pods left one
// node — the question preemption asks for every set of victims it tries
// (Kubernetes' PreFilter extensions RemovePod/AddPod do the same job). It
// answers from the cache's index minus the removed pods' share, so that the
// cross-node filters need not walk every node for every try.
type withoutPods struct {
	base    framework.ClusterIndex
	node    *core.Node
	removed []*core.Pod // non-terminating pods taken off node
}

// removedPods returns the pods of all that are not in kept and not already
// terminating (terminating pods count nowhere).
func removedPods(all, kept []*core.Pod) []*core.Pod {
	in := make(map[*core.Pod]bool, len(kept))
	for _, p := range kept {
		in[p] = true
	}
	var out []*core.Pod
	for _, p := range all {
		if !in[p] && p.DeletionTimestamp == nil {
			out = append(out, p)
		}
	}
	return out
}

// Domains implements framework.ClusterIndex: nodes do not change.
func (w *withoutPods) Domains(key string) map[string]int { return w.base.Domains(key) }

// MatchingPods implements framework.ClusterIndex.
func (w *withoutPods) MatchingPods(namespaces []string, sel selector.Selector, key string) map[string]int {
	counts := w.base.MatchingPods(namespaces, sel, key)
	v, ok := w.node.Labels[key]
	if !ok {
		return counts
	}
	n := 0
	for _, p := range w.removed {
		if containsNS(namespaces, p.Namespace) && sel.Matches(p.Labels) {
			n++
		}
	}
	if n == 0 {
		return counts
	}
	out := maps.Clone(counts)
	bump(out, v, -n)
	return out
}

// AntiAffinityTerms implements framework.ClusterIndex.
func (w *withoutPods) AntiAffinityTerms() []*framework.IndexedTerm {
	terms := w.base.AntiAffinityTerms()
	sub := map[string]map[string]int{} // term signature → topology value → holders removed
	for _, p := range w.removed {
		if a := p.Spec.Affinity; a == nil || a.PodAntiAffinity == nil || len(a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution) == 0 {
			continue
		}
		pa := framework.ParsePodAffinity(p)
		for i := range pa.RequiredAntiAffinity {
			t := &pa.RequiredAntiAffinity[i]
			v, ok := w.node.Labels[t.TopologyKey]
			if !ok {
				continue
			}
			sig := framework.Signature(framework.TermNamespaces(t, p), t.Selector, t.TopologyKey)
			if sub[sig] == nil {
				sub[sig] = map[string]int{}
			}
			sub[sig][v]++
		}
	}
	if len(sub) == 0 {
		return terms
	}
	out := make([]*framework.IndexedTerm, 0, len(terms))
	for _, t := range terms {
		d, ok := sub[framework.Signature(t.Namespaces, t.Selector, t.TopologyKey)]
		if !ok {
			out = append(out, t)
			continue
		}
		c := *t
		c.Counts = maps.Clone(t.Counts)
		for v, n := range d {
			bump(c.Counts, v, -n)
		}
		if len(c.Counts) > 0 { // no holder left: the term is gone
			out = append(out, &c)
		}
	}
	return out
}
