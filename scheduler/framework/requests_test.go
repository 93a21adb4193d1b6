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

// A pod resized in place is counted, as kube-scheduler counts it, at the
// larger of its spec's requests and what its node runs it with until the
// node applies the resize; at what the node runs it with when the node
// called the resize Infeasible.
func TestPodRequestsOfAResizedPod(t *testing.T) {
	reqs := func(cpu string) resource.List { return resource.List{resource.CPU: resource.MustParse(cpu)} }
	p := &core.Pod{Spec: core.PodSpec{Containers: []core.Container{{Name: "app", Resources: core.ResourceRequirements{Requests: reqs("200m")}}}}}
	if r := PodRequests(p); r.MilliCPU != 200 {
		t.Fatalf("no status: %dm, want the spec's 200m", r.MilliCPU)
	}
	p.Status.ContainerStatuses = []core.ContainerStatus{{Name: "app", Resources: &core.ResourceRequirements{Requests: reqs("500m")}}}
	if r := PodRequests(p); r.MilliCPU != 500 {
		t.Errorf("shrunk to 200m, still running with 500m: %dm, want 500m", r.MilliCPU)
	}
	p.Spec.Containers[0].Resources.Requests = reqs("4")
	if r := PodRequests(p); r.MilliCPU != 4000 {
		t.Errorf("grown to 4, running with 500m: %dm, want 4000m", r.MilliCPU)
	}
	p.Status.Conditions = []core.PodCondition{{Type: core.PodResizePending, Status: "True", Reason: "Infeasible"}}
	if r := PodRequests(p); r.MilliCPU != 500 {
		t.Errorf("grown to 4, Infeasible: %dm, want the 500m it runs with", r.MilliCPU)
	}
	if r := NonZeroRequests(p); r.MilliCPU != 500 {
		t.Errorf("NonZeroRequests, Infeasible: %dm, want 500m", r.MilliCPU)
	}
}
