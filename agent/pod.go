package agent

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/kobune/kobune/agent/probe"
	"github.com/kobune/kobune/agent/runtime"
	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/node"
	"github.com/kobune/kobune/client"
)

// syncPod brings one pod to its desired state: gone pods are stopped,
// pods being deleted are stopped and then confirmed deleted, others run
// and get their status reported. It is level-based: it looks at the cache
// and the runtime, never at the event that woke it.
func (w *podWorkers) syncPod(ctx context.Context, key string) error {
	pod, ok := w.pods.GetByKey(key)
	runningUID := w.records.runningUID(key)
	if runningUID != "" && (!ok || pod.UID != runningUID) {
		// The pod is gone from the API, or replaced by a new one of the same name.
		if err := w.stop(ctx, key, runningUID, 0); err != nil {
			return err
		}
	}
	if !ok {
		return nil
	}
	if pod.DeletionTimestamp != nil {
		return w.terminate(ctx, key, pod)
	}
	if finished(pod) {
		if w.records.collecting(pod.UID) {
			// Disk pressure collects its dead containers (collectDeadContainers).
			if err := w.stop(ctx, key, pod.UID, 0); err != nil {
				return err
			}
			w.cfg.Logf("removed the dead containers of finished pod %s (their writable layers, logs and volumes)", key)
			return nil
		}
		return w.release(ctx, key, pod)
	}
	if eviction, ok := w.records.eviction(pod.UID); ok {
		return w.evict(ctx, key, pod, eviction)
	}
	if d := pod.Spec.ActiveDeadlineSeconds; d != nil && pod.Status.StartTime != nil {
		// The kubelet's active deadline: counted from the pod's start on
		// the node; the field may be shortened while the pod runs.
		left := time.Duration(*d)*time.Second - time.Since(pod.Status.StartTime.Time)
		if left <= 0 {
			msg := "Pod was active on the node longer than the specified deadline"
			w.event(pod, core.EventTypeNormal, "DeadlineExceeded", msg)
			return w.kill(ctx, key, pod, gracePeriod(pod), "DeadlineExceeded", msg)
		}
		w.loop.Queue.AddAfter(key, left)
	}
	if forbidden := unsafeSysctl(pod); forbidden != "" && w.records.runningUID(key) != pod.UID {
		// The kubelet's sysctl admission: a pod asking for a sysctl that
		// is not safe never starts here.
		msg := fmt.Sprintf("Pod forbidden sysctl: %q not allowlisted", forbidden)
		w.event(pod, core.EventTypeWarning, "SysctlForbidden", msg)
		status := pod.Status
		status.Phase, status.Reason, status.Message, status.ObservedGeneration = core.PodFailed, "SysctlForbidden", msg, pod.Generation
		return w.writeStatus(ctx, pod, status)
	}
	if w.records.runningUID(key) != pod.UID {
		if r := w.admit(pod); r != nil {
			return w.reject(ctx, pod, r)
		}
	}
	if err := w.runtimeHandler(ctx, pod); err != nil {
		// The kubelet's answer to a handler its runtime lacks: no sandbox.
		w.event(pod, core.EventTypeWarning, "FailedCreatePodSandBox", "Failed to create pod sandbox: "+err.Error())
		return errors.Join(err, w.writeStatus(ctx, pod, waitingStatus(pod, "", "", "")))
	}
	if err := w.setupVolumes(ctx, pod); err != nil {
		w.event(pod, core.EventTypeWarning, "FailedMount", err.Error())
		return errors.Join(err, w.writeStatus(ctx, pod, waitingStatus(pod, "", "", "")))
	}
	state, err := w.runtime.RunPod(ctx, pod, nil)
	if err != nil {
		return w.startFailed(ctx, key, pod, err)
	}
	if pod.Status.PodIP != "" && state.IP != "" && state.IP != pod.Status.PodIP {
		// The sandbox had to be made again: the pod's address changed.
		w.event(pod, core.EventTypeNormal, "SandboxChanged", fmt.Sprintf("Pod sandbox changed, it will be killed and re-created (IP %s, was %s).", state.IP, pod.Status.PodIP))
	}
	w.records.setRunning(key, pod.UID)
	restartNow, waiting, retryIn := w.restarts(pod, state, time.Now())
	if len(restartNow) > 0 {
		if state, err = w.runtime.RunPod(ctx, pod, restartNow); err != nil {
			return err
		}
	}
	killed, err := w.postStart(ctx, pod, state)
	if err != nil {
		return err
	}
	if killed { // the status shows the container that failed its hook as exited
		if state, err = w.runtime.RunPod(ctx, pod, nil); err != nil {
			return err
		}
	}
	resized, state, err := w.resize(ctx, pod, state)
	if err != nil {
		return err
	}
	if retryIn > 0 {
		w.loop.Queue.AddAfter(key, retryIn) // look again when the back-off ends
	}
	for name := range waiting {
		w.event(pod, core.EventTypeWarning, "BackOff", fmt.Sprintf("Back-off restarting failed container %s in pod %s_%s(%s)", name, pod.Name, pod.Namespace, pod.UID))
	}
	if err := w.syncProbes(ctx, key, pod, state); err != nil {
		return err
	}
	status := podStatus(pod, state, w.nodeIP, waiting, w.probeResult)
	if status.Phase == core.PodSucceeded || status.Phase == core.PodFailed {
		// The containers are done: the sidecars go too (the kubelet
		// stops them once no container is left), and the status shows
		// them stopped.
		if stopped := w.stopSidecars(ctx, pod, state); stopped {
			if state, err = w.runtime.RunPod(ctx, pod, nil); err != nil {
				return err
			}
			status = podStatus(pod, state, w.nodeIP, nil, w.probeResult)
		}
	}
	showResize(&status, pod.Status.Conditions, resized)
	if m := w.cfg.Metrics; m != nil {
		w.mu.Lock()
		m.observeRunning(pod, status)
		w.mu.Unlock()
		m.RunningPods.Set(float64(w.records.runningCount()))
	}
	return w.writeStatus(ctx, pod, status)
}

