package client_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kobune/kobune/api/coordination"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/apiserver/testserver"
	"github.com/kobune/kobune/client"
)

// TestLeaderElectionOneLeaderThenFailover: two candidates on one Lease; one
// leads, never both; when the leader stops, the other takes over.
func TestLeaderElectionOneLeaderThenFailover(t *testing.T) {
	s := testserver.New(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var leaders atomic.Int32
	var maxLeaders atomic.Int32
	started := make(chan string, 2)
	candidate := func(id string) (*client.LeaderElection, context.CancelFunc) {
		cctx, ccancel := context.WithCancel(ctx)
		le := &client.LeaderElection{
			Client: s.Client, Namespace: "kube-system", Name: "test-lock", Identity: id,
			LeaseDuration: 2 * time.Second, RenewDeadline: 1500 * time.Millisecond, RetryPeriod: 200 * time.Millisecond,
			OnStartedLeading: func(lctx context.Context) {
				n := leaders.Add(1)
				if n > maxLeaders.Load() {
					maxLeaders.Store(n)
				}
				started <- id
				<-lctx.Done()
				leaders.Add(-1)
			},
		}
		go func() { _ = le.Run(cctx) }()
		return le, ccancel
	}
	_, stopA := candidate("a")
	first := <-started
	_, stopB := candidate("b")
	defer stopB()
	select {
	case id := <-started:
		t.Fatalf("%s started leading while %s leads", id, first)
	case <-time.After(1 * time.Second):
	}
	if first != "a" {
		t.Fatalf("first leader %q, want a (b started later)", first)
	}
	stopA() // a releases the lease on the way out
	select {
	case id := <-started:
		if id != "b" {
			t.Fatalf("new leader %q, want b", id)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("b did not take over")
	}
	if maxLeaders.Load() > 1 {
		t.Errorf("%d leaders at once", maxLeaders.Load())
	}
}

// A candidate times the Lease on its own clock, from when it saw the Lease
// change: a holder whose renewTime looks an hour old (a skewed clock, or a
// renewal the server committed long after it was stamped) but which keeps
// renewing is never taken over; once the renewals stop, the candidate waits
// a whole lease duration and then takes over. (Judged by renewTime, the
// candidate took over at once while the holder still acted: two
// schedulers bound the same pods.)
func TestLeaderElectionTimesTheLeaseOnItsOwnClock(t *testing.T) {
	s := testserver.New(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	leases := client.For[*coordination.Lease](s.Client)
	holder, dur := "skewed", int32(2)
	old := meta.MicroTime{Time: time.Now().Add(-time.Hour)}
	l, err := leases.Create(ctx, &coordination.Lease{ObjectMeta: meta.ObjectMeta{Name: "skew-lock", Namespace: "kube-system"},
		Spec: coordination.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: &dur, RenewTime: &old}})
	if err != nil {
		t.Fatal(err)
	}
	var led atomic.Int64 // when the candidate started leading (unix nanos)
	le := &client.LeaderElection{Client: s.Client, Namespace: "kube-system", Name: "skew-lock", Identity: "candidate",
		LeaseDuration: 2 * time.Second, RenewDeadline: 1500 * time.Millisecond, RetryPeriod: 100 * time.Millisecond,
		OnStartedLeading: func(lctx context.Context) { led.Store(time.Now().UnixNano()); <-lctx.Done() }}
	cctx, stop := context.WithCancel(ctx)
	defer stop()
	go func() { _ = le.Run(cctx) }()
	// The holder renews every 500 ms for 4 s, each time with an hour-old renewTime.
	for i := range 8 {
		time.Sleep(500 * time.Millisecond)
		if led.Load() != 0 {
			t.Fatal("the candidate took over a Lease that was being renewed")
		}
		l.Spec.RenewTime = &meta.MicroTime{Time: old.Add(time.Duration(i+1) * time.Second)}
		if l, err = leases.Update(ctx, l); err != nil {
			t.Fatal(err)
		}
	}
	stopped := time.Now()
	for led.Load() == 0 && time.Since(stopped) < 10*time.Second {
		time.Sleep(20 * time.Millisecond)
	}
	if led.Load() == 0 {
		t.Fatal("the candidate did not take over after the renewals stopped")
	}
	if after := time.Unix(0, led.Load()).Sub(stopped); after < 1500*time.Millisecond {
		t.Errorf("took over %v after the last renewal; want a whole lease duration (2 s)", after)
	}
}
