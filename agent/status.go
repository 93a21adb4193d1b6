package agent

import (
	"encoding/json"
	"reflect"

	"github.com/kobune/kobune/agent/probe"
	"github.com/kobune/kobune/agent/runtime"
	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
)

// podStatus computes a pod's status from what the runtime runs, keeping
// the transition times of conditions that did not change so that a
// steady pod's status is written once, not on every look.
// waiting maps containers held in CrashLoopBackOff to the message to show;
// probes says what a container's probes report.
func podStatus(pod *core.Pod, st runtime.PodState, nodeIP string, waiting map[string]string, probes probeResults) core.PodStatus {
	s := core.PodStatus{
		HostIP: nodeIP, PodIP: st.IP, QOSClass: pod.Status.QOSClass,
		NominatedNodeName: pod.Status.NominatedNodeName, ObservedGeneration: pod.Generation,
	}
	if st.IP != "" {
		s.PodIPs = []core.PodIP{{IP: st.IP}}
	}
	start := meta.NewTime(st.StartedAt)
	if pod.Status.StartTime != nil {
		start = *pod.Status.StartTime
	}
	s.StartTime = &start
	// Initialized: every init container has run to success and every
	// sidecar has started — or a container exists already (a sidecar that
	// exits later does not undo it). Ready: the containers and the
	// sidecars are ready, as the kubelet counts them.
	sidecars := pod.Spec.Sidecars()
	initsDone, containersMade, allReady, anyRunning := true, false, true, false
	for _, c := range st.Containers {
		cs := containerStatus(c, waiting[c.Name], probes)
		switch {
		case c.Ephemeral:
			s.EphemeralContainerStatuses = append(s.EphemeralContainerStatuses, cs)
		case c.Init && sidecars[c.Name]:
			s.InitContainerStatuses = append(s.InitContainerStatuses, cs)
			initsDone = initsDone && *cs.Started
			allReady = allReady && cs.Ready
		case c.Init:
			// An init container that has run to success is ready, as the
			// kubelet reports it.
			done := !c.Running && !c.FinishedAt.IsZero() && c.ExitCode == 0
			cs.Ready = done
			s.InitContainerStatuses = append(s.InitContainerStatuses, cs)
			initsDone = initsDone && done
		default:
			s.ContainerStatuses = append(s.ContainerStatuses, cs)
			allReady = allReady && cs.Ready
			anyRunning = anyRunning || c.Running
			containersMade = true
		}
	}
	initialized := initsDone || containersMade
	// Running once initialized and the containers exist, also while one is
	// in CrashLoopBackOff (as in Kubernetes).
	s.Phase = core.PodPending
	if initialized && (anyRunning || len(s.ContainerStatuses) == len(pod.Spec.Containers) && len(waiting) > 0) {
		s.Phase = core.PodRunning
	}
	if initialized && !anyRunning && len(s.ContainerStatuses) > 0 {
		s.Phase = terminalPhase(pod.Spec.RestartPolicy, s.ContainerStatuses, s.Phase)
	}
	s.Conditions = conditions(pod.Status.Conditions, map[core.PodConditionType]bool{
		core.PodInitialized:  initialized,
		core.ContainersReady: initialized && allReady && len(s.ContainerStatuses) > 0,
		core.PodReady:        initialized && allReady && len(s.ContainerStatuses) > 0,
	})
	return s
}

// terminalPhase decides whether a pod whose containers have all exited is
// finished: Succeeded when every one exited 0, Failed when one failed and
// the policy is Never. (Restarting containers under Always and OnFailure is
// the next step of the agent; until then such a pod stays in its phase.)
func terminalPhase(policy core.RestartPolicy, statuses []core.ContainerStatus, phase core.PodPhase) core.PodPhase {
	failed := false
	for _, cs := range statuses {
		t := cs.State.Terminated
		if t == nil {
			return phase
		}
		failed = failed || t.ExitCode != 0
	}
	switch {
	case !failed && policy != core.RestartPolicyAlways:
		return core.PodSucceeded
	case failed && policy == core.RestartPolicyNever:
		return core.PodFailed
	}
	return phase
}

// probeResults reports a container attempt's probe result and whether it has that probe.
type probeResults func(containerID string, kind probe.Kind) (probe.Result, bool)