// unsafeSysctl is the first of the pod's sysctls that is not among the
// kubelet's safe ones, or "".
func unsafeSysctl(pod *core.Pod) string {
	if pod.Spec.SecurityContext == nil {
		return ""
	}
	for _, s := range pod.Spec.SecurityContext.Sysctls {
		if !slices.Contains(core.SafeSysctls, core.NormalizeSysctl(s.Name)) {
			return s.Name
		}
	}
	return ""
}

// runtimeHandler checks the handler of the pod's RuntimeClass: Kobune's
// agents run pods with containerd's runc only (node.DefaultHandler).
func (w *podWorkers) runtimeHandler(ctx context.Context, pod *core.Pod) error {
	if pod.Spec.RuntimeClassName == nil {
		return nil
	}
	name := *pod.Spec.RuntimeClassName
	rc, err := client.For[*node.RuntimeClass](w.client).Get(ctx, "", name)
	if err != nil {
		return fmt.Errorf("RuntimeClass %q: %s", name, client.Message(err))
	}
	if rc.Handler != node.DefaultHandler {
		return fmt.Errorf("no runtime for %q is configured: this node runs pods with %q only", rc.Handler, node.DefaultHandler)
	}
	return nil
}

// finished says whether a pod has run to completion (Succeeded or Failed):
// it never starts again.
func finished(pod *core.Pod) bool {
	return pod.Status.Phase == core.PodSucceeded || pod.Status.Phase == core.PodFailed
}

// release gives up what a finished pod no longer needs, as the kubelet
// stops a terminated pod's sandbox: its probes and its network (the
// address goes back to the node's range). Its exited containers — their
// writable layers and the logs `logs` reads — stay until the pod is
// deleted, or until disk pressure collects them (collectDeadContainers).
func (w *podWorkers) release(ctx context.Context, key string, pod *core.Pod) error {
	if !w.records.releaseDue(key, pod.UID) || w.releaser == nil {
		return nil
	}
	if w.probes != nil {
		w.probes.Forget(pod.UID)
	}
	if err := w.releaser.ReleaseSandbox(ctx, pod.UID); err != nil {
		return fmt.Errorf("release the sandbox of finished pod %s: %w", key, err)
	}
	w.records.markReleased(pod.UID)
	return nil
}

