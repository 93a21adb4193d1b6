package agent

import (
	"testing"
	"time"

	"github.com/kobune/kobune/agent/probe"
	"github.com/kobune/kobune/agent/runtime"
	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
)

// A sidecar's part in its pod's status and restarts: the pod is not
// Initialized before the sidecar's startup probe passed, not Ready before
// the sidecar is; the sidecar is restarted when it exits although the
// pod's restartPolicy is Never, until the containers are done; and the pod
// Succeeds by its containers alone.
func TestSidecarStatusAndRestarts(t *testing.T) {
	always := core.ContainerRestartPolicyAlways
	pod := &core.Pod{ObjectMeta: meta.ObjectMeta{Name: "p", Namespace: "default", UID: "u", Generation: 3}, Spec: core.PodSpec{RestartPolicy: core.RestartPolicyNever,
		InitContainers: []core.Container{{Name: "proxy", RestartPolicy: &always, StartupProbe: &core.Probe{}, ReadinessProbe: &core.Probe{}}, {Name: "setup"}},
		Containers:     []core.Container{{Name: "app"}}}}
	now := time.Now()
	running := func(name string, init bool) runtime.ContainerState {
		return runtime.ContainerState{Name: name, ID: "containerd://" + name, Init: init, Running: true, StartedAt: now.Add(-time.Minute)}
	}
	exited := func(name string, init bool, code int32) runtime.ContainerState {
		c := running(name, init)
		c.Running, c.ExitCode, c.FinishedAt = false, code, now.Add(-time.Second)
		return c
	}
	results := map[string]probe.Result{}
	probes := func(id string, kind probe.Kind) (probe.Result, bool) {
		r, ok := results[id+"/"+string(kind)]
		return r, ok
	}
	cond := func(s core.PodStatus, typ core.PodConditionType) meta.ConditionStatus {
		for _, c := range s.Conditions {
			if c.Type == typ {
				return c.Status
			}
		}
		return ""
	}

	// The sidecar runs; its startup probe has not passed.
	results["containerd://proxy/Startup"], results["containerd://proxy/Readiness"] = probe.Unknown, probe.Unknown
	s := podStatus(pod, runtime.PodState{Containers: []runtime.ContainerState{running("proxy", true)}}, "", nil, probes)
	if cond(s, core.PodInitialized) != meta.ConditionFalse || *s.InitContainerStatuses[0].Started {
		t.Errorf("sidecar not started yet: Initialized %s, started %v", cond(s, core.PodInitialized), *s.InitContainerStatuses[0].Started)
	}
	// Started, the init container done, the app running: initialized,
	// but not ready until the sidecar is.
	results["containerd://proxy/Startup"] = probe.Success
	st := runtime.PodState{Containers: []runtime.ContainerState{running("proxy", true), exited("setup", true, 0), running("app", false)}}
	s = podStatus(pod, st, "", nil, probes)
	if s.Phase != core.PodRunning || cond(s, core.PodInitialized) != meta.ConditionTrue || cond(s, core.PodReady) != meta.ConditionFalse {
		t.Errorf("sidecar started, not ready: phase %s, Initialized %s, Ready %s", s.Phase, cond(s, core.PodInitialized), cond(s, core.PodReady))
	}
	results["containerd://proxy/Readiness"] = probe.Success
	if s = podStatus(pod, st, "", nil, probes); cond(s, core.PodReady) != meta.ConditionTrue {
		t.Errorf("sidecar ready: Ready %s", cond(s, core.PodReady))
	}
	if s.ObservedGeneration != 3 {
		t.Errorf("observedGeneration %d, want the pod's generation 3", s.ObservedGeneration)
	}

	w := &podWorkers{cfg: Config{BackoffBase: 10 * time.Second, BackoffMax: time.Minute}}
	st = runtime.PodState{Containers: []runtime.ContainerState{exited("proxy", true, 3), exited("setup", true, 0), running("app", false)}}
	if restart, _, _ := w.restarts(pod, st, now); len(restart) != 1 || restart[0] != "proxy" {
		t.Errorf("the sidecar exited while the app runs: restart %v, want [proxy] (restartPolicy Never notwithstanding)", restart)
	}
	if s = podStatus(pod, st, "", nil, probes); cond(s, core.PodInitialized) != meta.ConditionTrue {
		t.Errorf("a sidecar exiting after the pod was initialized: Initialized %s", cond(s, core.PodInitialized))
	}
	// The app is done: the pod Succeeds, the sidecar is not started again.
	st = runtime.PodState{Containers: []runtime.ContainerState{exited("proxy", true, 143), exited("setup", true, 0), exited("app", false, 0)}}
	if restart, _, _ := w.restarts(pod, st, now); len(restart) != 0 {
		t.Errorf("the app done: restart %v, want none", restart)
	}
	st.Containers[0] = running("proxy", true)
	if s = podStatus(pod, st, "", nil, probes); s.Phase != core.PodSucceeded {
		t.Errorf("the app done, the sidecar still running: phase %s, want Succeeded", s.Phase)
	}
}
