package podautoscaler

import (
	"testing"
	"time"

	"github.com/kobune/kobune/api/autoscaling"
)

func pods(usages ...int64) []PodSample {
	var out []PodSample
	for i, u := range usages {
		out = append(out, PodSample{Name: string(rune('a' + i)), HasMetric: true, Usage: u, Request: 100})
	}
	return out
}

// TestReplicasForUtilization: Kubernetes' algorithm, case by case.
func TestReplicasForUtilization(t *testing.T) {
	withMissing := append(pods(20, 20, 20), PodSample{Name: "new", Request: 100})
	withUnready := append(pods(100, 100), PodSample{Name: "u1", Unready: true, Request: 100}, PodSample{Name: "u2", Unready: true, Request: 100, HasMetric: true, Usage: 90})
	withIgnored := append(pods(100, 100), PodSample{Name: "gone", Ignored: true, HasMetric: true, Usage: 0, Request: 100})
	tests := []struct {
		name    string
		current int32
		pods    []PodSample
		target  int32
		want    int32
		util    int32
	}{
		{"within the 10% tolerance: no change", 2, pods(54, 54), 50, 2, 54},
		{"just outside the tolerance: up", 2, pods(56, 56), 50, 3, 56},
		{"twice the target: twice the pods", 2, pods(100, 100), 50, 4, 100},
		{"a tenth: down, rounded up", 4, pods(5, 5, 5, 5), 50, 1, 5},
		{"a pod without metrics blocks a scale down (assumed at 100%)", 4, withMissing, 50, 4, 20},
		{"the same pods without it: down", 3, pods(20, 20, 20), 50, 2, 20},
		{"unready pods count as idle when scaling up: ratio 1, no change", 4, withUnready, 50, 4, 100},
		{"ignored pods count for nothing", 3, withIgnored, 50, 4, 100},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ReplicasForUtilization(tt.current, tt.pods, tt.target)
			if err != nil {
				t.Fatal(err)
			}
			if got.Replicas != tt.want || got.Utilization != tt.util {
				t.Errorf("replicas %d at %d%%, want %d at %d%%", got.Replicas, got.Utilization, tt.want, tt.util)
			}
		})
	}
	if _, err := ReplicasForUtilization(2, []PodSample{{Name: "a", Request: 100}}, 50); err == nil {
		t.Error("no pod with metrics: want an error")
	}
	if got, _ := ReplicasForAverageValue(3, pods(300, 300, 300), 100); got.Replicas != 9 || got.Average != 300 {
		t.Errorf("AverageValue 300 per pod against 100: %+v, want 9 replicas", got)
	}
}

func behavior(upWindow, downWindow int32) *autoscaling.HorizontalPodAutoscalerBehavior {
	h := &autoscaling.HorizontalPodAutoscaler{Spec: autoscaling.HorizontalPodAutoscalerSpec{Behavior: &autoscaling.HorizontalPodAutoscalerBehavior{
		ScaleUp: &autoscaling.HPAScalingRules{StabilizationWindowSeconds: &upWindow}, ScaleDown: &autoscaling.HPAScalingRules{StabilizationWindowSeconds: &downWindow}}}}
	autoscaling.SetDefaultsHorizontalPodAutoscaler(h)
	return h.Spec.Behavior
}

// TestNormalize: stabilization windows, rate policies and bounds.
func TestNormalize(t *testing.T) {
	t0 := time.Unix(10000, 0)
	t.Run("scale down waits for the window", func(t *testing.T) {
		var h History
		b := behavior(0, 300)
		if got, _ := h.Normalize(t0, 5, 5, 1, 10, b); got != 5 {
			t.Fatalf("steady: %d", got)
		}
		if got, _ := h.Normalize(t0.Add(10*time.Second), 5, 2, 1, 10, b); got != 5 {
			t.Errorf("10 s after a recommendation of 5, a proposal of 2 gives %d, want 5", got)
		}
		if got, _ := h.Normalize(t0.Add(301*time.Second), 5, 2, 1, 10, b); got != 2 {
			t.Errorf("after the 300 s window: %d, want 2", got)
		}
	})
	t.Run("scale up at most 4 pods or 100% per 15 s, then max", func(t *testing.T) {
		var h History
		b := behavior(0, 0)
		got, limit := h.Normalize(t0, 1, 20, 1, 10, b)
		if got != 5 || limit == nil || limit.Reason != "ScaleUpLimit" {
			t.Fatalf("1 → 20: %d %+v, want 5 ScaleUpLimit", got, limit)
		}
		h.Scaled(t0, 1, 5, b)
		if got, limit := h.Normalize(t0.Add(5*time.Second), 5, 20, 1, 10, b); got != 5 || limit == nil || limit.Reason != "ScaleUpLimit" {
			t.Errorf("5 s later, within the period: %d %+v, want 5", got, limit)
		}
		if got, limit := h.Normalize(t0.Add(16*time.Second), 5, 20, 1, 10, b); got != 10 || limit == nil || limit.Reason != "TooManyReplicas" {
			t.Errorf("next period: %d %+v, want 10 TooManyReplicas", got, limit)
		}
	})
	t.Run("min bounds a scale down", func(t *testing.T) {
		var h History
		if got, limit := h.Normalize(t0, 3, 0, 2, 10, behavior(0, 0)); got != 2 || limit == nil || limit.Reason != "TooFewReplicas" {
			t.Errorf("%d %+v, want 2 TooFewReplicas", got, limit)
		}
	})
	t.Run("a Pods policy slows a scale down; Disabled stops it", func(t *testing.T) {
		var h History
		b := behavior(0, 0)
		b.ScaleDown.Policies = []autoscaling.HPAScalingPolicy{{Type: autoscaling.PodsScalingPolicy, Value: 1, PeriodSeconds: 60}}
		if got, limit := h.Normalize(t0, 6, 2, 1, 10, b); got != 5 || limit == nil || limit.Reason != "ScaleDownLimit" {
			t.Errorf("%d %+v, want 5 ScaleDownLimit", got, limit)
		}
		disabled := autoscaling.DisabledPolicySelect
		b.ScaleDown.SelectPolicy = &disabled
		if got, _ := h.Normalize(t0.Add(time.Minute), 6, 2, 1, 10, b); got != 6 {
			t.Errorf("Disabled: %d, want 6", got)
		}
	})
}
