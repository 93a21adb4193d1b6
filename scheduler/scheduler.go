package scheduler

import (
	"context"
	"errors"
	"fmt"
	"log"
	"runtime"
	"sync"
	"time"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/api/policy"
	"github.com/kobune/kobune/client"
	"github.com/kobune/kobune/scheduler/framework"
)

// DecisionAnnotation is the pod annotation the bind sets to the decision
// record (each node's verdict and the winner); `kobectl describe pod` shows it.
const DecisionAnnotation = core.SchedulingDecisionAnnotation

// Config configures a scheduler.
type Config struct {
	// SchedulerName is the spec.schedulerName this scheduler serves.
	SchedulerName string
	// BackoffBase and BackoffMax bound the retry of unschedulable pods (1 s to 10 s).
	BackoffBase, BackoffMax time.Duration
	// Profile is the plugins and weights (nil: DefaultProfile).
	Profile *Profile
	// Parallelism is how many goroutines filter nodes (0: GOMAXPROCS).
	Parallelism int
	// MaxInFlightBinds bounds the binds running at once (0: 256).
	MaxInFlightBinds int
	Logf             func(format string, args ...any)
}

// Scheduler places pending pods on nodes.
type Scheduler struct {
	cfg Config
	// fw runs the profile's plugins; pick (schedule_one.go) decides which
	// nodes to run them on.
	fw       *framework.Framework
	client   *client.Client
	pods     *client.Informer[*core.Pod]
	nodes    *client.Informer[*core.Node]
	budgets  *client.Informer[*policy.PodDisruptionBudget]
	volumes  *volumes
	queue    *Queue
	cache    *cache
	recorder *client.AsyncRecorder
	binds    chan struct{} // semaphore of in-flight binds
	inFlight sync.WaitGroup
	// nextStart rotates where filtering starts, so that the nodes not
	// examined when the search stops early differ from pod to pod.
	nextStart int
	// Metrics are updated by every attempt; serve Metrics.Handler().
	Metrics *Metrics
}

// errUnschedulable marks an attempt where no node fit (as opposed to an error).
var errUnschedulable = errors.New("unschedulable")

// New returns a scheduler.
func New(cfg Config, c *client.Client) *Scheduler {
	if cfg.SchedulerName == "" {
		cfg.SchedulerName = core.DefaultSchedulerName
	}
	if cfg.BackoffBase == 0 {
		cfg.BackoffBase = time.Second
	}
	if cfg.BackoffMax == 0 {
		cfg.BackoffMax = 10 * time.Second
	}
	if cfg.Logf == nil {
		cfg.Logf = log.Printf
	}
	if cfg.Profile == nil {
		cfg.Profile = DefaultProfile()
	}
	if cfg.Parallelism <= 0 {
		cfg.Parallelism = runtime.GOMAXPROCS(0)
	}
	if cfg.MaxInFlightBinds <= 0 {
		cfg.MaxInFlightBinds = 256
	}
	s := &Scheduler{cfg: cfg, fw: cfg.Profile.framework(cfg.Parallelism), client: c, cache: newCache(),
		recorder: client.NewAsyncRecorder(&client.Recorder{Client: c, Component: cfg.SchedulerName}, 10000),
		binds:    make(chan struct{}, cfg.MaxInFlightBinds)}
	s.queue = newQueue(s.queueInfo, cfg.BackoffBase, cfg.BackoffMax, time.Now)
	s.Metrics = newMetrics(s.queue.Lens, func() float64 { return float64(s.recorder.Dropped()) })
	s.pods = client.NewInformer(client.For[*core.Pod](c), "", client.ListOptions{})
	s.nodes = client.NewInformer(client.For[*core.Node](c), "", client.ListOptions{})
	s.budgets = client.NewInformer(client.For[*policy.PodDisruptionBudget](c), "", client.ListOptions{})
	s.volumes = newVolumes(c, func() { s.queue.MoveAllToActive() })
	s.pods.AddHandler(client.Handler[*core.Pod]{
		OnAdd: func(p *core.Pod) { s.cache.setPod(p); s.podChanged(p) },
		OnUpdate: func(old, p *core.Pod) {
			s.cache.setPod(p)
			// Our own status writes (PodScheduled=False, the nominated
			// node) must not requeue the pod: only a bind, a spec change
			// or a deletion matter.
			if p.Spec.NodeName != "" || p.Generation != old.Generation || p.DeletionTimestamp != nil {
				s.podChanged(p)
			}
			// A pod that ends frees its room.
			if p.Spec.NodeName != "" && p.Status.Phase != old.Status.Phase && (p.Status.Phase == core.PodSucceeded || p.Status.Phase == core.PodFailed) {
				s.queue.MoveAllToActive()
			}
		},
		OnDelete: func(p *core.Pod) {
			s.cache.removePod(p)
			s.queue.Forget(meta.Key(p))
			s.queue.MoveAllToActive()
		},
	})
	s.nodes.AddHandler(client.Handler[*core.Node]{
		OnAdd: func(n *core.Node) { s.cache.setNode(n); s.queue.MoveAllToActive() },
		OnUpdate: func(old, n *core.Node) {
			s.cache.setNode(n)
			// A heartbeat changes nothing a filter looks at.
			if old.Generation != n.Generation || !sameSchedulingStatus(old, n) {
				s.queue.MoveAllToActive()
			}
		},
		OnDelete: func(n *core.Node) { s.cache.removeNode(n.Name); s.queue.MoveAllToActive() },
	})
	return s
}

