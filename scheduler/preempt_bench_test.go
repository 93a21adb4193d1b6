package scheduler

import (
	"context"
	"fmt"
	"testing"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/api/resource"
	"github.com/kobune/kobune/scheduler/framework"
)

// BenchmarkFindPreemption: a full cluster (nodes × 10 low-priority pods that
// use all the CPU) and a high-priority pod that fits nowhere without
// preemption; one search for a node and victims over every node.
func BenchmarkFindPreemption(b *testing.B) {
	for _, nodes := range []int{500, 5000} {
		b.Run(fmt.Sprintf("nodes=%d", nodes), func(b *testing.B) {
			s := &Scheduler{cache: newCache(), fw: DefaultProfile().framework(1)}
			low, high := int32(0), int32(1000)
			for i := range nodes {
				n := &core.Node{ObjectMeta: meta.ObjectMeta{Name: fmt.Sprintf("n%d", i), Labels: map[string]string{"kubernetes.io/hostname": fmt.Sprintf("n%d", i)}}}
				n.Status.Allocatable = resource.List{resource.CPU: resource.MustParse("1"), resource.Memory: resource.MustParse("10Gi"), resource.Pods: resource.MustParse("110")}
				n.Status.Conditions = []core.NodeCondition{{Type: core.NodeReady, Status: meta.ConditionTrue}}
				s.cache.setNode(n)
				for j := range 10 {
					p := &core.Pod{ObjectMeta: meta.ObjectMeta{Name: fmt.Sprintf("p%d-%d", i, j), Namespace: "default", UID: fmt.Sprintf("u%d-%d", i, j)},
						Spec: core.PodSpec{NodeName: n.Name, Priority: &low, Containers: []core.Container{{Name: "c", Image: "i",
							Resources: core.ResourceRequirements{Requests: resource.List{resource.CPU: resource.MustParse("100m")}}}}}}
					s.cache.setPod(p)
				}
			}
			pod := &core.Pod{ObjectMeta: meta.ObjectMeta{Name: "important", Namespace: "default", UID: "imp"},
				Spec: core.PodSpec{Priority: &high, Containers: []core.Container{{Name: "c", Image: "i",
					Resources: core.ResourceRequirements{Requests: resource.List{resource.CPU: resource.MustParse("250m")}}}}}}
			s.cache.read(pod, func(snap snapshot) {
				state := framework.NewCycleState(pod, snap.nodes)
				state.Index = snap.index
				insufficient := framework.NewStatus(framework.Unschedulable, "Insufficient cpu")
				b.ReportAllocs()
				for b.Loop() {
					r, st := s.fw.RunPostFilterPlugins(context.Background(), state, pod, func(int) *framework.Status { return insufficient })
					if r == nil || len(r.Victims) != 3 {
						b.Fatalf("preemption %+v %v", r, st)
					}
				}
			})
		})
	}
}
