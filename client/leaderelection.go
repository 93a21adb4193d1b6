package client

import (
	"context"
	"fmt"
	"time"

	"github.com/kobune/kobune/api/coordination"
	"github.com/kobune/kobune/api/meta"
)

// LeaderElection lets several replicas of a component run while only one
// acts, using a Lease object as the lock (client-go's leaderelection). The
// holder renews the Lease every RetryPeriod; the others take it over once it
// has not been renewed for LeaseDuration. Optimistic concurrency on the
// Lease makes the takeover exclusive: two candidates writing the same
// resourceVersion cannot both succeed.
type LeaderElection struct {
	Client    *Client
	Namespace string // usually kube-system
	Name      string // the lock, e.g. "kobune-scheduler"
	Identity  string // unique per replica, e.g. hostname_pid

	LeaseDuration time.Duration // default 15s
	RenewDeadline time.Duration // default 10s: give up leading if renewals fail this long
	RetryPeriod   time.Duration // default 2s
	Clock         Clock         // default the wall clock

	// OnStartedLeading runs (in its own goroutine) when this replica becomes
	// leader; its context ends when leadership is lost.
	OnStartedLeading func(ctx context.Context)
	// OnStoppedLeading runs when leadership ends.
	OnStoppedLeading func()
}

func (le *LeaderElection) defaults() {
	if le.LeaseDuration == 0 {
		le.LeaseDuration = 15 * time.Second
	}
	if le.RenewDeadline == 0 {
		le.RenewDeadline = 10 * time.Second
	}
	if le.RetryPeriod == 0 {
		le.RetryPeriod = 2 * time.Second
	}
	if le.Clock == nil {
		le.Clock = RealClock{}
	}
}

// Run campaigns until ctx ends; it leads at most once: after losing the
// lease it returns, and the process should exit so it starts clean.
func (le *LeaderElection) Run(ctx context.Context) error {
	le.defaults()
	leases := For[*coordination.Lease](le.Client)
	for {
		ok, err := le.tryAcquireOrRenew(ctx, leases)
		if ok {
			break
		}
		_ = err // another holder, or the server is away: try again
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-le.Clock.After(le.RetryPeriod):
		}
	}
	leadCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		if le.OnStartedLeading != nil {
			le.OnStartedLeading(leadCtx)
		}
	}()
	lastRenew := le.Clock.Now()
	for {
		select {
		case <-ctx.Done():
			cancel()
			<-done
			le.release(leases)
			if le.OnStoppedLeading != nil {
				le.OnStoppedLeading()
			}
			return ctx.Err()
		case <-le.Clock.After(le.RetryPeriod):
		}
		if ok, _ := le.tryAcquireOrRenew(ctx, leases); ok {
			lastRenew = le.Clock.Now()
			continue
		}
		if le.Clock.Now().Sub(lastRenew) > le.RenewDeadline {
			cancel()
			<-done
			if le.OnStoppedLeading != nil {
				le.OnStoppedLeading()
			}
			return fmt.Errorf("leader election: lost lease %s/%s", le.Namespace, le.Name)
		}
	}
}

func (le *LeaderElection) tryAcquireOrRenew(ctx context.Context, leases *Typed[*coordination.Lease]) (bool, error) {
	now := meta.MicroTime{Time: le.Clock.Now().UTC()}
	dur := int32(le.LeaseDuration / time.Second)
	lease, err := leases.Get(ctx, le.Namespace, le.Name)
	if IsNotFound(err) {
		l := &coordination.Lease{ObjectMeta: meta.ObjectMeta{Name: le.Name, Namespace: le.Namespace}}
		zero := int32(0)
		l.Spec = coordination.LeaseSpec{HolderIdentity: &le.Identity, LeaseDurationSeconds: &dur, AcquireTime: &now, RenewTime: &now, LeaseTransitions: &zero}
		_, err := leases.Create(ctx, l)
		return err == nil, err
	}
	if err != nil {
		return false, err
	}
	s := &lease.Spec
	holder := ""
	if s.HolderIdentity != nil {
		holder = *s.HolderIdentity
	}
	if holder != "" && holder != le.Identity && s.RenewTime != nil && s.LeaseDurationSeconds != nil &&
		le.Clock.Now().Before(s.RenewTime.Add(time.Duration(*s.LeaseDurationSeconds)*time.Second)) {
		return false, nil // held by someone else and not expired
	}
	if holder != le.Identity {
		s.AcquireTime = &now
		t := int32(0)
		if s.LeaseTransitions != nil {
			t = *s.LeaseTransitions
		}
		if holder != "" {
			t++
		}
		s.LeaseTransitions = &t
	}
	s.HolderIdentity = &le.Identity
	s.LeaseDurationSeconds = &dur
	s.RenewTime = &now
	_, err = leases.Update(ctx, lease)
	return err == nil, err
}

// release gives the lease up so another replica can take over at once.
func (le *LeaderElection) release(leases *Typed[*coordination.Lease]) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	lease, err := leases.Get(ctx, le.Namespace, le.Name)
	if err != nil || lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity != le.Identity {
		return
	}
	empty := ""
	lease.Spec.HolderIdentity = &empty
	_, _ = leases.Update(ctx, lease)
}
