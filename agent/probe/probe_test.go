package probe

import (
	"context"
	"testing"
	"time"

	"github.com/kobune/kobune/api/core"
)

func TestThresholds(t *testing.T) {
	tests := []struct {
		name             string
		attempts         []bool
		success, failure int32
		want             Result
		changes          int
	}{
		{"one success is enough by default", []bool{true}, 1, 3, Success, 1},
		{"failures below the threshold change nothing", []bool{false, false}, 1, 3, Unknown, 0},
		{"three failures in a row fail", []bool{false, false, false}, 1, 3, Failure, 1},
		{"a success resets the failure count", []bool{false, false, true, false, false}, 1, 3, Success, 1},
		{"readiness needing two successes", []bool{true, false, true, true}, 2, 1, Success, 2},
		{"recovering after failure", []bool{false, true}, 1, 1, Success, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var r Result
			var s, f int32
			changes := 0
			for _, ok := range tt.attempts {
				if applyThresholds(&r, &s, &f, ok, tt.success, tt.failure) {
					changes++
				}
			}
			if r != tt.want || changes != tt.changes {
				t.Errorf("result %v after %d changes, want %v after %d", r, changes, tt.want, tt.changes)
			}
		})
	}
}

type failingExec struct{}

func (failingExec) Exec(context.Context, string, string, []string) (int, error) { return 1, nil }

// TestARestartedAttemptStartsOver: a container restarted under the same
// ID (containerd's runtime gives every attempt one) gets fresh probes:
// the failure that killed the last attempt does not kill the next one
// before its initial delay.
func TestARestartedAttemptStartsOver(t *testing.T) {
	changed := make(chan string, 10)
	m := NewManager(failingExec{}, func(key string) { changed <- key })
	live := &core.Probe{ProbeHandler: core.ProbeHandler{Exec: &core.ExecAction{Command: []string{"cat", "/tmp/health"}}}, FailureThreshold: 1}
	c := &core.Container{Name: "app", LivenessProbe: live}
	target := Target{PodUID: "u", PodKey: "ns/p", Container: c, ContainerID: "u-app"}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	m.Sync(ctx, "u", []Target{target})
	select {
	case <-changed:
	case <-time.After(10 * time.Second):
		t.Fatal("the first attempt's probe never failed")
	}
	if r, _ := m.Get("u-app", Liveness); r != Failure {
		t.Fatalf("first attempt: %v, want Failure", r)
	}
	delayed := *live
	delayed.InitialDelaySeconds = 3600
	c.LivenessProbe = &delayed
	target.Attempt = 1
	m.Sync(ctx, "u", []Target{target})
	if r, ok := m.Get("u-app", Liveness); !ok || r != Unknown {
		t.Errorf("the next attempt starts with %v (%v), want Unknown until its probe runs", r, ok)
	}
}
