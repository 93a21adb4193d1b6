package scheduler

import (
	"testing"
	"time"
)

type fakePods map[string]struct {
	prio    int32
	created time.Time
}

func (f fakePods) info(key string) (int32, time.Time, bool) {
	p, ok := f[key]
	return p.prio, p.created, ok
}

func TestQueueOrdersByPriorityThenAge(t *testing.T) {
	t0 := time.Unix(1000, 0)
	pods := fakePods{
		"old-low":  {0, t0},
		"new-low":  {0, t0.Add(time.Second)},
		"new-high": {100, t0.Add(2 * time.Second)},
	}
	q := newQueue(pods.info, time.Second, 10*time.Second, func() time.Time { return t0 })
	for _, k := range []string{"new-low", "old-low", "new-high"} {
		q.Add(k)
	}
	for _, want := range []string{"new-high", "old-low", "new-low"} {
		if got, _ := q.Pop(); got != want {
			t.Fatalf("popped %s, want %s", got, want)
		}
	}
}

func TestQueueBackoffAndUnschedulable(t *testing.T) {
	now := time.Unix(1000, 0)
	pods := fakePods{"a": {0, now}, "b": {0, now}}
	q := newQueue(pods.info, time.Second, 4*time.Second, func() time.Time { return now })
	pop := func() string {
		t.Helper()
		if a, _, _ := q.Lens(); a == 0 {
			return ""
		}
		k, _ := q.Pop()
		return k
	}
	// An error backs off 1 s, then 2 s, then 4 s (the cap).
	q.Add("a")
	for i, wait := range []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 4 * time.Second} {
		if got := pop(); got != "a" {
			t.Fatalf("attempt %d: popped %q", i, got)
		}
		q.Done("a", false, true)
		now = now.Add(wait - time.Millisecond)
		q.flush()
		if got := pop(); got != "" {
			t.Fatalf("attempt %d: %s came back before its %v back-off", i, got, wait)
		}
		now = now.Add(time.Millisecond)
		q.flush()
	}
	// Unschedulable pods wait for a change...
	pop()
	q.Done("a", false, false) // finally scheduled: attempts forgotten
	q.Add("b")
	pop()
	q.Done("b", true, true)
	now = now.Add(10 * time.Second)
	q.flush()
	if got := pop(); got != "" {
		t.Fatalf("an unschedulable pod came back without a change: %s", got)
	}
	q.MoveAllToActive() // ...and come back when something changes
	if got := pop(); got != "b" {
		t.Fatalf("after a cluster change popped %q, want b", got)
	}
	q.Done("b", true, true)
	now = now.Add(unschedulableTimeout)
	q.flush()
	q.flush()
	if got := pop(); got != "b" {
		t.Fatalf("after the unschedulable timeout popped %q, want b", got)
	}
}

// TestQueueChangeDuringAttempt: a change that arrives while a pod is being
// tried must not be lost: the pod backs off instead of being parked.
func TestQueueChangeDuringAttempt(t *testing.T) {
	now := time.Unix(1000, 0)
	pods := fakePods{"p": {0, now}}
	q := newQueue(pods.info, time.Second, 4*time.Second, func() time.Time { return now })
	q.Add("p")
	q.Pop()
	q.MoveAllToActive() // a node appears during the attempt
	q.Done("p", true, true)
	now = now.Add(time.Second)
	q.flush()
	if a, _, u := q.Lens(); a != 1 || u != 0 {
		t.Fatalf("active %d, unschedulable %d; want the pod back in active after its back-off", a, u)
	}
}
