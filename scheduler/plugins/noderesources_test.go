package plugins

import (
	"testing"

	"github.com/kobune/kobune/api/core"
)

func TestNodeResourcesFit(t *testing.T) {
	runFilters(t, NodeResourcesFit{}, []filterCase{
		{name: "fits", pod: pod("1", "1Gi"), node: ni(node("n"))},
		{name: "cpu", pod: pod("1500m", ""), node: ni(node("n"), pod("1", "")), reason: "Insufficient cpu"},
		{name: "exactly full cpu fits", pod: pod("1", ""), node: ni(node("n"), pod("1", ""))},
		{name: "memory", pod: pod("", "3Gi"), node: ni(node("n"), pod("", "2Gi")), reason: "Insufficient memory"},
		{name: "cpu and memory", pod: pod("2", "4Gi"), node: ni(node("n"), pod("1", "1Gi")), reason: "Insufficient cpu, Insufficient memory"},
		{name: "pod count", pod: pod("", ""), node: ni(node("n"), pod("", ""), pod("", ""), pod("", "")), reason: "Too many pods"},
		{name: "init container counts when larger", pod: pod("500m", "", func(p *core.Pod) {
			p.Spec.InitContainers = []core.Container{pod("1500m", "").Spec.Containers[0]}
		}), node: ni(node("n"), pod("1", "")), reason: "Insufficient cpu"},
		// The largest quantities the API accepts: the sum would wrap around int64.
		{name: "huge request on a node full of huge pods", pod: pod("9200T", ""), node: ni(node("n"), pod("9200T", "")), reason: "Insufficient cpu"},
	})
}
