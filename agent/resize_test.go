package agent_test

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/api/resource"
	"github.com/kobune/kobune/api/scheme"
	"github.com/kobune/kobune/client"
)

// TestInPlaceResize: a resize of a running pod is carried out by the
// runtime (the fake remembers it) and the status shows what the
// containers run with; a resize the node can never hold is Infeasible
// and changes nothing that runs; one that would put a memory limit below
// the usage is in progress with an error until it is asked no more.
func TestInPlaceResize(t *testing.T) {
	s, ctx, rt := fakeNode(t, "10.244.1.0/24")
	stopAgent := startAgent(t, ctx, s, rt)
	defer func() { stopAgent() }()
	pods := client.For[*core.Pod](s.Client)
	requests := resource.List{resource.CPU: resource.MustParse("100m"), resource.Memory: resource.MustParse("64Mi")}
	if _, err := pods.Create(ctx, &core.Pod{ObjectMeta: meta.ObjectMeta{Name: "app", Namespace: "default"},
		Spec: core.PodSpec{NodeName: "node-1", Containers: []core.Container{{Name: "c1", Image: "busybox",
			Resources: core.ResourceRequirements{Requests: requests, Limits: resource.List{resource.Memory: resource.MustParse("128Mi")}}}}}}); err != nil {
		t.Fatal(err)
	}
	p := waitPod(t, ctx, s, "app", 0, func(p *core.Pod, _ bool) bool { return p.Status.Phase == core.PodRunning })
	if cs := p.Status.ContainerStatuses[0]; cs.Resources == nil || cs.Resources.Limits.Memory().String() != "128Mi" || cs.AllocatedResources.Cpu().String() != "100m" {
		t.Fatalf("a started container's resources in its status: %+v %v", cs.Resources, cs.AllocatedResources)
	}
	resize := func(patch string) int64 {
		t.Helper()
		k, _ := scheme.ByResource("pods")
		w, err := s.Client.Resource(k).Patch(ctx, "default", "app", client.StrategicMergePatch, []byte(patch), client.PatchOptions{Subresource: "resize"})
		if err != nil {
			t.Fatalf("resize %s: %v", patch, err)
		}
		var p core.Pod
		if err := json.Unmarshal(w.Object, &p); err != nil {
			t.Fatal(err)
		}
		rv, _ := strconv.ParseInt(p.ResourceVersion, 10, 64)
		return rv
	}
	shows := func(cpu, mem string) func(*core.Pod, bool) bool {
		return func(p *core.Pod, _ bool) bool {
			cs := p.Status.ContainerStatuses[0]
			return p.Status.ObservedGeneration == p.Generation && cs.Resources != nil && cs.Resources.Requests.Cpu().String() == cpu &&
				cs.Resources.Limits.Memory().String() == mem && cs.AllocatedResources.Cpu().String() == cpu
		}
	}
	rv := resize(`{"spec":{"containers":[{"name":"c1","resources":{"requests":{"cpu":"200m"},"limits":{"memory":"256Mi"}}}]}}`)
	p = waitPod(t, ctx, s, "app", rv, shows("200m", "256Mi"))
	if r, ok := rt.Resized(p.UID, "c1"); !ok || r.Requests.Cpu().String() != "200m" || r.Limits.Memory().String() != "256Mi" {
		t.Errorf("the runtime was asked for %+v (%v); want cpu 200m, memory limit 256Mi", r, ok)
	}
	for _, c := range p.Status.Conditions {
		if c.Type == core.PodResizePending || c.Type == core.PodResizeInProgress {
			t.Errorf("a finished resize left %+v", c)
		}
	}
	// Larger than the node (allocatable cpu 3.5): Infeasible, nothing changes.
	rv = resize(`{"spec":{"containers":[{"name":"c1","resources":{"requests":{"cpu":"8"}}}]}}`)
	p = waitPod(t, ctx, s, "app", rv, func(p *core.Pod, _ bool) bool {
		c := condition(p, core.PodResizePending)
		return c != nil && c.Reason == "Infeasible" && strings.Contains(c.Message, "Node didn't have enough capacity: cpu, requested: 8000, capacity: 3500")
	})
	if !shows("200m", "256Mi")(p, true) {
		t.Errorf("an infeasible resize changed the status: %+v", p.Status.ContainerStatuses[0])
	}
	if r, _ := rt.Resized(p.UID, "c1"); r.Requests.Cpu().String() != "200m" {
		t.Errorf("an infeasible resize reached the runtime: %v", r.Requests)
	}
	// The agent restarts: it takes what runs from the status, and the
	// infeasible resize stays that, not carried out.
	stopAgent()
	stopAgent = startAgent(t, ctx, s, rt)
	time.Sleep(2 * time.Second) // the new agent's first syncs of the pod
	p = waitPod(t, ctx, s, "app", 0, func(p *core.Pod, _ bool) bool {
		c := condition(p, core.PodResizePending)
		return c != nil && c.Reason == "Infeasible"
	})
	if !shows("200m", "256Mi")(p, true) {
		t.Errorf("after the agent's restart, the infeasible resize changed the status: %+v", p.Status.ContainerStatuses[0])
	}
	if r, _ := rt.Resized(p.UID, "c1"); r.Requests.Cpu().String() != "200m" {
		t.Errorf("after the agent's restart, the infeasible resize reached the runtime: %v", r.Requests)
	}
	// A memory limit below the usage: in progress, with the error.
	rv = resize(`{"spec":{"containers":[{"name":"c1","resources":{"requests":{"cpu":"200m","memory":"512Ki"},"limits":{"memory":"900Ki"}}}]}}`)
	waitPod(t, ctx, s, "app", rv, func(p *core.Pod, _ bool) bool {
		c := condition(p, core.PodResizeInProgress)
		return c != nil && c.Reason == "Error" && strings.Contains(c.Message, "below current usage") && condition(p, core.PodResizePending) == nil
	})
	// Asked back: done, no condition left.
	rv = resize(`{"spec":{"containers":[{"name":"c1","resources":{"limits":{"memory":"300Mi"}}}]}}`)
	waitPod(t, ctx, s, "app", rv, func(p *core.Pod, _ bool) bool {
		return shows("200m", "300Mi")(p, true) && condition(p, core.PodResizeInProgress) == nil && condition(p, core.PodResizePending) == nil
	})
}

func condition(p *core.Pod, t core.PodConditionType) *core.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == t {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}
