package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/kobune/kobune/agent/runtime"
	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/api/resource"
)

// In-place resize, the node's half (the kubelet's allocation manager and
// its resize actuation). pods/NAME/resize changes a running pod's
// requests and limits in its spec; each sync of the pod compares them
// with what its containers run with (the allocation, podRecords) and
// carries out the difference:
//
//   - it fits the node (the pod's requests, with those of the node's other
//     pods, within allocatable): accepted; a container whose resizePolicy
//     for a changed resource is RestartContainer is restarted with the new
//     limits, the others get them in their cgroups while they run
//     (runtime.Resizer), the pod's cgroup too;
//   - it does not fit now: PodResizePending, reason Deferred, tried again
//     on later syncs (another pod may leave); the pod alone is larger than
//     the node: reason Infeasible;
//   - a memory limit below what a container uses: PodResizeInProgress,
//     reason Error, tried again later (the kernel would kill it).
//
// The status shows what runs: each container's allocatedResources (its
// allocated requests) and resources (requests and limits).

// resizeRetry is how soon a pending or failed resize is tried again.
const resizeRetry = 5 * time.Second

// resizeOutcome is what a sync did about a pod's resize: the conditions
// to show (none when the pod runs what its spec asks), and the
// allocation its status reports.
type resizeOutcome struct {
	pending, inProgress *condition
	allocated           map[string]core.ResourceRequirements
}

// resize carries out a resize of a running pod (state: what the runtime
// runs) and returns what the status shows of it, and the pod's state anew
// when a container was restarted for it.
func (w *podWorkers) resize(ctx context.Context, pod *core.Pod, state runtime.PodState) (resizeOutcome, runtime.PodState, error) {
	desired := specResources(pod)
	allocated := w.records.allocated(pod.UID)
	if w.resizer == nil {
		return resizeOutcome{allocated: desired}, state, nil
	}
	running := map[string]bool{}
	for _, c := range state.Containers {
		if c.Running && !c.Ephemeral {
			running[c.Name] = true
		}
	}
	if allocated == nil {
		// The agent restarted: what its containers run with is what the
		// status said they do (the kubelet keeps a checkpoint of its
		// allocation), and a resize of the spec goes through the checks
		// below like any other.
		if allocated = allocatedFromStatus(pod, running, desired); allocated != nil {
			w.records.allocate(pod.UID, allocated)
		}
	}
	if allocated == nil {
		// Started just now: what runs is made to be the spec's (for a
		// container just made it changes nothing).
		var names []string
		for name := range running {
			names = append(names, name)
		}
		slices.Sort(names)
		if err := w.resizer.ResizeContainers(ctx, pod, names); err != nil && !errors.Is(err, runtime.ErrMemoryInUse) {
			return resizeOutcome{}, state, err
		}
		w.records.allocate(pod.UID, desired)
		return resizeOutcome{allocated: desired}, state, nil
	}
	var changed []string
	for name, want := range desired {
		if !sameResources(allocated[name], want) {
			changed = append(changed, name)
		}
	}
	slices.Sort(changed)
	if len(changed) == 0 {
		return resizeOutcome{allocated: allocated}, state, nil
	}
	if reason, msg := w.resizeFits(pod); reason != "" {
		w.loop.Queue.AddAfter(meta.Key(pod), resizeRetry)
		if prev := findCondition(pod.Status.Conditions, core.PodResizePending); prev == nil || prev.Reason != reason {
			typ := "ResizeDeferred"
			if reason == "Infeasible" {
				typ = "ResizeInfeasible"
			}
			w.event(pod, core.EventTypeWarning, typ, fmt.Sprintf("Pod resize %s: %s", reason, resizeSummary(pod, msg)))
		}
		return resizeOutcome{pending: &condition{ok: true, reason: reason, message: msg}, allocated: allocated}, state, nil
	}
	var restart, inPlace []string
	for _, name := range changed {
		c := pod.Spec.Container(name)
		old, now := allocated[name], desired[name]
		cpuChanged := !sameAmounts(resource.CPU, old, now)
		memChanged := !sameAmounts(resource.Memory, old, now)
		switch {
		case !running[name]:
			// Not running (exited, waiting to restart): its next start
			// has the new resources.
		case cpuChanged && restartsFor(c, resource.CPU), memChanged && restartsFor(c, resource.Memory):
			restart = append(restart, name)
		default:
			inPlace = append(inPlace, name)
		}
	}
	if err := w.resizer.ResizeContainers(ctx, pod, inPlace); err != nil {
		w.loop.Queue.AddAfter(meta.Key(pod), resizeRetry)
		if !errors.Is(err, runtime.ErrMemoryInUse) {
			w.cfg.Logf("resize pod %s: %v", meta.Key(pod), err)
		}
		return resizeOutcome{inProgress: &condition{ok: true, reason: "Error", message: err.Error()}, allocated: allocated}, state, nil
	}
	for _, name := range restart {
		// As the kubelet: the container is stopped and started again
		// with the new resources, its restart count raised.
		if err := w.runtime.KillContainer(ctx, pod.UID, name, gracePeriod(pod)); err != nil {
			return resizeOutcome{}, state, fmt.Errorf("restart container %s for its resize: %w", name, err)
		}
	}
	if len(restart) > 0 {
		var err error
		if state, err = w.runtime.RunPod(ctx, pod, restart); err != nil {
			return resizeOutcome{}, state, err
		}
	}
	w.records.allocate(pod.UID, desired)
	w.event(pod, core.EventTypeNormal, "ResizeCompleted", "Pod resize completed: "+resizeSummary(pod, ""))
	return resizeOutcome{allocated: desired}, state, nil
}

