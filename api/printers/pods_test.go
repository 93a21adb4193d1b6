package printers

import (
	"testing"
	"time"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
)

// TestPodRowAsKubectlPrintsIt: the pod table's READY, STATUS and RESTARTS
// as kubectl prints them, init containers included.
func TestPodRowAsKubectlPrintsIt(t *testing.T) {
	ago := func(d time.Duration) meta.Time { return meta.NewTime(time.Now().Add(-d)) }
	waiting := func(reason string) core.ContainerState {
		return core.ContainerState{Waiting: &core.ContainerStateWaiting{Reason: reason}}
	}
	running := core.ContainerState{Running: &core.ContainerStateRunning{}}
	done := core.ContainerState{Terminated: &core.ContainerStateTerminated{Reason: "Completed"}}
	crashed := core.ContainerStateTerminated{ExitCode: 1, Reason: "Error", FinishedAt: ago(90 * time.Second)}
	initialized := []core.PodCondition{{Type: core.PodInitialized, Status: meta.ConditionTrue}}
	always, yes := core.ContainerRestartPolicyAlways, true
	twoInits := core.PodSpec{InitContainers: []core.Container{{Name: "i1"}, {Name: "i2"}}, Containers: []core.Container{{Name: "app"}}}
	tests := []struct {
		name     string
		spec     core.PodSpec
		status   core.PodStatus
		ready    int
		total    int // 0: the containers
		want     string
		restarts string
	}{
		{name: "init image cannot be pulled", spec: twoInits, status: core.PodStatus{Phase: core.PodPending,
			InitContainerStatuses: []core.ContainerStatus{{Name: "i1", State: waiting("ImagePullBackOff")}, {Name: "i2", State: waiting("PodInitializing")}},
			ContainerStatuses:     []core.ContainerStatus{{Name: "app", State: waiting("PodInitializing")}}},
			want: "Init:ImagePullBackOff", restarts: "0"},
		{name: "second init container runs", spec: twoInits, status: core.PodStatus{Phase: core.PodPending,
			InitContainerStatuses: []core.ContainerStatus{{Name: "i1", State: done}, {Name: "i2", State: running}}},
			want: "Init:1/2", restarts: "0"},
		{name: "init container crash-loops: its restarts count", spec: twoInits, status: core.PodStatus{Phase: core.PodPending,
			InitContainerStatuses: []core.ContainerStatus{{Name: "i1", RestartCount: 3, State: waiting("CrashLoopBackOff"), LastState: core.ContainerState{Terminated: &crashed}}},
			ContainerStatuses:     []core.ContainerStatus{{Name: "app", RestartCount: 0, State: waiting("PodInitializing")}}},
			want: "Init:CrashLoopBackOff", restarts: "3 (90s ago)"},
		{name: "init container failed for good", spec: twoInits, status: core.PodStatus{Phase: core.PodFailed,
			InitContainerStatuses: []core.ContainerStatus{{Name: "i1", State: core.ContainerState{Terminated: &core.ContainerStateTerminated{ExitCode: 2}}}}},
			want: "Init:ExitCode:2", restarts: "0"},
		{name: "initialized: the containers' restarts, not the init containers'", spec: twoInits, status: core.PodStatus{Phase: core.PodRunning, Conditions: initialized,
			InitContainerStatuses: []core.ContainerStatus{{Name: "i1", RestartCount: 2, State: done}, {Name: "i2", State: done}},
			ContainerStatuses:     []core.ContainerStatus{{Name: "app", Ready: true, RestartCount: 1, State: running, LastState: core.ContainerState{Terminated: &crashed}}}},
			ready: 1, want: "Running", restarts: "1 (90s ago)"},
		{name: "the first container's reason wins", spec: core.PodSpec{Containers: []core.Container{{Name: "a"}, {Name: "b"}}}, status: core.PodStatus{Phase: core.PodPending,
			ContainerStatuses: []core.ContainerStatus{{Name: "a", State: waiting("ErrImagePull")}, {Name: "b", State: waiting("ContainerCreating")}}},
			want: "ErrImagePull", restarts: "0"},
		{name: "a sidecar-less pod with one container done and one running", spec: core.PodSpec{Containers: []core.Container{{Name: "a"}, {Name: "b"}}}, status: core.PodStatus{Phase: core.PodRunning,
			ContainerStatuses: []core.ContainerStatus{{Name: "a", State: done}, {Name: "b", Ready: true, State: running}}},
			ready: 1, want: "NotReady", restarts: "0"},
		{name: "a sidecar counts among the containers", spec: core.PodSpec{InitContainers: []core.Container{{Name: "proxy", RestartPolicy: &always}, {Name: "setup"}}, Containers: []core.Container{{Name: "app"}}},
			status: core.PodStatus{Phase: core.PodRunning, Conditions: initialized,
				InitContainerStatuses: []core.ContainerStatus{{Name: "proxy", Ready: true, Started: &yes, RestartCount: 2, State: running, LastState: core.ContainerState{Terminated: &crashed}}, {Name: "setup", State: done}},
				ContainerStatuses:     []core.ContainerStatus{{Name: "app", Ready: true, State: running}}},
			ready: 2, total: 2, want: "Running", restarts: "2 (90s ago)"},
		{name: "a started sidecar, the next init container runs", spec: core.PodSpec{InitContainers: []core.Container{{Name: "proxy", RestartPolicy: &always}, {Name: "setup"}}, Containers: []core.Container{{Name: "app"}}},
			status: core.PodStatus{Phase: core.PodPending,
				InitContainerStatuses: []core.ContainerStatus{{Name: "proxy", Ready: true, Started: &yes, State: running}, {Name: "setup", State: running}},
				ContainerStatuses:     []core.ContainerStatus{{Name: "app", State: waiting("PodInitializing")}}},
			ready: 1, total: 2, want: "Init:1/2", restarts: "0"},
		{name: "held by scheduling gates", spec: core.PodSpec{Containers: []core.Container{{Name: "a"}}, SchedulingGates: []core.PodSchedulingGate{{Name: "example.com/wait"}}},
			status: core.PodStatus{Phase: core.PodPending, Conditions: []core.PodCondition{{Type: core.PodScheduled, Status: meta.ConditionFalse, Reason: core.PodReasonSchedulingGated}}},
			want:   "SchedulingGated", restarts: "0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &core.Pod{Spec: tt.spec, Status: tt.status}
			r := podSummary(p)
			total := tt.total
			if total == 0 {
				total = len(tt.spec.Containers)
			}
			if r.status != tt.want || r.restartsColumn() != tt.restarts || r.ready != tt.ready || r.total != total {
				t.Errorf("status %q restarts %q ready %d/%d, want %q %q %d/%d", r.status, r.restartsColumn(), r.ready, r.total, tt.want, tt.restarts, tt.ready, total)
			}
		})
	}
}
