package client_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

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