// resizeFits is the kubelet's admission of a resize: "" when the pod's
// new requests fit the node's allocatable beside its other pods' requests;
// Infeasible when the pod alone does not fit; Deferred otherwise.
func (w *podWorkers) resizeFits(pod *core.Pod) (reason, message string) {
	allocatable := w.allocatable()
	want, _ := core.PodRequestsAndLimits(&pod.Spec)
	used := resource.List{}
	for _, p := range w.pods.List() {
		if p.UID == pod.UID || p.Spec.NodeName != w.cfg.Node.Name || finished(p) {
			continue
		}
		requests, _ := core.PodRequestsAndLimits(&p.Spec)
		for name, q := range requests {
			used[name] = used[name].Add(q)
		}
	}
	for _, name := range []resource.Name{resource.CPU, resource.Memory} {
		capacity, ok := allocatable[name]
		if !ok {
			continue
		}
		req, has := want[name]
		if !has {
			continue
		}
		value := func(q resource.Quantity) int64 {
			if name == resource.CPU {
				return q.MilliValue()
			}
			return q.Value()
		}
		if value(req) > value(capacity) {
			return "Infeasible", fmt.Sprintf("Node didn't have enough capacity: %s, requested: %d, capacity: %d", name, value(req), value(capacity))
		}
		if u := used[name]; value(req)+value(u) > value(capacity) {
			return "Deferred", fmt.Sprintf("Node didn't have enough resource: %s, requested: %d, used: %d, capacity: %d", name, value(req), value(u), value(capacity))
		}
	}
	return "", ""
}

// allocatedFromStatus is the allocation an agent before this one
// reported: for each running container what the pod's status says it
// runs with, for the others the spec's (their next start takes it); nil
// when the status does not say it for each running container.
func allocatedFromStatus(pod *core.Pod, running map[string]bool, desired map[string]core.ResourceRequirements) map[string]core.ResourceRequirements {
	if len(running) == 0 {
		return nil
	}
	out := make(map[string]core.ResourceRequirements, len(desired))
	for name, want := range desired {
		out[name] = want
	}
	found := 0
	for _, list := range [][]core.ContainerStatus{pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses} {
		for _, cs := range list {
			if running[cs.Name] && cs.Resources != nil {
				out[cs.Name] = core.ResourceRequirements{Requests: cs.Resources.Requests, Limits: cs.Resources.Limits}
				found++
			}
		}
	}
	if found != len(running) {
		return nil
	}
	return out
}

