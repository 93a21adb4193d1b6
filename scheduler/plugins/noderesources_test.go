package plugins

import (
	"testing"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/resource"
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
		// Extended resources: a node without them has none; what its pods
		// hold is taken; an init container's larger request counts.
		{name: "extended resource on a node without it", pod: pod("", "", dongles(1)), node: ni(node("n")), reason: "Insufficient example.com/dongle"},
		{name: "extended resource fits", pod: pod("", "", dongles(2)), node: ni(node("n", advertises(3)), pod("", "", dongles(1)))},
		{name: "extended resource taken", pod: pod("", "", dongles(2)), node: ni(node("n", advertises(3)), pod("", "", dongles(2))), reason: "Insufficient example.com/dongle"},
		{name: "extended resource of an init container", pod: pod("", "", dongles(1), func(p *core.Pod) {
			p.Spec.InitContainers = []core.Container{pod("", "", dongles(3)).Spec.Containers[0]}
		}), node: ni(node("n", advertises(2))), reason: "Insufficient example.com/dongle"},
		// The largest quantities the API accepts: the sum would wrap around int64.
		{name: "huge request on a node full of huge pods", pod: pod("9200T", ""), node: ni(node("n"), pod("9200T", "")), reason: "Insufficient cpu"},
	})
}

const dongle = resource.Name("example.com/dongle")

func dongles(n int64) func(*core.Pod) {
	return func(p *core.Pod) {
		p.Spec.Containers[0].Resources.Requests[dongle] = resource.NewQuantity(n, resource.DecimalSI)
	}
}

func advertises(n int64) func(*core.Node) {
	return func(nd *core.Node) { nd.Status.Allocatable[dongle] = resource.NewQuantity(n, resource.DecimalSI) }
}
