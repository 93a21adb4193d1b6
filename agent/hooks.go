package agent

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/kobune/kobune/agent/probe"
	"github.com/kobune/kobune/agent/runtime"
	"github.com/kobune/kobune/api/core"
)

// Container lifecycle hooks (the kubelet's lifecycle handlers):
//
//   - postStart runs right after the agent started a container; the pod's
//     status is written only once it returned, so the container is not
//     started, and not ready, before. A failed hook kills the container
//     (Warning FailedPostStartHook) and the restart policy takes over.
//   - preStop runs before a container is stopped — the pod deleted, or a
//     failed liveness probe — inside the grace period: what is left of it
//     after the hook is the time between SIGTERM and SIGKILL (at least
//     2 s, as the kubelet gives). A failed hook is a Warning
//     FailedPreStopHook event; the container is stopped anyway.
//
// Each hook runs at most once per container attempt in one agent process:
// a container the agent did not start itself (one found running after an
// agent restart) gets no postStart, as with the kubelet. Kobune's runtime
// starts a pod's containers together, so one container's postStart does
// not hold back the next container's start as it does in the kubelet.

// minStopGrace is what SIGTERM gets after a preStop hook used the grace
// period up (the kubelet's minimumGracePeriodInSeconds).
const minStopGrace = 2 * time.Second

// postStartTimeout bounds a postStart hook; Kubernetes has no bound, and
// a hook that never returns holds the container in ContainerCreating.
const postStartTimeout = 2 * time.Minute

type hooks struct {
	execer probe.Execer
	// since is when this agent started: containers started earlier were
	// started by an agent before it and have had their postStart.
	since time.Time

	mu   sync.Mutex
	done map[string]map[string]bool // pod uid → "postStart/<container id>", "preStop/<container id>"
}

// first reports whether the hook has not run for this container yet, and
// marks it run.
func (h *hooks) first(podUID, hook, containerID string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.done == nil {
		h.done = map[string]map[string]bool{}
	}
	if h.done[podUID] == nil {
		h.done[podUID] = map[string]bool{}
	}
	k := hook + "/" + containerID
	if h.done[podUID][k] {
		return false
	}
	h.done[podUID][k] = true
	return true
}

// forget drops what is remembered of a pod that stopped.
func (h *hooks) forget(podUID string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.done, podUID)
}

// runHook runs one handler for a container of a pod whose address is ip.
func (h *hooks) run(ctx context.Context, pod *core.Pod, c *core.Container, ip string, lh *core.LifecycleHandler) error {
	if lh.Sleep != nil {
		t := time.NewTimer(time.Duration(lh.Sleep.Seconds) * time.Second)
		defer t.Stop()
		select {
		case <-t.C:
			return nil
		case <-ctx.Done():
			return fmt.Errorf("sleep of %ds cut short: %w", lh.Sleep.Seconds, ctx.Err())
		}
	}
	return probe.Run(ctx, h.execer, probe.Target{PodUID: pod.UID, PodIP: ip, Container: c}, core.ProbeHandler{Exec: lh.Exec, HTTPGet: lh.HTTPGet})
}

// postStart runs the postStart hooks of the containers this agent has
// just started, one after the other; the containers whose hook failed are
// killed (killed reports whether any was).
func (w *podWorkers) postStart(ctx context.Context, pod *core.Pod, st runtime.PodState) (killed bool, err error) {
	for _, cs := range st.Containers {
		spec := containerSpec(pod, cs.Name)
		if !cs.Running || spec == nil || spec.Lifecycle == nil || spec.Lifecycle.PostStart == nil ||
			cs.StartedAt.Before(w.hooks.since) || !w.hooks.first(pod.UID, "postStart", cs.ID) {
			continue
		}
		hctx, cancel := context.WithTimeout(ctx, postStartTimeout)
		err := w.hooks.run(hctx, pod, spec, st.IP, spec.Lifecycle.PostStart)
		cancel()
		if err == nil {
			continue
		}
		msg := fmt.Sprintf("PostStartHook failed: container %s: %v", cs.Name, err)
		w.cfg.Logf("pod %s/%s: %s", pod.Namespace, pod.Name, msg)
		w.event(pod, core.EventTypeWarning, "FailedPostStartHook", msg)
		w.event(pod, core.EventTypeNormal, "Killing", fmt.Sprintf("FailedPostStartHook: stopping container %s", cs.Name))
		if err := w.runtime.KillContainer(ctx, pod.UID, cs.Name, gracePeriod(pod)); err != nil {
			return killed, err
		}
		killed = true
	}
	return killed, nil
}

// preStop runs, in parallel, the preStop hooks of the pod's running
// containers named in only (all when nil) within grace, and returns the
// grace left for SIGTERM.
func (w *podWorkers) preStop(ctx context.Context, pod *core.Pod, only map[string]string, grace time.Duration) time.Duration {
	if grace <= 0 {
		return 0 // a forced deletion: no hooks
	}
	start := time.Now()
	hctx, cancel := context.WithTimeout(ctx, grace)
	defer cancel()
	var wg sync.WaitGroup
	ran := false
	for _, cs := range append(slices.Clone(pod.Status.ContainerStatuses), pod.Status.InitContainerStatuses...) {
		id := cs.ContainerID
		if only != nil {
			id = only[cs.Name]
			if id == "" {
				continue
			}
		} else if cs.State.Running == nil {
			continue
		}
		spec := containerSpec(pod, cs.Name)
		if spec == nil || spec.Lifecycle == nil || spec.Lifecycle.PreStop == nil || !w.hooks.first(pod.UID, "preStop", id) {
			continue
		}
		ran = true
		w.cfg.Logf("pod %s/%s: running the preStop hook of container %s", pod.Namespace, pod.Name, spec.Name)
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := w.hooks.run(hctx, pod, spec, pod.Status.PodIP, spec.Lifecycle.PreStop); err != nil {
				msg := fmt.Sprintf("PreStopHook failed: container %s: %v", spec.Name, err)
				w.cfg.Logf("pod %s/%s: %s", pod.Namespace, pod.Name, msg)
				w.event(pod, core.EventTypeWarning, "FailedPreStopHook", msg)
			}
		}()
	}
	wg.Wait()
	if !ran {
		return grace
	}
	return max(grace-time.Since(start), minStopGrace)
}

// containerSpec is the spec of the pod's container or sidecar name: the
// containers that run beside each other, which have probes and hooks (an
// ordinary init container has neither).
func containerSpec(pod *core.Pod, name string) *core.Container {
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == name {
			return &pod.Spec.Containers[i]
		}
	}
	for i := range pod.Spec.InitContainers {
		if c := &pod.Spec.InitContainers[i]; c.Name == name && c.IsSidecar() {
			return c
		}
	}
	return nil
}