// writeStatus writes a pod's status if it changed.
func (w *podWorkers) writeStatus(ctx context.Context, pod *core.Pod, status core.PodStatus) error {
	if statusEqual(status, pod.Status) {
		return nil
	}
	updated := *pod // the cached pod is shared: write a copy
	updated.Status = status
	_, err := client.For[*core.Pod](w.client).UpdateStatus(ctx, &updated)
	if client.IsNotFound(err) {
		return nil // deleted meanwhile; the delete event brings us back
	}
	return err
}

// terminate stops a pod being deleted, within its grace period, then tells
// the API server its containers are gone (a delete with grace 0 and the
// pod's uid as precondition, as the kubelet does).
func (w *podWorkers) terminate(ctx context.Context, key string, pod *core.Pod) error {
	grace := time.Duration(0)
	if g := pod.DeletionGracePeriodSeconds; g != nil {
		grace = time.Duration(*g) * time.Second
	}
	if w.records.runningUID(key) == pod.UID {
		for _, c := range pod.Spec.Containers {
			w.event(pod, core.EventTypeNormal, "Killing", "Stopping container "+c.Name)
		}
		if len(pod.Spec.Sidecars()) > 0 && grace > 0 {
			grace = w.stopContainersFirst(ctx, pod, grace)
		}
		// preStop first, while the endpoint is already out of every
		// node's Service rules (the EndpointSlice controller marked it
		// terminating when the deletion began); SIGTERM gets what is left.
		grace = w.preStop(ctx, pod, nil, grace)
	}
	if err := w.stop(ctx, key, pod.UID, grace); err != nil {
		return err
	}
	zero := int64(0)
	err := client.For[*core.Pod](w.client).Delete(ctx, pod.Namespace, pod.Name, client.DeleteOptions{GracePeriodSeconds: &zero, UID: pod.UID})
	if client.IsNotFound(err) {
		return nil
	}
	return err
}

// stopContainersFirst stops a deleted pod's containers before its
// sidecars, as the kubelet does (a proxy or log shipper outlives what it
// serves): their preStop hooks, then SIGTERM, SIGKILL at the end of
// grace. It returns what is left of grace for the sidecars.
func (w *podWorkers) stopContainersFirst(ctx context.Context, pod *core.Pod, grace time.Duration) time.Duration {
	start := time.Now()
	only := map[string]string{}
	for _, cs := range pod.Status.ContainerStatuses {
		if cs.State.Running != nil {
			only[cs.Name] = cs.ContainerID
		}
	}
	w.killAll(ctx, pod, only, w.preStop(ctx, pod, only, grace))
	return max(grace-time.Since(start), minStopGrace)
}

// stopSidecars stops the running sidecars of a pod whose containers have
// all finished (their preStop hooks, then SIGTERM within the pod's grace
// period), and reports whether there were any.
func (w *podWorkers) stopSidecars(ctx context.Context, pod *core.Pod, st runtime.PodState) bool {
	sidecars, only := pod.Spec.Sidecars(), map[string]string{}
	for _, c := range st.Containers {
		if c.Running && sidecars[c.Name] {
			only[c.Name] = c.ID
		}
	}
	if len(only) == 0 {
		return false
	}
	for name := range only {
		w.event(pod, core.EventTypeNormal, "Killing", "Stopping container "+name)
	}
	w.killAll(ctx, pod, only, w.preStop(ctx, pod, only, gracePeriod(pod)))
	return true
}

// killAll stops the named containers together, each within grace.
func (w *podWorkers) killAll(ctx context.Context, pod *core.Pod, containers map[string]string, grace time.Duration) {
	var wg sync.WaitGroup
	for name := range containers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := w.runtime.KillContainer(ctx, pod.UID, name, grace); err != nil {
				w.cfg.Logf("pod %s/%s: stop container %s: %v", pod.Namespace, pod.Name, name, err)
			}
		}()
	}
	wg.Wait()
}

