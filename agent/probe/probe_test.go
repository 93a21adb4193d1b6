package probe

import "testing"

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
