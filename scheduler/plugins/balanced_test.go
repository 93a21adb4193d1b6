package plugins

import (
	"testing"

	"github.com/kobune/kobune/scheduler/framework"
)

func TestBalancedAllocation(t *testing.T) {
	// 2 cpu, 4Gi nodes; the pod asks 500m and 1Gi (a quarter of each).
	runScores(t, BalancedAllocation{}, []scoreCase{
		{name: "even use beats cpu-heavy use", pod: pod("500m", "1Gi"),
			nodes: []*framework.NodeInfo{ni(node("even")), ni(node("cpu"), pod("1500m", ""))}, want: []int64{100, 25}},
		{name: "memory-heavy", pod: pod("", "2Gi"),
			nodes: []*framework.NodeInfo{ni(node("mem"))}, want: []int64{50}},
	})
}
