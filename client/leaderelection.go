package client

import (
	"context"
	"flag"
	"fmt"
	"log"
	"net/http"
	"os"
	"sync/atomic"
	"time"

	"github.com/kobune/kobune/api/coordination"
	"github.com/kobune/kobune/api/meta"
)

// LeaderElection lets several replicas of a component run while only one
// acts, using a Lease object as the lock (client-go's leaderelection). The
// holder renews the Lease every RetryPeriod; the others take it over once
// they have seen it unchanged for LeaseDuration. Optimistic concurrency on
// the Lease makes the takeover exclusive: two candidates writing the same
// resourceVersion cannot both succeed.
//
// Two rules keep two leaders from acting at once, whatever the clocks and
// however slow the API server (as client-go's observedTime does):
//
//   - a candidate times a Lease on its own clock, from when *it* saw the
//     Lease change, never from the renewTime written in it: a renewal that
//     the server committed a second after the holder stamped it would
//     otherwise look a second older than it is, and a candidate could take
//     over while the holder still acts;
//   - the holder stops acting RenewDeadline after the *start* of its last
//     successful renewal, even while a renewal request is still under way,
//     and RenewDeadline is shorter than LeaseDuration.
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

	// observed is the Lease as this replica last saw it change, and when.
	observedRecord string
	observedTime   time.Time
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
	if le.RenewDeadline >= le.LeaseDuration {
		return fmt.Errorf("leader election: the renew deadline (%v) must be shorter than the lease duration (%v)", le.RenewDeadline, le.LeaseDuration)
	}
	leases := For[*coordination.Lease](le.Client)
	var lastRenew time.Time // when the last successful acquire or renewal started
	for {
		started := le.Clock.Now()
		ok, err := le.tryAcquireOrRenew(ctx, leases, started)
		if ok {
			lastRenew = started
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
	stop := func() {
		cancel()
		<-done
		if le.OnStoppedLeading != nil {
			le.OnStoppedLeading()
		}
	}
	for {
		deadline := lastRenew.Add(le.RenewDeadline)
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
		started := le.Clock.Now()
		// A renewal may not outlive the deadline: past it, another replica
		// may lead, so this one must have stopped.
		rctx, rcancel := context.WithTimeout(ctx, deadline.Sub(started))
		ok, _ := le.tryAcquireOrRenew(rctx, leases, started)
		rcancel()
		if ok && le.Clock.Now().Before(deadline) {
			lastRenew = started
			continue
		}
		if !le.Clock.Now().Before(deadline) {
			stop()
			return fmt.Errorf("leader election: lost lease %s/%s (not renewed within %v)", le.Namespace, le.Name, le.RenewDeadline)
		}
	}
}

func (le *LeaderElection) tryAcquireOrRenew(ctx context.Context, leases *Typed[*coordination.Lease], started time.Time) (bool, error) {
	now := meta.MicroTime{Time: started.UTC()}
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
	// The record as seen: a change of holder or renewal restarts the clock.
	record := holder + "/" + lease.ResourceVersion
	if record != le.observedRecord {
		le.observedRecord, le.observedTime = record, le.Clock.Now()
	}
	leaseFor := le.LeaseDuration
	if s.LeaseDurationSeconds != nil {
		leaseFor = time.Duration(*s.LeaseDurationSeconds) * time.Second
	}
	if holder != "" && holder != le.Identity && le.Clock.Now().Before(le.observedTime.Add(leaseFor)) {
		return false, nil // held by someone else, seen renewed within its duration
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

// LeaderFlags are a component's --leader-elect flags, as kube-scheduler
// and kube-controller-manager have them.
type LeaderFlags struct {
	Elect                                     bool
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
}

// Register adds the flags; lock names the Lease in the help text.
func (f *LeaderFlags) Register(fs *flag.FlagSet, lock string) {
	fs.BoolVar(&f.Elect, "leader-elect", true, "run only while holding the Lease "+lock+", so that several replicas can run and one acts")
	fs.DurationVar(&f.LeaseDuration, "leader-elect-lease-duration", 15*time.Second, "how long a leader's Lease holds without renewal before a standby takes over")
	fs.DurationVar(&f.RenewDeadline, "leader-elect-renew-deadline", 10*time.Second, "how long the leader keeps trying to renew before it gives up leading")
	fs.DurationVar(&f.RetryPeriod, "leader-elect-retry-period", 2*time.Second, "how often to try to acquire or renew the Lease")
}

// Run calls run at once without --leader-elect; with it, while this
// process (identity hostname_pid) holds the Lease kube-system/name. It
// returns when leading ends (the process should exit and start clean).
func (f *LeaderFlags) Run(ctx context.Context, c *Client, component, name string, run func(context.Context)) error {
	if !f.Elect {
		run(ctx)
		return nil
	}
	host, _ := os.Hostname()
	// Its own connection, as kube-scheduler's leader election has its own
	// client: the Lease renewals do not queue behind the component's own
	// burst of requests (a new leader starting 256 binds at once).
	ec, err := c.Another()
	if err != nil {
		return err
	}
	defer ec.Close()
	le := &LeaderElection{Client: ec, Namespace: "kube-system", Name: name, Identity: fmt.Sprintf("%s_%d", host, os.Getpid()),
		OnStartedLeading: run, LeaseDuration: f.LeaseDuration, RenewDeadline: f.RenewDeadline, RetryPeriod: f.RetryPeriod}
	log.Printf("%s: waiting to lead (Lease kube-system/%s, identity %s)", component, name, le.Identity)
	return le.Run(ctx)
}

// Component is a leader-elected component's main loop, the shape
// kobune-scheduler and kobune-controller share (as kube-scheduler and
// kube-controller-manager do).
type Component struct {
	Name  string // "kobune-scheduler", for the log
	Lease string // the Lease in kube-system
	// MetricsListen serves /healthz, /readyz and /metrics ("" off);
	// /readyz asks Ready while leading (a standby is ready).
	MetricsListen string
	Metrics       http.Handler
	Ready         func() error
	Run           func(context.Context)
}

// RunComponent serves the component's health and metrics and runs it
// while it leads (Run), until ctx ends. An error means the process should
// exit and start clean.
func (f *LeaderFlags) RunComponent(ctx context.Context, c *Client, comp Component) error {
	var leading Leading
	if comp.MetricsListen != "" {
		health := &HealthServer{Metrics: comp.Metrics}
		health.AddReadyCheck("informers-synced", leading.Check(comp.Ready))
		if err := health.Serve(ctx, comp.MetricsListen, log.Printf); err != nil {
			return err
		}
	}
	if err := f.Run(ctx, c, comp.Name, comp.Lease, leading.Wrap(comp.Run)); err != nil && ctx.Err() == nil {
		return fmt.Errorf("%w (exiting so a restart starts clean)", err)
	}
	return nil
}

// Leading runs run like Run and tells whether run is under way, for a
// ready check: a standby that does not lead is ready too (it is waiting,
// as it should), a leader only once ready says so.
type Leading struct{ on atomic.Bool }

// Wrap returns run, marking the time it runs.
func (l *Leading) Wrap(run func(context.Context)) func(context.Context) {
	return func(ctx context.Context) {
		l.on.Store(true)
		defer l.on.Store(false)
		run(ctx)
	}
}

// Check is a ready check: ready() while leading, nil while standing by.
func (l *Leading) Check(ready func() error) func() error {
	return func() error {
		if !l.on.Load() {
			return nil
		}
		return ready()
	}
}
