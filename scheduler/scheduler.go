package scheduler

import (
	"context"
	"errors"
	"fmt"
	"log"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/client"
	"github.com/kobune/kobune/scheduler/framework"
	"github.com/kobune/kobune/scheduler/plugins"
)

// Config configures a scheduler.
type Config struct {
	// SchedulerName is the spec.schedulerName this scheduler serves.
	SchedulerName string
	// BackoffBase and BackoffMax bound the retry of unschedulable pods (1 s to 10 s).
	BackoffBase, BackoffMax time.Duration
	Logf                    func(format string, args ...any)
}

// Scheduler places pending pods on nodes.
type Scheduler struct {
	cfg      Config
	client   *client.Client
	pods     *client.Informer[*core.Pod]
	nodes    *client.Informer[*core.Node]
	queue    *Queue
	filters  []framework.FilterPlugin
	scores   map[framework.ScorePlugin]int64
	recorder *client.Recorder
	// Metrics are updated by every attempt; serve Metrics.Handler().
	Metrics *Metrics

	mu      sync.Mutex
	assumed map[string]*core.Pod // pod key → pod with its chosen node, until the informer shows the bind
}

// errUnschedulable marks an attempt where no node fit (as opposed to an error).
var errUnschedulable = errors.New("unschedulable")

// New returns a scheduler with the default plugins.
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
	s := &Scheduler{cfg: cfg, client: c,
		filters: plugins.DefaultFilters(), scores: plugins.DefaultScores(),
		recorder: &client.Recorder{Client: c, Component: cfg.SchedulerName},
		assumed:  map[string]*core.Pod{}}
	s.queue = newQueue(s.queueInfo, cfg.BackoffBase, cfg.BackoffMax, time.Now)
	s.Metrics = newMetrics(func() float64 {
		a, b, u := s.queue.Lens()
		return float64(a + b + u)
	})
	s.pods = client.NewInformer(client.For[*core.Pod](c), "", client.ListOptions{})
	s.pods.AddIndex(client.IndexByNodeName, client.IndexNodeName)
	s.nodes = client.NewInformer(client.For[*core.Node](c), "", client.ListOptions{})
	s.pods.AddHandler(client.Handler[*core.Pod]{
		OnAdd: s.podChanged,
		OnUpdate: func(old, p *core.Pod) {
			// Our own status writes (PodScheduled=False) must not requeue
			// the pod: only a bind, a spec change or a deletion matter.
			if p.Spec.NodeName != "" || p.Generation != old.Generation || p.DeletionTimestamp != nil {
				s.podChanged(p)
			}
		},
		OnDelete: func(p *core.Pod) { s.forget(meta.Key(p)); s.queue.MoveAllToActive() },
	})
	nodeChanged := func(*core.Node) { s.queue.MoveAllToActive() }
	s.nodes.AddHandler(client.Handler[*core.Node]{OnAdd: nodeChanged, OnUpdate: func(_, n *core.Node) { nodeChanged(n) }, OnDelete: nodeChanged})
	return s
}

func (s *Scheduler) mine(p *core.Pod) bool {
	return p.Spec.NodeName == "" && p.DeletionTimestamp == nil && p.Spec.SchedulerName == s.cfg.SchedulerName
}

