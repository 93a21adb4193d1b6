package scheduler

import (
	"context"
	"sync/atomic"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/scheduler/framework"
)

// One scheduling cycle (kube-scheduler's schedule_one.go): which nodes to
// filter (all of them, in parallel, stopping once enough fit, starting
// where the last cycle stopped), then score the feasible ones and pick the
// winner. The plugins are run by the framework (s.fw); the cycle keeps the
// record of every verdict for the decision.

// pick runs the filters over the snapshot's nodes, scores the feasible
// ones and returns the decision. Called inside cache.read.
func (s *Scheduler) pick(ctx context.Context, pod *core.Pod, snap snapshot) *decision {
	nodes := snap.nodes
	d := &decision{reasons: map[string]int{}, total: len(nodes)}
	if len(nodes) == 0 {
		return d
	}
	state := framework.NewCycleState(pod, nodes)
	state.Index = snap.index
	state.Volumes = s.volumes
	state.Budgets = s.budgets.List
	d.state = state
	if plugin, st := s.fw.RunPreFilterPlugins(ctx, state, pod); !st.IsSuccess() {
		d.preFilterMessage, d.preFilterPlugin = st.Message(), plugin
		return d
	}
	n := len(nodes)
	toFind := s.cfg.Profile.numFeasibleNodesToFind(n)
	start := s.nextStart % n
	results := make([]filterResult, n)
	var found atomic.Int64
	check := func(i int) {
		if found.Load() >= int64(toFind) {
			return // left unevaluated; see below
		}
		ni := nodes[(start+i)%n]
		results[i] = s.filter(ctx, state, pod, ni, snap.nominated[ni.Node.Name])
		if results[i].plugin < 0 {
			found.Add(1)
		}
	}
	s.fw.Parallelize(n, check)

	// Collect in order, so the outcome does not depend on which goroutine
	// ran first: the first toFind feasible nodes from start win a place;
	// nodes skipped by the early stop before that point are checked now.
	feasible := make([]*framework.NodeInfo, 0, toFind)
	last := n - 1
	for i := 0; i < n; i++ {
		ni := nodes[(start+i)%n]
		if !results[i].evaluated {
			results[i] = s.filter(ctx, state, pod, ni, snap.nominated[ni.Node.Name])
		}
		d.evaluated++
		if r := results[i]; r.plugin >= 0 {
			for _, reason := range r.status.Reasons {
				d.reasons[reason]++
			}
			d.reject(ni.Node.Name, s.fw.Filters[r.plugin].Name(), r.status.Reasons)
			continue
		}
		feasible = append(feasible, ni)
		if len(feasible) == toFind {
			last = i
			break
		}
	}
	s.nextStart = (start + last + 1) % n
	if len(feasible) == 0 {
		d.results, d.start = results, start // every node was examined; PostFilter reads the verdicts
		return d
	}
	s.score(ctx, state, pod, feasible, d)
	return d
}

// filterResult is one node's verdict: plugin is the index of the filter
// that rejected it, or -1.
type filterResult struct {
	evaluated bool
	plugin    int
	status    *framework.Status
}

// filter runs the filters on one node, with the pods nominated there (by
// preemption, at a priority not below the pod's) counted as if placed.
func (s *Scheduler) filter(ctx context.Context, state *framework.CycleState, pod *core.Pod, ni *framework.NodeInfo, nominated []*core.Pod) filterResult {
	if len(nominated) > 0 {
		ni = framework.NewNodeInfo(ni.Node, append(append([]*core.Pod(nil), ni.Pods...), nominated...)...)
	}
	plugin, st := s.fw.RunFilterPlugins(ctx, state, pod, ni)
	return filterResult{evaluated: true, plugin: plugin, status: st}
}

// score has the framework score the feasible nodes and picks the winner:
// the highest total, ties to the node whose name sorts first.
func (s *Scheduler) score(ctx context.Context, state *framework.CycleState, pod *core.Pod, feasible []*framework.NodeInfo, d *decision) {
	d.scoreNames = make([]string, len(s.fw.Scores))
	for j, ws := range s.fw.Scores {
		d.scoreNames[j] = ws.Plugin.Name()
	}
	scores := s.fw.RunScorePlugins(ctx, state, pod, feasible)
	d.feasible = make([]feasibleNode, len(feasible))
	best := -1
	for i, ni := range feasible {
		d.feasible[i] = feasibleNode{node: ni.Node.Name, scores: scores[i].Scores, total: scores[i].Total}
		f := &d.feasible[i]
		if best < 0 || f.total > d.feasible[best].total || (f.total == d.feasible[best].total && f.node < d.feasible[best].node) {
			best = i
		}
	}
	d.winner = d.feasible[best].node
}
