package scheduler

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"
)

func TestTopFeasibleMatchesFullSort(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for round := range 50 {
		all := make([]feasibleNode, rng.IntN(60))
		for i := range all {
			all[i] = feasibleNode{node: fmt.Sprintf("n%03d", rng.IntN(1000)), total: int64(rng.IntN(5))}
		}
		sorted := append([]feasibleNode(nil), all...)
		sort.SliceStable(sorted, func(i, j int) bool {
			if sorted[i].total != sorted[j].total {
				return sorted[i].total > sorted[j].total
			}
			return sorted[i].node < sorted[j].node
		})
		got := topFeasible(all, 20)
		want := sorted[:min(20, len(sorted))]
		if len(got) != len(want) {
			t.Fatalf("round %d: %d nodes, want %d", round, len(got), len(want))
		}
		for i := range got {
			if got[i].node != want[i].node || got[i].total != want[i].total {
				t.Fatalf("round %d: position %d is %v, want %v", round, i, got[i], want[i])
			}
		}
	}
}

func TestDecisionRecordOnALargeCluster(t *testing.T) {
	d := &decision{winner: "n007", total: 1000, evaluated: 600, reasons: map[string]int{}, scoreNames: []string{"B", "A"}}
	for i := range 500 {
		d.feasible = append(d.feasible, feasibleNode{node: fmt.Sprintf("n%03d", i), scores: []int64{int64(i % 7), 1}, total: int64(i % 7)})
	}
	for i := 500; i < 600; i++ {
		d.reject(fmt.Sprintf("n%03d", i), "NodeResourcesFit", []string{"Insufficient cpu"})
	}
	got := d.String()
	if !strings.HasPrefix(got, "n006: score 6 (A 1, B 6); n013: score 6") {
		t.Errorf("record starts %q", got[:60])
	}
	if strings.Count(got, "; ") != 21 || !strings.Contains(got, "; and 580 more nodes (500 feasible, 100 rejected); 400 nodes not examined") {
		t.Errorf("record %q", got)
	}
	if strings.Contains(got, "<- chosen") {
		t.Errorf("n007 scored 0 and is not among the 20 shown, yet marked chosen")
	}
}
