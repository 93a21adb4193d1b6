package plugins

import (
	"testing"

	"github.com/kobune/kobune/scheduler/framework"
)

func TestMostAllocated(t *testing.T) {
	// 2 cpu, 4Gi nodes.
	runScores(t, MostAllocated{}, []scoreCase{
		{name: "fuller node scores higher (bin packing)", pod: pod("500m", "1Gi"),
			nodes: []*framework.NodeInfo{ni(node("empty")), ni(node("busy"), pod("1", "2Gi"))}, want: []int64{25, 75}},
		{name: "full is 100, never more", pod: pod("2", "4Gi"),
			nodes: []*framework.NodeInfo{ni(node("busy"), pod("1", "1Gi"))}, want: []int64{100}},
	})
}