// showResize puts what runs and the resize conditions into a status.
func showResize(s *core.PodStatus, old []core.PodCondition, r resizeOutcome) {
	for _, list := range []*[]core.ContainerStatus{&s.InitContainerStatuses, &s.ContainerStatuses} {
		for i := range *list {
			cs := &(*list)[i]
			alloc, ok := r.allocated[cs.Name]
			if !ok || cs.ContainerID == "" {
				continue
			}
			cs.AllocatedResources = alloc.Requests
			cs.Resources = &core.ResourceRequirements{Requests: alloc.Requests, Limits: alloc.Limits}
		}
	}
	now := meta.Now()
	for _, c := range []struct {
		t    core.PodConditionType
		cond *condition
	}{{core.PodResizePending, r.pending}, {core.PodResizeInProgress, r.inProgress}} {
		if c.cond == nil {
			continue
		}
		pc := core.PodCondition{Type: c.t, Status: meta.ConditionTrue, Reason: c.cond.reason, Message: c.cond.message, LastProbeTime: now, LastTransitionTime: now}
		if prev := findCondition(old, c.t); prev != nil && prev.Reason == pc.Reason && prev.Message == pc.Message {
			pc.LastProbeTime, pc.LastTransitionTime = prev.LastProbeTime, prev.LastTransitionTime
		}
		s.Conditions = append(s.Conditions, pc)
	}
}

func findCondition(conds []core.PodCondition, t core.PodConditionType) *core.PodCondition {
	for i := range conds {
		if conds[i].Type == t {
			return &conds[i]
		}
	}
	return nil
}

// restartsFor says whether c's resizePolicy restarts it when name changes
// (NotRequired when it names none).
func restartsFor(c *core.Container, name resource.Name) bool {
	for _, p := range c.ResizePolicy {
		if p.ResourceName == name {
			return p.RestartPolicy == core.ResizeRestartContainer
		}
	}
	return false
}

// specResources are the resources the pod's spec asks for each of its
// init containers and containers.
func specResources(pod *core.Pod) map[string]core.ResourceRequirements {
	out := map[string]core.ResourceRequirements{}
	for _, list := range [2][]core.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for _, c := range list {
			out[c.Name] = c.Resources
		}
	}
	return out
}

// sameResources compares requests and limits by amount (1000m is 1).
func sameResources(a, b core.ResourceRequirements) bool {
	names := map[resource.Name]bool{}
	for _, l := range []resource.List{a.Requests, a.Limits, b.Requests, b.Limits} {
		for n := range l {
			names[n] = true
		}
	}
	for n := range names {
		if !sameAmounts(n, a, b) {
			return false
		}
	}
	return true
}

// sameAmounts says whether a and b ask the same request and limit of name.
func sameAmounts(name resource.Name, a, b core.ResourceRequirements) bool {
	same := func(x, y resource.List) bool {
		qx, okx := x[name]
		qy, oky := y[name]
		return okx == oky && (!okx || qx.Cmp(qy) == 0)
	}
	return same(a.Requests, b.Requests) && same(a.Limits, b.Limits)
}

// resizeSummary is the kubelet's summary of a resize in its events: the
// containers' resources as the spec asks, the generation, the error.
func resizeSummary(pod *core.Pod, errMsg string) string {
	type alloc struct {
		Name      string                    `json:"name"`
		Resources core.ResourceRequirements `json:"resources"`
	}
	var summary struct {
		InitContainers []alloc `json:"initContainers,omitempty"`
		Containers     []alloc `json:"containers,omitempty"`
		Generation     int64   `json:"generation,omitempty"`
		Error          string  `json:"error,omitempty"`
	}
	for _, c := range pod.Spec.InitContainers {
		summary.InitContainers = append(summary.InitContainers, alloc{c.Name, c.Resources})
	}
	for _, c := range pod.Spec.Containers {
		summary.Containers = append(summary.Containers, alloc{c.Name, c.Resources})
	}
	summary.Generation, summary.Error = pod.Generation, errMsg
	b, _ := json.Marshal(summary)
	return string(b)
}