// syncProbes keeps a probe worker for each probe of each running container
// and kills the containers whose liveness or startup probe has failed; the
// restart policy then decides what happens next.
func (w *podWorkers) syncProbes(ctx context.Context, key string, pod *core.Pod, st runtime.PodState) error {
	if w.probes == nil {
		return nil
	}
	var targets []probe.Target
	for _, c := range st.Containers {
		if spec := containerSpec(pod, c.Name); c.Running && spec != nil { // containers and sidecars
			targets = append(targets, probe.Target{PodUID: pod.UID, PodKey: key, PodIP: st.IP, Container: spec, ContainerID: c.ID, Attempt: c.Restarts})
		}
	}
	w.probes.Sync(ctx, pod.UID, targets)
	for _, t := range targets {
		live, _ := w.probes.Get(t.ContainerID, probe.Liveness)
		start, _ := w.probes.Get(t.ContainerID, probe.Startup)
		if live != probe.Failure && start != probe.Failure {
			continue
		}
		kind := map[bool]string{true: "liveness", false: "startup"}[live == probe.Failure]
		w.cfg.Logf("pod %s: container %s failed its %s probe, killing it", key, t.Container.Name, kind)
		w.event(pod, core.EventTypeNormal, "Killing", fmt.Sprintf("Container %s failed %s probe, will be restarted", t.Container.Name, kind))
		grace := w.preStop(ctx, pod, map[string]string{t.Container.Name: t.ContainerID}, gracePeriod(pod))
		if err := w.runtime.KillContainer(ctx, pod.UID, t.Container.Name, grace); err != nil {
			return err
		}
	}
	return nil
}

// probeFailed writes the kubelet's Unhealthy event for a failed probe attempt.
func (w *podWorkers) probeFailed(t probe.Target, kind probe.Kind, err error) {
	if pod, ok := w.pods.GetByKey(t.PodKey); ok && pod.UID == t.PodUID {
		w.event(pod, core.EventTypeWarning, "Unhealthy", fmt.Sprintf("%s probe failed: %v", kind, err))
	}
}

// probeResult tells status.go what the probes say (nothing when disabled).
func (w *podWorkers) probeResult(containerID string, kind probe.Kind) (probe.Result, bool) {
	if w.probes == nil {
		return probe.Unknown, false
	}
	return w.probes.Get(containerID, kind)
}

func gracePeriod(pod *core.Pod) time.Duration {
	if g := pod.Spec.TerminationGracePeriodSeconds; g != nil {
		return time.Duration(*g) * time.Second
	}
	return core.DefaultTerminationGracePeriodSeconds * time.Second
}

func (w *podWorkers) stop(ctx context.Context, key, uid string, grace time.Duration) error {
	if w.probes != nil {
		w.probes.Forget(uid)
	}
	if err := w.runtime.StopPod(ctx, uid, grace); err != nil {
		return err
	}
	if err := w.teardownVolumes(key, uid); err != nil {
		return err
	}
	w.hooks.forget(uid)
	w.records.stopped(key, uid)
	if m := w.cfg.Metrics; m != nil {
		w.mu.Lock()
		delete(m.startObserved, uid)
		w.mu.Unlock()
		m.RunningPods.Set(float64(w.records.runningCount()))
	}
	return nil
}

