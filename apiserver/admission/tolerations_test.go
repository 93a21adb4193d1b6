package admission

import (
	"context"
	"testing"

	"github.com/kobune/kobune/api/core"
)

func TestDefaultTolerationSeconds(t *testing.T) {
	ten := int64(10)
	tests := []struct {
		name   string
		tols   []core.Toleration
		want   map[string]int64 // key → tolerationSeconds of the NoExecute toleration (-1: for ever)
		number int
	}{
		{"none: both added", nil, map[string]int64{taintNotReady: 300, taintUnreachable: 300}, 2},
		{"own unreachable kept", []core.Toleration{{Key: taintUnreachable, Operator: "Exists", Effect: core.TaintNoExecute, TolerationSeconds: &ten}},
			map[string]int64{taintNotReady: 300, taintUnreachable: 10}, 2},
		{"tolerate everything: nothing added", []core.Toleration{{Operator: "Exists"}}, map[string]int64{}, 1},
		{"NoSchedule only does not count", []core.Toleration{{Key: taintNotReady, Operator: "Exists", Effect: core.TaintNoSchedule}},
			map[string]int64{taintNotReady: 300, taintUnreachable: 300}, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := &core.Pod{Spec: core.PodSpec{Tolerations: tt.tols}}
			if err := (DefaultTolerationSeconds{Seconds: 300}).Admit(context.Background(), &Attributes{Operation: Create, Object: pod}); err != nil {
				t.Fatal(err)
			}
			if len(pod.Spec.Tolerations) != tt.number {
				t.Fatalf("%d tolerations, want %d: %+v", len(pod.Spec.Tolerations), tt.number, pod.Spec.Tolerations)
			}
			for _, tol := range pod.Spec.Tolerations {
				if want, ok := tt.want[tol.Key]; ok && tol.Effect == core.TaintNoExecute && (tol.TolerationSeconds == nil || *tol.TolerationSeconds != want) {
					t.Errorf("%s: tolerationSeconds %v, want %d", tol.Key, tol.TolerationSeconds, want)
				}
			}
		})
	}
}