func (s *Scheduler) podChanged(p *core.Pod) {
	if p.Spec.NodeName != "" {
		s.forget(meta.Key(p)) // the bind is visible: the cache has it for real now
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
	prio := int32(0)
	if p.Spec.Priority != nil {
		prio = *p.Spec.Priority
	}
	return prio, p.CreationTimestamp.Time, true
}

func (s *Scheduler) forget(key string) {
	s.mu.Lock()
	delete(s.assumed, key)
	s.mu.Unlock()
	s.queue.Forget(key)
}

// Run schedules until ctx ends. One worker: each decision sees the last.
func (s *Scheduler) Run(ctx context.Context) {
	go s.pods.Run(ctx)
	go s.nodes.Run(ctx)
	if !client.WaitForSync(ctx, s.pods.HasSynced, s.nodes.HasSynced) {
		return
	}
	go s.queue.Run(ctx.Done(), 200*time.Millisecond)
	for {
		key, ok := s.queue.Pop()
		if !ok {
			return
		}
		err := s.scheduleOne(ctx, key)
		if err != nil && ctx.Err() == nil && !errors.Is(err, errUnschedulable) {
			s.cfg.Logf("schedule %s: %s", key, client.Message(err))
		}
		s.queue.Done(key, errors.Is(err, errUnschedulable), err != nil)
	}
}

// scheduleOne decides for one pod and binds it.
func (s *Scheduler) scheduleOne(ctx context.Context, key string) error {
	pod, ok := s.pods.GetByKey(key)
	if !ok || !s.mine(pod) {
		return nil
	}
	s.mu.Lock()
	_, isAssumed := s.assumed[key]
	s.mu.Unlock()
	if isAssumed {
		return nil
	}
	nodes := s.snapshot()
	d := s.pick(ctx, pod, nodes)
	node := d.winner
	if node == "" {
		s.Metrics.Attempts.WithLabelValues("unschedulable").Inc()
		msg := failureMessage(len(nodes), d.reasons)
		_ = s.recorder.Event(ctx, pod, core.EventTypeWarning, "FailedScheduling", msg)
		_ = s.recorder.Event(ctx, pod, core.EventTypeNormal, "SchedulingDecision", d.String())
		if err := s.markUnschedulable(ctx, pod, msg); err != nil {
			return err
		}
		return fmt.Errorf("%w: %s", errUnschedulable, msg)
	}
	assumed := *pod
	assumed.Spec.NodeName = node
	s.mu.Lock()
	s.assumed[key] = &assumed
	s.mu.Unlock()
	if err := s.client.Bind(ctx, pod.Namespace, pod.Name, pod.UID, node); err != nil {
		s.forget(key) // undo the assumption
		s.Metrics.Attempts.WithLabelValues("error").Inc()
		if client.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("bind to %s: %w", node, err)
	}
	s.Metrics.Attempts.WithLabelValues("scheduled").Inc()
	s.Metrics.Latency.Observe(time.Since(pod.CreationTimestamp.Time).Seconds())
	_ = s.recorder.Event(ctx, pod, core.EventTypeNormal, "Scheduled", fmt.Sprintf("Successfully assigned %s/%s to %s", pod.Namespace, pod.Name, node))
	_ = s.recorder.Event(ctx, pod, core.EventTypeNormal, "SchedulingDecision", d.String())
	return nil
}

// markUnschedulable sets the pod's PodScheduled condition to False with
// reason Unschedulable and the message, as kube-scheduler does (written
// only when it changes).
func (s *Scheduler) markUnschedulable(ctx context.Context, pod *core.Pod, msg string) error {
	for _, c := range pod.Status.Conditions {
		if c.Type == core.PodScheduled && c.Status == meta.ConditionFalse && c.Reason == "Unschedulable" && c.Message == msg {
			return nil
		}
	}
	updated := *pod // the cached pod is shared: write a copy
	updated.Status.Conditions = nil
	for _, c := range pod.Status.Conditions {
		if c.Type != core.PodScheduled {
			updated.Status.Conditions = append(updated.Status.Conditions, c)
		}
	}
	updated.Status.Conditions = append(updated.Status.Conditions, core.PodCondition{Type: core.PodScheduled, Status: meta.ConditionFalse,
		Reason: "Unschedulable", Message: msg, LastTransitionTime: meta.Now()})
	_, err := client.For[*core.Pod](s.client).UpdateStatus(ctx, &updated)
	if client.IsNotFound(err) || client.IsConflict(err) {
		return nil // gone, or changed: the next attempt sees the new state
	}
	return err
}

// snapshot builds a NodeInfo per node from the cache and the assumed pods.
func (s *Scheduler) snapshot() []*framework.NodeInfo {
	nodes := s.nodes.List()
	sort.Slice(nodes, func(i, j int) bool { return nodes[i].Name < nodes[j].Name })
	s.mu.Lock()
	byNode := map[string][]*core.Pod{}
	for _, p := range s.assumed {
		byNode[p.Spec.NodeName] = append(byNode[p.Spec.NodeName], p)
	}
	s.mu.Unlock()
	out := make([]*framework.NodeInfo, 0, len(nodes))
	for _, n := range nodes {
		var pods []*core.Pod
		for _, p := range s.pods.ByIndex(client.IndexByNodeName, n.Name) {
			if p.Status.Phase != core.PodSucceeded && p.Status.Phase != core.PodFailed {
				pods = append(pods, p)
			}
		}
		out = append(out, framework.NewNodeInfo(n, append(pods, byNode[n.Name]...)...))
	}
	return out
}

// decision is the record of one scheduling attempt: for each node, the
// filter that rejected it and why, or its score per plugin; and the winner.
// Kubernetes keeps scores to itself; Kobune shows them (kobectl describe pod
// lists the SchedulingDecision event).
type decision struct {
	winner  string
	reasons map[string]int // rejection reason → number of nodes
	nodes   []nodeVerdict
}

type nodeVerdict struct {
	node       string
	rejectedBy string
	reasons    []string
	scores     map[string]int64
	total      int64
}

// maxRecordedNodes bounds the record's length on large clusters.
const maxRecordedNodes = 20

func (d *decision) String() string {
	var b strings.Builder
	sort.SliceStable(d.nodes, func(i, j int) bool {
		a, c := d.nodes[i], d.nodes[j]
		if (a.rejectedBy == "") != (c.rejectedBy == "") {
			return a.rejectedBy == ""
		}
		return a.total > c.total
	})
	for i, v := range d.nodes {
		if i == maxRecordedNodes {
			fmt.Fprintf(&b, "; and %d more nodes", len(d.nodes)-i)
			break
		}
		if i > 0 {
			b.WriteString("; ")
		}
		if v.rejectedBy != "" {
			fmt.Fprintf(&b, "%s: rejected by %s (%s)", v.node, v.rejectedBy, strings.Join(v.reasons, ", "))
			continue
		}
		names := make([]string, 0, len(v.scores))
		for n := range v.scores {
			names = append(names, n)
		}
		sort.Strings(names)
		parts := make([]string, len(names))
		for j, n := range names {
			parts[j] = fmt.Sprintf("%s %d", n, v.scores[n])
		}
		fmt.Fprintf(&b, "%s: score %d (%s)", v.node, v.total, strings.Join(parts, ", "))
		if v.node == d.winner {
			b.WriteString(" <- chosen")
		}
	}
	return b.String()
}

// pick filters the nodes, scores the feasible ones (normalizing the
// plugins that ask for it) and returns the decision.
func (s *Scheduler) pick(ctx context.Context, pod *core.Pod, nodes []*framework.NodeInfo) *decision {
	d := &decision{reasons: map[string]int{}}
	var feasible []*framework.NodeInfo
	for _, n := range nodes {
		v := nodeVerdict{node: n.Node.Name}
		for _, f := range s.filters {
			if st := f.Filter(ctx, pod, n); !st.IsSuccess() {
				for _, r := range st.Reasons {
					d.reasons[r]++
				}
				v.rejectedBy, v.reasons = f.Name(), st.Reasons
				break
			}
		}
		if v.rejectedBy == "" {
			v.scores = map[string]int64{}
			feasible = append(feasible, n)
		}
		d.nodes = append(d.nodes, v)
	}
	verdicts := map[string]*nodeVerdict{}
	for i := range d.nodes {
		verdicts[d.nodes[i].node] = &d.nodes[i]
	}
	for p, weight := range s.scores {
		raw := map[string]int64{}
		for _, n := range feasible {
			if score, st := p.Score(ctx, pod, n); st.IsSuccess() {
				raw[n.Node.Name] = score
			}
		}
		if norm, ok := p.(framework.ScoreNormalizer); ok {
			norm.Normalize(raw)
		}
		for name, score := range raw {
			verdicts[name].scores[p.Name()] = score
			verdicts[name].total += weight * score
		}
	}
	best := int64(-1)
	for _, n := range feasible { // nodes are sorted by name: ties go to the first
		if v := verdicts[n.Node.Name]; v.total > best {
			d.winner, best = v.node, v.total
		}
	}
	return d
}

// failureMessage is Kubernetes' "0/3 nodes are available: ..." message.
func failureMessage(nodes int, reasons map[string]int) string {
	parts := make([]string, 0, len(reasons))
	for r, n := range reasons {
		parts = append(parts, fmt.Sprintf("%d %s", n, r))
	}
	sort.Strings(parts)
	msg := fmt.Sprintf("0/%d nodes are available", nodes)
	if len(parts) > 0 {
		msg += ": " + strings.Join(parts, ", ")
	}
	return msg + "."
}