// restarts applies the restart policy to exited containers: which to
// restart now, which wait in CrashLoopBackOff (with the message to show),
// and when to look again. The back-off doubles from BackoffBase up to
// BackoffMax with each restart; the first restart is immediate, and a
// container that ran for 10 minutes starts over without delay, as the
// kubelet does.
func (w *podWorkers) restarts(pod *core.Pod, st runtime.PodState, now time.Time) (restartNow []string, waiting map[string]string, retryIn time.Duration) {
	waiting = map[string]string{}
	// A sidecar is restarted whatever the pod's policy, until the pod's
	// containers are done for good.
	sidecars, done, regular := pod.Spec.Sidecars(), true, 0
	for _, c := range st.Containers {
		if !c.Init && !c.Ephemeral {
			regular++
			done = done && !c.Running && !c.FinishedAt.IsZero() && !shouldRestart(pod.Spec.RestartPolicy, c)
		}
	}
	done = done && regular == len(pod.Spec.Containers)
	for _, c := range st.Containers {
		restart := shouldRestart(pod.Spec.RestartPolicy, c)
		if sidecars[c.Name] {
			restart = !done
		}
		if c.Ephemeral {
			restart = false // an ephemeral container runs once
		}
		if c.Running || c.FinishedAt.IsZero() || !restart {
			continue
		}
		delay := w.backoff(c)
		if wait := c.FinishedAt.Add(delay).Sub(now); wait > 0 {
			waiting[c.Name] = fmt.Sprintf("back-off %s restarting failed container=%s pod=%s_%s(%s)", delay, c.Name, pod.Name, pod.Namespace, pod.UID)
			if retryIn == 0 || wait < retryIn {
				retryIn = wait
			}
			continue
		}
		restartNow = append(restartNow, c.Name)
	}
	return restartNow, waiting, retryIn
}

func shouldRestart(policy core.RestartPolicy, c runtime.ContainerState) bool {
	switch policy {
	case core.RestartPolicyNever:
		return false
	case core.RestartPolicyOnFailure:
		return c.ExitCode != 0
	}
	return !c.Init || c.ExitCode != 0 // a finished init container is done
}

func (w *podWorkers) backoff(c runtime.ContainerState) time.Duration {
	if c.Restarts == 0 || c.FinishedAt.Sub(c.StartedAt) >= 10*time.Minute || c.Reason == runtime.ReasonUnknown {
		// (Unknown: lost with its sandbox, a reboot; it did not crash.)
		return 0
	}
	d := w.cfg.BackoffBase
	for i := int32(1); i < c.Restarts && d < w.cfg.BackoffMax; i++ {
		d *= 2
	}
	return min(d, w.cfg.BackoffMax)
}

// startFailed says why a pod cannot start, as the kubelet does — an
// event, and the container waiting with the reason — and, after an image
// pull back-off, looks again when it ends.
func (w *podWorkers) startFailed(ctx context.Context, key string, pod *core.Pod, err error) error {
	var imgErr *runtime.ImageError
	var sbErr *runtime.SandboxError
	var cfgErr *runtime.ConfigError
	switch {
	case errors.As(err, &cfgErr):
		w.event(pod, core.EventTypeWarning, "Failed", "Error: "+cfgErr.Error())
		return errors.Join(err, w.writeStatus(ctx, pod, waitingStatus(pod, cfgErr.Container, "CreateContainerConfigError", cfgErr.Error())))
	case errors.As(err, &imgErr):
		// Say why the pod cannot start as the kubelet does (the event, then
		// "Error: <reason>"), and look again when a pull back-off ends.
		if imgErr.Event != "" {
			typ := core.EventTypeWarning
			if imgErr.Event == "BackOff" {
				typ = core.EventTypeNormal
			}
			w.event(pod, typ, imgErr.Event, imgErr.Error())
			if imgErr.Event != imgErr.Reason {
				w.event(pod, core.EventTypeWarning, "Failed", "Error: "+imgErr.Reason)
			}
		}
		werr := w.writeStatus(ctx, pod, waitingStatus(pod, imgErr.Container, imgErr.Reason, imgErr.Error()))
		if imgErr.RetryIn > 0 && werr == nil {
			w.loop.Queue.AddAfter(key, imgErr.RetryIn)
			return nil
		}
		return errors.Join(err, werr)
	case errors.As(err, &sbErr):
		w.event(pod, core.EventTypeWarning, "FailedCreatePodSandBox", "Failed to create pod sandbox: "+sbErr.Err.Error())
		return err
	default:
		return err
	}
}
