package client

import (
	"sync"
	"testing"
	"time"
)

func TestQueueDeduplicatesAndSerializesKeys(t *testing.T) {
	q := NewQueue(NewFakeClock(time.Unix(0, 0)))
	defer q.ShutDown()
	q.Add("a")
	q.Add("b")
	q.Add("a")
	if q.Len() != 2 {
		t.Fatalf("Len = %d, want 2 (a added twice counts once)", q.Len())
	}
	k, _ := q.Get()
	if k != "a" {
		t.Fatalf("first key %q, want a", k)
	}
	q.Add("a") // added while being processed: must wait for Done
	if k2, _ := q.Get(); k2 != "b" {
		t.Fatalf("second key %q, want b (a is still processing)", k2)
	}
	if q.Len() != 0 {
		t.Fatalf("a was queued while still processing")
	}
	q.Done("a")
	if k3, _ := q.Get(); k3 != "a" {
		t.Fatalf("after Done, got %q, want a again", k3)
	}
}

func TestQueueRateLimitedBackoff(t *testing.T) {
	clock := NewFakeClock(time.Unix(0, 0))
	q := NewQueue(clock)
	defer q.ShutDown()
	expectBackoff(t, q, clock, 5*time.Millisecond, 10*time.Millisecond, 20*time.Millisecond)
	if q.NumRequeues("k") != 3 {
		t.Errorf("NumRequeues = %d, want 3", q.NumRequeues("k"))
	}
	q.Forget("k")
	if q.NumRequeues("k") != 0 {
		t.Errorf("after Forget, NumRequeues = %d", q.NumRequeues("k"))
	}
}

// A queue with SetMaxDelay never waits longer than its cap: a pod waiting
// for its volume's driver is looked at again within seconds, not minutes.
func TestQueueSetMaxDelayCapsBackoff(t *testing.T) {
	clock := NewFakeClock(time.Unix(0, 0))
	q := NewQueue(clock)
	defer q.ShutDown()
	q.SetMaxDelay(15 * time.Millisecond)
	expectBackoff(t, q, clock, 5*time.Millisecond, 10*time.Millisecond, 15*time.Millisecond, 15*time.Millisecond, 15*time.Millisecond)
}

// expectBackoff fails key "k" once per delay and checks it comes back
// after exactly that delay, not a millisecond sooner.
func expectBackoff(t *testing.T, q *Queue, clock *FakeClock, delays ...time.Duration) {
	t.Helper()
	for i, want := range delays {
		q.AddRateLimited("k")
		waitFor(t, func() bool { return clock.Waiters() > 0 })
		clock.Step(want - time.Millisecond)
		if q.Len() != 0 {
			t.Fatalf("failure %d: key came back before %v", i+1, want)
		}
		clock.Step(time.Millisecond)
		waitFor(t, func() bool { return q.Len() == 1 })
		k, _ := q.Get()
		q.Done(k)
	}
}

func TestQueueShutDownReleasesWorkers(t *testing.T) {
	q := NewQueue(nil)
	var wg sync.WaitGroup
	for range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, quit := q.Get(); !quit {
				t.Error("Get returned a key from an empty queue")
			}
		}()
	}
	q.ShutDown()
	wg.Wait()
}

// waitFor waits for a condition that another goroutine makes true.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached within 5s")
		}
		time.Sleep(time.Millisecond)
	}
}