// sameSchedulingStatus reports whether a node's allocatable and Ready
// condition are unchanged.
func sameSchedulingStatus(a, b *core.Node) bool {
	ready := func(n *core.Node) meta.ConditionStatus {
		for _, c := range n.Status.Conditions {
			if c.Type == core.NodeReady {
				return c.Status
			}
		}
		return ""
	}
	if ready(a) != ready(b) || len(a.Status.Allocatable) != len(b.Status.Allocatable) {
		return false
	}
	for k, q := range a.Status.Allocatable {
		if o, ok := b.Status.Allocatable[k]; !ok || o.Cmp(q) != 0 {
			return false
		}
	}
	return true
}

// mine: the pod waits for this scheduler. A pod with scheduling gates
// left is not queued at all (kube-scheduler's SchedulingGates PreEnqueue
// plugin); taking the last gate away changes the pod's generation, and
// the update queues it.
func (s *Scheduler) mine(p *core.Pod) bool {
	return p.Spec.NodeName == "" && p.DeletionTimestamp == nil && p.Spec.SchedulerName == s.cfg.SchedulerName && len(p.Spec.SchedulingGates) == 0
}

func (s *Scheduler) podChanged(p *core.Pod) {
	if p.Spec.NodeName != "" {
		s.queue.Forget(meta.Key(p)) // bound: nothing left to do
		return
	}
	if s.mine(p) {
		s.queue.Add(meta.Key(p))
	}
}

// queueInfo gives the queue a pending pod's priority and age.
func (s *Scheduler) queueInfo(key string) (int32, time.Time, bool) {
	p, ok := s.pods.GetByKey(key)
	if !ok {
		return 0, time.Time{}, false
	}
	return framework.PodPriority(p), p.CreationTimestamp.Time, true
}

// Run schedules until ctx ends. One goroutine decides, so each decision
// sees the last one's assumption; binds run in the background.
func (s *Scheduler) Run(ctx context.Context) {
	go s.pods.Run(ctx)
	go s.nodes.Run(ctx)
	go s.budgets.Run(ctx)
	go s.recorder.Run(ctx, 2)
	s.volumes.run(ctx)
	if !client.WaitForSync(ctx, append(s.volumes.synced(), s.pods.HasSynced, s.nodes.HasSynced, s.budgets.HasSynced)...) {
		return
	}
	go s.queue.Run(ctx.Done(), 200*time.Millisecond)
	defer s.inFlight.Wait()
	for {
		key, ok := s.queue.Pop()
		if !ok {
			return
		}
		async, err := s.scheduleOne(ctx, key)
		if async {
			continue // the bind calls Done
		}
		s.done(ctx, key, err)
	}
}

func (s *Scheduler) done(ctx context.Context, key string, err error) {
	if err != nil && ctx.Err() == nil && !errors.Is(err, errUnschedulable) {
		s.cfg.Logf("schedule %s: %s", key, client.Message(err))
	}
	s.queue.Done(key, errors.Is(err, errUnschedulable), err != nil)
}

