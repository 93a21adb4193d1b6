package client_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/apiserver/testserver"
	"github.com/kobune/kobune/client"
)

// Issue #10 defect 6: a pending pod had 12 separate FailedScheduling and
// SchedulingDecision events after 64 s. Repeats become one event with a
// count, as Kubernetes' event correlator does.
func TestRecorderAggregatesEvents(t *testing.T) {
	srv := testserver.New(t)
	ctx := context.Background()
	clock := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	r := &client.Recorder{Client: srv.Client, Component: "default-scheduler", Now: func() time.Time { return clock }}
	pod := &core.Pod{ObjectMeta: meta.ObjectMeta{Name: "pending", Namespace: "default", UID: "u1"}}
	for range 12 {
		clock = clock.Add(5 * time.Second)
		if err := r.Event(ctx, pod, "Warning", "FailedScheduling", "0/2 nodes are available: 2 Insufficient cpu."); err != nil {
			t.Fatal(err)
		}
	}
	evs, _, err := client.For[*core.Event](srv.Client).List(ctx, "default", client.ListOptions{FieldSelector: "reason=FailedScheduling"})
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 1 {
		t.Fatalf("%d FailedScheduling events for 12 identical ones, want 1 with count 12", len(evs))
	}
	if e := evs[0]; e.Count != 12 || !e.LastTimestamp.Time.Equal(clock) || !e.FirstTimestamp.Time.Equal(clock.Add(-55*time.Second)) {
		t.Errorf("count %d, first %v, last %v; want 12, 55 s apart", e.Count, e.FirstTimestamp, e.LastTimestamp)
	}
	// Different messages: 10 on their own, then one combined event counting the rest.
	for i := range 15 {
		clock = clock.Add(time.Second)
		if err := r.Event(ctx, pod, "Normal", "SchedulingDecision", fmt.Sprintf("decision %d", i)); err != nil {
			t.Fatal(err)
		}
	}
	evs, _, _ = client.For[*core.Event](srv.Client).List(ctx, "default", client.ListOptions{FieldSelector: "reason=SchedulingDecision"})
	combined := 0
	for _, e := range evs {
		if strings.HasPrefix(e.Message, "(combined from similar events): ") {
			combined++
			if e.Count != 5 || e.Message != "(combined from similar events): decision 14" {
				t.Errorf("combined event: count %d, message %q; want 5, the latest message", e.Count, e.Message)
			}
		}
	}
	if len(evs) != 11 || combined != 1 {
		t.Errorf("%d SchedulingDecision events (%d combined) for 15 different ones; want 10 and 1 combined", len(evs), combined)
	}
}

// TestEventsListInTheOrderTheyHappened (issue #32): events of one second
// listed in random order (Created before Scheduled) because their names
// ended in a random suffix. Named as Kubernetes names them (the time in
// nanoseconds, hex), they list in order; two components recording in
// the same nanosecond both succeed.
func TestEventsListInTheOrderTheyHappened(t *testing.T) {
	srv := testserver.New(t)
	ctx := context.Background()
	clock := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	tick := func() time.Time { clock = clock.Add(time.Microsecond); return clock }
	scheduler := &client.Recorder{Client: srv.Client, Component: "default-scheduler", Now: tick}
	agent := &client.Recorder{Client: srv.Client, Component: "kobune-agent", Host: "node-1", Now: tick}
	pod := &core.Pod{ObjectMeta: meta.ObjectMeta{Name: "web", Namespace: "default", UID: "u1"}}
	want := []string{"Scheduled", "Pulled", "Created", "Started", "Killing", "Pulled2", "Created2", "Started2", "Unhealthy", "BackOff"}
	for i, reason := range want {
		r := agent
		if i == 0 {
			r = scheduler
		}
		if err := r.Event(ctx, pod, "Normal", reason, "m"); err != nil {
			t.Fatal(err)
		}
	}
	evs, _, err := client.For[*core.Event](srv.Client).List(ctx, "default", client.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range evs {
		got = append(got, e.Reason)
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("listed %v, want the order they were recorded in %v", got, want)
	}
	if n := evs[0].Name; n != fmt.Sprintf("web.%x", time.Date(2026, 12, 1, 12, 0, 0, 1000, time.UTC).UnixNano()) {
		t.Errorf("event name %q, want web.<unix nanoseconds in hex>", n)
	}
	same := func() time.Time { return clock }
	for _, c := range []string{"a", "b"} {
		r := &client.Recorder{Client: srv.Client, Component: c, Now: same}
		if err := r.Event(ctx, pod, "Normal", "Same", c); err != nil {
			t.Errorf("recorder %s in the same nanosecond: %v", c, err)
		}
	}
}
