package scheduler

import (
	"fmt"
	"sort"
	"strings"

	"github.com/kobune/kobune/scheduler/framework"
)

// decision is the record of one scheduling attempt: for each node examined,
// the filter that rejected it and why, or its score per plugin and the
// total; and the winner. Kubernetes keeps scores to itself; Kobune shows
// them: the bind stores the record in the pod's DecisionAnnotation, and a
// failed attempt writes it as a SchedulingDecision event; `kobectl
// describe pod` shows both.
type decision struct {
	winner           string
	total, evaluated int            // nodes in the cluster; nodes filtered before the search stopped
	reasons          map[string]int // rejection reason → number of nodes
	preFilterPlugin  string         // a PreFilter that ruled out every node
	preFilterMessage string
	rejected         []rejectedNode // the first maxRecordedNodes rejected
	rejectedCount    int
	scoreNames       []string // score plugins, in the order of feasibleNode.scores
	feasible         []feasibleNode
	// results are the filter verdicts when no node fit, results[i] for
	// the node at position (start+i) mod n of the sorted node list.
	results []filterResult
	start   int
	// state is the cycle's state, for the PostFilter plugins.
	state *framework.CycleState
}

// verdicts is the PostFilter plugins' view of the verdicts: the status of
// the node at position i of the sorted node list; nil when a PreFilter
// ruled out every node.
func (d *decision) verdicts() func(i int) *framework.Status {
	if d.results == nil {
		return nil
	}
	return func(i int) *framework.Status { return d.verdict(i).status }
}

// verdict returns the filter verdict of the node at position i of the
// sorted node list, when no node fit.
func (d *decision) verdict(i int) filterResult {
	n := len(d.results)
	return d.results[((i-d.start)%n+n)%n]
}

type rejectedNode struct {
	node, plugin string
	reasons      []string
}

type feasibleNode struct {
	node   string
	scores []int64 // normalized, before weighting
	total  int64   // Σ weight × score
}

// maxRecordedNodes bounds the record on large clusters: the best-scored
// feasible nodes come first, then rejected ones, this many in all.
const maxRecordedNodes = 20

func (d *decision) reject(node, plugin string, reasons []string) {
	d.rejectedCount++
	if len(d.rejected) < maxRecordedNodes {
		d.rejected = append(d.rejected, rejectedNode{node, plugin, reasons})
	}
}

func (d *decision) String() string {
	var b strings.Builder
	if d.preFilterPlugin != "" {
		fmt.Fprintf(&b, "all %d nodes: rejected by %s (%s)", d.total, d.preFilterPlugin, d.preFilterMessage)
		return b.String()
	}
	best := topFeasible(d.feasible, maxRecordedNodes)
	order := make([]int, len(d.scoreNames))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(i, j int) bool { return d.scoreNames[order[i]] < d.scoreNames[order[j]] })
	shown := 0
	sep := func() {
		if shown > 0 {
			b.WriteString("; ")
		}
		shown++
	}
	for _, f := range best {
		sep()
		fmt.Fprintf(&b, "%s: score %d (", f.node, f.total)
		for k, j := range order {
			if k > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "%s %d", d.scoreNames[j], f.scores[j])
		}
		b.WriteString(")")
		if f.node == d.winner {
			b.WriteString(" <- chosen")
		}
	}
	for _, r := range d.rejected {
		if shown == maxRecordedNodes {
			break
		}
		sep()
		fmt.Fprintf(&b, "%s: rejected by %s (%s)", r.node, r.plugin, strings.Join(r.reasons, ", "))
	}
	if more := len(d.feasible) + d.rejectedCount - shown; more > 0 {
		fmt.Fprintf(&b, "; and %d more nodes (%d feasible, %d rejected)", more, len(d.feasible), d.rejectedCount)
	}
	if skipped := d.total - d.evaluated; skipped > 0 {
		fmt.Fprintf(&b, "; %d nodes not examined (enough feasible nodes were found, see percentageOfNodesToScore)", skipped)
	}
	return b.String()
}

// topFeasible returns the k best-scored nodes, best first (ties by name),
// without sorting all of them: a record shows only these.
func topFeasible(all []feasibleNode, k int) []feasibleNode {
	better := func(a, b *feasibleNode) bool {
		if a.total != b.total {
			return a.total > b.total
		}
		return a.node < b.node
	}
	top := make([]feasibleNode, 0, k+1)
	for i := range all {
		if len(top) == k && !better(&all[i], &top[k-1]) {
			continue
		}
		j := len(top)
		top = append(top, all[i])
		for ; j > 0 && better(&all[i], &top[j-1]); j-- {
			top[j] = top[j-1]
		}
		top[j] = all[i]
		if len(top) > k {
			top = top[:k]
		}
	}
	return top
}