// containerStatus reports one container: started once its startup probe (if
// any) has passed, ready once started and its readiness probe (if any) passes.
func containerStatus(c runtime.ContainerState, backoff string, probes probeResults) core.ContainerStatus {
	passes := func(kind probe.Kind) bool {
		r, exists := probes(c.ID, kind)
		return !exists || r == probe.Success
	}
	started := c.Running && passes(probe.Startup)
	ready := started && passes(probe.Readiness)
	cs := core.ContainerStatus{Name: c.Name, Image: c.Image, ImageID: c.ImageID, ContainerID: c.ID,
		RestartCount: c.Restarts, Ready: ready, Started: &started}
	if l := c.Last; l != nil {
		cs.LastState.Terminated = &core.ContainerStateTerminated{ExitCode: l.ExitCode, Reason: l.Reason, Message: l.Message,
			StartedAt: meta.NewTime(l.StartedAt), FinishedAt: meta.NewTime(l.FinishedAt)}
	}
	switch {
	case backoff != "":
		// The attempt that just ended becomes lastState while we wait.
		cs.LastState.Terminated = &core.ContainerStateTerminated{ExitCode: c.ExitCode, Reason: c.Reason, Message: c.Message,
			StartedAt: meta.NewTime(c.StartedAt), FinishedAt: meta.NewTime(c.FinishedAt), ContainerID: c.ID}
		cs.State.Waiting = &core.ContainerStateWaiting{Reason: "CrashLoopBackOff", Message: backoff}
	case c.Running:
		cs.State.Running = &core.ContainerStateRunning{StartedAt: meta.NewTime(c.StartedAt)}
	case !c.FinishedAt.IsZero():
		cs.State.Terminated = &core.ContainerStateTerminated{ExitCode: c.ExitCode, Reason: c.Reason, Message: c.Message,
			StartedAt: meta.NewTime(c.StartedAt), FinishedAt: meta.NewTime(c.FinishedAt), ContainerID: c.ID}
	default:
		cs.State.Waiting = &core.ContainerStateWaiting{Reason: "ContainerCreating"}
	}
	return cs
}

// conditions keeps PodScheduled (the scheduler's) and sets the agent's.
func conditions(old []core.PodCondition, want map[core.PodConditionType]bool) []core.PodCondition {
	var out []core.PodCondition
	for _, c := range old {
		if c.Type == core.PodScheduled {
			out = append(out, c)
		}
	}
	now := meta.Now()
	for _, t := range []core.PodConditionType{core.PodInitialized, core.ContainersReady, core.PodReady} {
		status := meta.ConditionFalse
		if want[t] {
			status = meta.ConditionTrue
		}
		c := core.PodCondition{Type: t, Status: status, LastTransitionTime: now}
		for _, o := range old {
			if o.Type == t && o.Status == status {
				c.LastTransitionTime = o.LastTransitionTime
			}
		}
		out = append(out, c)
	}
	return out
}

func statusEqual(a, b core.PodStatus) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return reflect.DeepEqual(ja, jb)
}

// waitingStatus is the status of a pod that cannot start yet: Pending,
// with the blocked container (an init container or another) waiting for
// reason, as the kubelet reports it: init containers not yet run and,
// in a pod that has init containers, the containers wait with
// PodInitializing; in one without, with ContainerCreating.
func waitingStatus(pod *core.Pod, container, reason, message string) core.PodStatus {
	s := core.PodStatus{Phase: core.PodPending, QOSClass: pod.Status.QOSClass, HostIP: pod.Status.HostIP,
		NominatedNodeName: pod.Status.NominatedNodeName, ObservedGeneration: pod.Generation}
	waiting := func(c core.Container, otherwise string) core.ContainerStatus {
		cs := core.ContainerStatus{Name: c.Name, Image: c.Image, State: core.ContainerState{Waiting: &core.ContainerStateWaiting{Reason: otherwise}}}
		if c.Name == container {
			cs.State.Waiting = &core.ContainerStateWaiting{Reason: reason, Message: message}
		}
		return cs
	}
	creating := "ContainerCreating"
	for _, c := range pod.Spec.InitContainers {
		s.InitContainerStatuses = append(s.InitContainerStatuses, waiting(c, "PodInitializing"))
		creating = "PodInitializing"
	}
	for _, c := range pod.Spec.Containers {
		s.ContainerStatuses = append(s.ContainerStatuses, waiting(c, creating))
	}
	s.Conditions = conditions(pod.Status.Conditions, nil)
	return s
}
