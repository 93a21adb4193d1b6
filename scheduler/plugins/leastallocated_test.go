package plugins

import (
	"testing"

	"github.com/kobune/kobune/scheduler/framework"
)

func TestLeastAllocated(t *testing.T) {
	// 2 cpu, 4Gi nodes.
	runScores(t, LeastAllocated{}, []scoreCase{
		{name: "emptier node scores higher", pod: pod("500m", "1Gi"),
			nodes: []*framework.NodeInfo{ni(node("empty")), ni(node("busy"), pod("1", "2Gi"))}, want: []int64{75, 25}},
		// A pod without requests counts as 100m and 200Mi: not free.
		{name: "no requests: the defaults count", pod: pod("", ""),
			nodes: []*framework.NodeInfo{ni(node("empty")), ni(node("half"), pod("1", "2Gi"))}, want: []int64{95, 45}},
		{name: "pods without requests make a node less free", pod: pod("", ""),
			nodes: []*framework.NodeInfo{ni(node("empty")), ni(node("two"), pod("", ""), pod("", ""))}, want: []int64{95, 85}},
		{name: "over-committed counts as full", pod: pod("2", "4Gi"),
			nodes: []*framework.NodeInfo{ni(node("busy"), pod("1", "1Gi"))}, want: []int64{0}},
	})
}