// scheduleOne decides for one pod; when it found a node it starts the bind
// and reports async.
func (s *Scheduler) scheduleOne(ctx context.Context, key string) (async bool, err error) {
	pod, ok := s.pods.GetByKey(key)
	if !ok || !s.mine(pod) || s.cache.isPlaced(key) {
		return false, nil
	}
	start := time.Now()
	var d *decision
	var nominate *framework.PostFilterResult
	var why *framework.Status
	var total int
	s.cache.read(pod, func(snap snapshot) {
		total = len(snap.nodes)
		d = s.pick(ctx, pod, snap)
		if d.winner == "" && total > 0 {
			// PostFilter: preemption looks for room (kube-scheduler runs it
			// on the same snapshot).
			nominate, why = s.fw.RunPostFilterPlugins(ctx, d.state, pod, d.verdicts())
		}
	})
	s.Metrics.Algorithm.Observe(time.Since(start).Seconds())

	if d.winner == "" {
		s.Metrics.Attempts.WithLabelValues("unschedulable").Inc()
		msg := framework.FitErrorMessage(total, d.reasons, d.preFilterMessage)
		if why != nil {
			msg += " " + why.Message()
		}
		s.recorder.Event(pod, core.EventTypeWarning, "FailedScheduling", msg)
		s.recorder.Event(pod, core.EventTypeNormal, "SchedulingDecision", d.String())
		if nominate != nil {
			if err := s.preempt(ctx, pod, nominate, msg); err != nil {
				return false, err
			}
		} else if err := s.markUnschedulable(ctx, pod, msg, pod.Status.NominatedNodeName); err != nil {
			return false, err
		}
		return false, fmt.Errorf("%w: %s", errUnschedulable, msg)
	}

	s.cache.assume(pod, d.winner)
	select {
	case s.binds <- struct{}{}:
	case <-ctx.Done():
		s.cache.forget(pod)
		return false, ctx.Err()
	}
	s.inFlight.Add(1)
	go func() {
		defer s.inFlight.Done()
		defer func() { <-s.binds }()
		s.done(ctx, key, s.bind(ctx, pod, d))
	}()
	return true, nil
}

// bind writes the decision; a failed bind undoes the assumption.
func (s *Scheduler) bind(ctx context.Context, pod *core.Pod, d *decision) error {
	node := d.winner
	if err := s.volumes.selectNode(ctx, s.client, pod, node); err != nil {
		s.cache.forget(pod)
		return err
	}
	err := s.client.Bind(ctx, pod.Namespace, pod.Name, pod.UID, node, map[string]string{DecisionAnnotation: d.String()})
	if err != nil {
		s.cache.forget(pod)
		s.Metrics.Attempts.WithLabelValues("error").Inc()
		if client.IsNotFound(err) {
			return nil // deleted meanwhile
		}
		return fmt.Errorf("bind to %s: %w", node, err)
	}
	s.Metrics.Attempts.WithLabelValues("scheduled").Inc()
	s.Metrics.Latency.Observe(time.Since(pod.CreationTimestamp.Time).Seconds())
	s.recorder.Event(pod, core.EventTypeNormal, "Scheduled", fmt.Sprintf("Successfully assigned %s/%s to %s", pod.Namespace, pod.Name, node))
	return nil
}

// markUnschedulable sets the pod's PodScheduled condition to False with
// reason Unschedulable and the message, and status.nominatedNodeName, as
// kube-scheduler does (written only when something changes).
func (s *Scheduler) markUnschedulable(ctx context.Context, pod *core.Pod, msg, nominated string) error {
	for _, c := range pod.Status.Conditions {
		if c.Type == core.PodScheduled && c.Status == meta.ConditionFalse && c.Reason == "Unschedulable" && c.Message == msg && pod.Status.NominatedNodeName == nominated {
			return nil
		}
	}
	return s.updateStatus(ctx, pod, func(p *core.Pod) {
		p.Status.NominatedNodeName = nominated
		var conds []core.PodCondition
		for _, c := range p.Status.Conditions {
			if c.Type != core.PodScheduled {
				conds = append(conds, c)
			}
		}
		p.Status.Conditions = append(conds, core.PodCondition{Type: core.PodScheduled, Status: meta.ConditionFalse,
			Reason: "Unschedulable", Message: msg, LastTransitionTime: meta.Now()})
	})
}

// updateStatus writes a changed copy of a cached pod's status (the cached
// pod is shared and never modified). A pod that is gone or changed meanwhile
// is left alone: the next attempt sees its new state.
func (s *Scheduler) updateStatus(ctx context.Context, pod *core.Pod, change func(*core.Pod)) error {
	updated := *pod
	updated.Status.Conditions = append([]core.PodCondition(nil), pod.Status.Conditions...)
	change(&updated)
	_, err := client.For[*core.Pod](s.client).UpdateStatus(ctx, &updated)
	if client.IsNotFound(err) || client.IsConflict(err) {
		return nil
	}
	return err
}
