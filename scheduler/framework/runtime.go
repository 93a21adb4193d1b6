package framework

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/kobune/kobune/api/core"
)

// WeightedScore is a score plugin and its weight in the total.
type WeightedScore struct {
	Plugin ScorePlugin
	Weight int64
}

// PostFilterResult is what a PostFilter plugin found: the node to nominate
// for the pod and the pods to delete there (preemption's victims).
type PostFilterResult struct {
	NominatedNodeName string
	Victims           []*core.Pod
}

// PostFilterPlugin runs when no node passed the filters, to make one pass
// (kube-scheduler's PostFilter; DefaultPreemption is the one in-tree).
// verdict(i) is the filter verdict of state.AllNodes[i]; verdict is nil
// when a PreFilter ruled out every node. It returns a result, or a status
// saying why it found none (Skip: it does not apply to this pod, nothing
// to report).
type PostFilterPlugin interface {
	Plugin
	PostFilter(ctx context.Context, state *CycleState, pod *core.Pod, verdict func(i int) *Status) (*PostFilterResult, *Status)
}

// Handle is what plugins may call of the framework that runs them (a
// small part of kube-scheduler's framework.Handle): preemption asks the
// filters whether a pod would fit a changed node.
type Handle interface {
	RunPreFilterPlugins(ctx context.Context, state *CycleState, pod *core.Pod) (plugin string, st *Status)
	RunFilterPlugins(ctx context.Context, state *CycleState, pod *core.Pod, node *NodeInfo) (plugin int, st *Status)
}

// Framework runs one profile's plugins at each extension point, in order
// (kube-scheduler's frameworkImpl). The scheduler decides which nodes to
// filter and what to do with the outcome; the framework only runs plugins.
type Framework struct {
	Filters     []FilterPlugin
	Scores      []WeightedScore
	PostFilters []PostFilterPlugin
	// Parallelism is how many goroutines Parallelize uses (at least 1).
	Parallelism int
}

var _ Handle = (*Framework)(nil)

// RunPreFilterPlugins runs the PreFilter half of every filter plugin that
// has one; the first that fails ends the attempt, and is named.
func (f *Framework) RunPreFilterPlugins(ctx context.Context, state *CycleState, pod *core.Pod) (string, *Status) {
	for _, p := range f.Filters {
		if pf, ok := p.(PreFilterPlugin); ok {
			if st := pf.PreFilter(ctx, state, pod); !st.IsSuccess() {
				return p.Name(), st
			}
		}
	}
	return "", nil
}

// RunFilterPlugins runs the filters on one node until one rejects it, and
// returns that filter's index in Filters and its status (-1 and nil: the
// node fits). Safe to call for many nodes at once.
func (f *Framework) RunFilterPlugins(ctx context.Context, state *CycleState, pod *core.Pod, node *NodeInfo) (int, *Status) {
	for j, p := range f.Filters {
		if st := p.Filter(ctx, state, pod, node); !st.IsSuccess() {
			return j, st
		}
	}
	return -1, nil
}

// NodeScores are one node's normalized scores, one per score plugin in
// Framework.Scores order, and their weighted total.
type NodeScores struct {
	Scores []int64
	Total  int64
}

// RunScorePlugins runs PreScore, Score and Normalize of every score plugin
// over the feasible nodes and weights the results. A plugin whose PreScore
// fails scores 0 everywhere.
func (f *Framework) RunScorePlugins(ctx context.Context, state *CycleState, pod *core.Pod, feasible []*NodeInfo) []NodeScores {
	out := make([]NodeScores, len(feasible))
	all := make([]int64, len(feasible)*len(f.Scores))
	for i := range feasible {
		out[i].Scores = all[i*len(f.Scores) : (i+1)*len(f.Scores)]
	}
	raw := make([]int64, len(feasible))
	for j, ws := range f.Scores {
		if ps, ok := ws.Plugin.(PreScorePlugin); ok {
			if st := ps.PreScore(ctx, state, pod, feasible); !st.IsSuccess() {
				continue
			}
		}
		for i, ni := range feasible {
			raw[i], _ = ws.Plugin.Score(ctx, state, pod, ni)
		}
		if norm, ok := ws.Plugin.(ScoreNormalizer); ok {
			norm.Normalize(raw)
		}
		for i := range feasible {
			out[i].Scores[j] = raw[i]
			out[i].Total += ws.Weight * raw[i]
		}
	}
	return out
}

// RunPostFilterPlugins runs the PostFilter plugins in order until one
// finds a result or reports why it found none; (nil, nil) when none
// applied.
func (f *Framework) RunPostFilterPlugins(ctx context.Context, state *CycleState, pod *core.Pod, verdict func(i int) *Status) (*PostFilterResult, *Status) {
	for _, p := range f.PostFilters {
		r, st := p.PostFilter(ctx, state, pod, verdict)
		if st.IsSuccess() && r != nil {
			return r, nil
		}
		if st != nil && st.Code != Skip {
			return nil, st
		}
	}
	return nil, nil
}

// Parallelize calls fn(0..n-1) from Parallelism goroutines, in chunks.
func (f *Framework) Parallelize(n int, fn func(i int)) {
	const chunk = 16
	workers := min(f.Parallelism, (n+chunk-1)/chunk)
	if workers <= 1 {
		for i := range n {
			fn(i)
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				lo := int(next.Add(chunk)) - chunk
				if lo >= n {
					return
				}
				for i := lo; i < min(lo+chunk, n); i++ {
					fn(i)
				}
			}
		}()
	}
	wg.Wait()
}
