package framework

import (
	"testing"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/resource"
)

// What the scheduler counts a pod for: its containers and sidecars
// summed, an init container alone beside the sidecars before it, and the
// RuntimeClass's overhead on top (as kube-scheduler counts).
func TestPodRequestsCountSidecarsAndOverhead(t *testing.T) {
	always := core.ContainerRestartPolicyAlways
	req := func(cpu, mem string) core.ResourceRequirements {
		return core.ResourceRequirements{Requests: resource.List{resource.CPU: resource.MustParse(cpu), resource.Memory: resource.MustParse(mem)}}
	}
	p := &core.Pod{Spec: core.PodSpec{
		InitContainers: []core.Container{{Name: "proxy", RestartPolicy: &always, Resources: req("100m", "64Mi")}, {Name: "setup", Resources: req("1", "32Mi")}},
		Containers:     []core.Container{{Name: "app", Resources: req("200m", "128Mi")}},
		Overhead:       resource.List{resource.CPU: resource.MustParse("10m"), resource.Memory: resource.MustParse("1Mi")},
	}}
	// cpu: max(200m + 100m, 1 + 100m) + 10m = 1110m; memory: max(192Mi, 96Mi) + 1Mi.
	if r := PodRequests(p); r.MilliCPU != 1110 || r.Memory != 193<<20 || r.Pods != 1 {
		t.Errorf("PodRequests: %+v, want 1110m cpu and 193Mi", r)
	}
	if r := NonZeroRequests(p); r.MilliCPU != 1110 || r.Memory != 193<<20 {
		t.Errorf("NonZeroRequests: %+v", r)
	}
}
