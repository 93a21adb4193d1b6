package agent

import (
	"encoding/json"
	"fmt"
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
	byName := map[string]core.ContainerStatus{}
	initsDone, made, anyRunning, initFailed := true, 0, false, false
	for _, c := range st.Containers {
		cs := containerStatus(c, waiting[c.Name], probes)
		switch {
		case c.Ephemeral:
			s.EphemeralContainerStatuses = append(s.EphemeralContainerStatuses, cs)
			continue
		case c.Init && sidecars[c.Name]:
		case c.Init:
			// An init container that has run to success is ready, as the
			// kubelet reports it.
			cs.Ready = !c.Running && !c.FinishedAt.IsZero() && c.ExitCode == 0
			initFailed = initFailed || !c.Running && !c.FinishedAt.IsZero() && c.ExitCode != 0 && waiting[c.Name] == ""
		default:
			made++
			anyRunning = anyRunning || c.Running
		}
		byName[c.Name] = cs
	}
	// Every container of the spec has a status, as the kubelet reports
	// them: one not made yet waits (PodInitializing while init containers
	// run, ContainerCreating after).
	var incomplete, unready []string
	for _, c := range pod.Spec.InitContainers {
		cs, ok := byName[c.Name]
		if !ok {
			cs = core.ContainerStatus{Name: c.Name, Image: c.Image, State: core.ContainerState{Waiting: &core.ContainerStateWaiting{Reason: "PodInitializing"}}}
		}
		s.InitContainerStatuses = append(s.InitContainerStatuses, cs)
		if sidecars[c.Name] {
			if cs.Started == nil || !*cs.Started {
				initsDone = false
				incomplete = append(incomplete, c.Name)
			}
			if !cs.Ready {
				unready = append(unready, c.Name)
			}
		} else if !cs.Ready {
			initsDone = false
			incomplete = append(incomplete, c.Name)
		}
	}
	initialized := initsDone || made > 0
	for _, c := range pod.Spec.Containers {
		cs, ok := byName[c.Name]
		if !ok {
			reason := "ContainerCreating"
			if !initialized {
				reason = "PodInitializing"
			}
			cs = core.ContainerStatus{Name: c.Name, Image: c.Image, State: core.ContainerState{Waiting: &core.ContainerStateWaiting{Reason: reason}}}
		}
		s.ContainerStatuses = append(s.ContainerStatuses, cs)
		if !cs.Ready {
			unready = append(unready, c.Name)
		}
	}
	// Running once initialized and the containers exist, also while one is
	// in CrashLoopBackOff (as in Kubernetes).
	s.Phase = core.PodPending
	if initialized && (anyRunning || made == len(pod.Spec.Containers) && len(waiting) > 0) {
		s.Phase = core.PodRunning
	}
	if initialized && !anyRunning && made > 0 {
		s.Phase = terminalPhase(pod.Spec.RestartPolicy, s.ContainerStatuses, s.Phase)
	}
	if !initialized && initFailed && pod.Spec.RestartPolicy == core.RestartPolicyNever {
		s.Phase = core.PodFailed // an init container failed and is not run again
	}
	// The kubelet's reasons and messages (pkg/kubelet/status/generate.go).
	ready := condition{ok: initialized && len(unready) == 0 && len(s.ContainerStatuses) > 0}
	if !ready.ok {
		ready.reason, ready.message = "ContainersNotReady", fmt.Sprintf("containers with unready status: %s", unready)
		switch s.Phase {
		case core.PodSucceeded:
			ready.reason, ready.message = "PodCompleted", ""
		case core.PodFailed:
			ready.reason, ready.message = "PodFailed", ""
		}
	}
	init := condition{ok: initialized}
	if !initialized {
		init.reason, init.message = "ContainersNotInitialized", fmt.Sprintf("containers with incomplete status: %s", incomplete)
	} else if s.Phase == core.PodSucceeded && len(pod.Spec.InitContainers) > 0 {
		init.reason = "PodCompleted"
	}
	s.Conditions = conditions(pod.Status.Conditions, map[core.PodConditionType]condition{
		core.PodInitialized: init, core.ContainersReady: ready, core.PodReady: ready,
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

// condition is what the agent says of one of its conditions: true, or
// why not.
type condition struct {
	ok              bool
	reason, message string
}

// conditions keeps PodScheduled (the scheduler's) and sets the agent's.
func conditions(old []core.PodCondition, want map[core.PodConditionType]condition) []core.PodCondition {
	// The conditions others own stay as they are written: PodScheduled
	// (the scheduler's), DisruptionTarget (the scheduler's, the eviction
	// API's), a readiness gate's (its controller's) — the kubelet keeps
	// every condition it does not set itself.
	var out []core.PodCondition
	for _, c := range old {
		switch c.Type {
		case core.PodInitialized, core.ContainersReady, core.PodReady, core.PodResizePending, core.PodResizeInProgress:
		default:
			out = append(out, c)
		}
	}
	now := meta.Now()
	for _, t := range []core.PodConditionType{core.PodInitialized, core.ContainersReady, core.PodReady} {
		status := meta.ConditionFalse
		if want[t].ok {
			status = meta.ConditionTrue
		}
		c := core.PodCondition{Type: t, Status: status, Reason: want[t].reason, Message: want[t].message, LastTransitionTime: now}
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
	var inits, names []string
	for _, c := range pod.Spec.InitContainers {
		s.InitContainerStatuses = append(s.InitContainerStatuses, waiting(c, "PodInitializing"))
		creating = "PodInitializing"
		inits = append(inits, c.Name)
	}
	for _, c := range pod.Spec.Containers {
		s.ContainerStatuses = append(s.ContainerStatuses, waiting(c, creating))
		names = append(names, c.Name)
	}
	// The kubelet's words: nothing runs, so no container is ready; a pod
	// without init containers counts as initialized.
	init := condition{ok: len(inits) == 0}
	if !init.ok {
		init.reason, init.message = "ContainersNotInitialized", fmt.Sprintf("containers with incomplete status: %s", inits)
	}
	ready := condition{reason: "ContainersNotReady", message: fmt.Sprintf("containers with unready status: %s", names)}
	s.Conditions = conditions(pod.Status.Conditions, map[core.PodConditionType]condition{
		core.PodInitialized: init, core.ContainersReady: ready, core.PodReady: ready,
	})
	return s
}
