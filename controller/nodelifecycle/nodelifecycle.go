// Package nodelifecycle is kube-controller-manager's node lifecycle
// controller with its taint-based eviction:
//
//   - health: a node whose Lease (kube-node-lease/<node>) has not been
//     renewed for the grace period (--node-monitor-grace-period, 40 s) gets
//     its conditions set to Unknown ("Kubelet stopped posting node status.");
//   - taints: Ready Unknown → node.kubernetes.io/unreachable, Ready False →
//     node.kubernetes.io/not-ready, each as NoSchedule (the scheduler keeps
//     new pods away) and NoExecute (running pods are evicted); a Ready node
//     loses them;
//   - eviction: a pod on a node with a NoExecute taint it does not tolerate
//     is deleted; one that tolerates it for tolerationSeconds (the API
//     server adds 300 s for these two taints to every pod) is deleted when
//     that time has passed since the taint was added. Evictions go through a
//     token bucket (--node-eviction-rate), so a zone going dark does not
//     turn into a storm of deletions.
//
// The pods' owners (ReplicaSets, ...) then make replacements, which the
// scheduler places on healthy nodes.
package nodelifecycle

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/kobune/kobune/api/coordination"
	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/client"
	"github.com/kobune/kobune/controller"
)

// Name is the controller's name in logs and events.
const Name = "node-lifecycle-controller"

// The taints, with Kubernetes' keys.
const (
	TaintNotReady    = "node.kubernetes.io/not-ready"
	TaintUnreachable = "node.kubernetes.io/unreachable"
	leaseNamespace   = "kube-node-lease"
)

// Config tunes the controller.
type Config struct {
	// GracePeriod is how long a Lease may go unrenewed before the node is
	// Unknown (40 s).
	GracePeriod time.Duration
	// EvictionRate is how many pods may be evicted per second (burst of
	// the same size, at least 1); 0 means 10.
	EvictionRate float64
}

// Controller watches nodes, their Leases and the pods on them.
type Controller struct {
	cfg      Config
	client   *client.Client
	nodes    *client.Informer[*core.Node]
	leases   *client.Informer[*coordination.Lease]
	pods     *client.Informer[*core.Pod]
	recorder *client.AsyncRecorder
	now      func() time.Time
	bucket   *bucket
	// evicted remembers the pods deleted lately, so that a pass whose
	// cache has not shown the deletion yet does not delete them again.
	evictedMu sync.Mutex
	evicted   map[string]time.Time
	// Loop is the controller's queue (node names) and workers.
	Loop *controller.Loop
}

// New returns the controller and registers its handlers.
func New(c *client.Client, inf *controller.Informers, recorder *client.AsyncRecorder, cfg Config) *Controller {
	if cfg.GracePeriod == 0 {
		cfg.GracePeriod = 40 * time.Second
	}
	if cfg.EvictionRate <= 0 {
		cfg.EvictionRate = 10
	}
	nc := &Controller{cfg: cfg, client: c, nodes: inf.Nodes, leases: inf.Leases, pods: inf.Pods, recorder: recorder, now: time.Now, evicted: map[string]time.Time{}}
	nc.bucket = newBucket(cfg.EvictionRate, func() time.Time { return nc.now() })
	nc.Loop = controller.NewLoop(Name, nc, 3)
	byName := func(name string) { nc.Loop.Queue.Add(name) }
	inf.Nodes.AddHandler(client.Handler[*core.Node]{OnAdd: func(n *core.Node) { byName(n.Name) }, OnUpdate: func(_, n *core.Node) { byName(n.Name) }})
	inf.Leases.AddHandler(client.Handler[*coordination.Lease]{OnAdd: func(l *coordination.Lease) { byName(l.Name) }, OnUpdate: func(_, l *coordination.Lease) { byName(l.Name) }})
	// A pod placed on a tainted node must be looked at too.
	inf.Pods.AddHandler(client.Handler[*core.Pod]{
		OnAdd: func(p *core.Pod) {
			if p.Spec.NodeName != "" {
				byName(p.Spec.NodeName)
			}
		},
		OnUpdate: func(old, p *core.Pod) {
			if p.Spec.NodeName != "" && old.Spec.NodeName == "" {
				byName(p.Spec.NodeName)
			}
		},
	})
	return nc
}

// Reconcile implements controller.Reconciler for a node name.
func (nc *Controller) Reconcile(ctx context.Context, name string) (controller.Result, error) {
	n, ok := nc.nodes.Get("", name)
	if !ok {
		return controller.Result{}, nil
	}
	now := nc.now()
	var requeue time.Duration
	renewed := nc.lastRenewal(n)
	if expires := renewed.Add(nc.cfg.GracePeriod); now.Before(expires) {
		requeue = expires.Sub(now) + 100*time.Millisecond
	} else if ready(n) != meta.ConditionUnknown {
		var err error
		if n, err = nc.markUnknown(ctx, n, now); err != nil {
			return controller.Result{}, err
		}
	}
	n, err := nc.syncTaints(ctx, n, now)
	if err != nil {
		return controller.Result{}, err
	}
	wait, err := nc.evict(ctx, n, now)
	if err != nil {
		return controller.Result{}, err
	}
	if wait > 0 && (requeue == 0 || wait < requeue) {
		requeue = wait
	}
	return controller.Result{RequeueAfter: requeue}, nil
}

// lastRenewal is when the node last showed life: its Lease's renewTime,
// or its creation when it has no Lease yet.
func (nc *Controller) lastRenewal(n *core.Node) time.Time {
	if l, ok := nc.leases.Get(leaseNamespace, n.Name); ok && l.Spec.RenewTime != nil {
		return l.Spec.RenewTime.Time
	}
	return n.CreationTimestamp.Time
}

func ready(n *core.Node) meta.ConditionStatus {
	for _, c := range n.Status.Conditions {
		if c.Type == core.NodeReady {
			return c.Status
		}
	}
	return meta.ConditionUnknown
}

// markUnknown sets every condition to Unknown, as Kubernetes does.
func (nc *Controller) markUnknown(ctx context.Context, n *core.Node, now time.Time) (*core.Node, error) {
	updated := *n
	updated.Status.Conditions = nil
	t := meta.NewTime(now)
	for _, c := range n.Status.Conditions {
		if c.Status != meta.ConditionUnknown {
			c.LastTransitionTime = t
		}
		c.Status, c.Reason, c.Message = meta.ConditionUnknown, "NodeStatusUnknown", "Kubelet stopped posting node status."
		updated.Status.Conditions = append(updated.Status.Conditions, c)
	}
	if len(updated.Status.Conditions) == 0 {
		updated.Status.Conditions = []core.NodeCondition{{Type: core.NodeReady, Status: meta.ConditionUnknown, Reason: "NodeStatusNeverUpdated",
			Message: "Kubelet never posted node status.", LastTransitionTime: t}}
	}
	out, err := client.For[*core.Node](nc.client).UpdateStatus(ctx, &updated)
	if err != nil {
		return nil, fmt.Errorf("mark node %s Unknown: %w", n.Name, err)
	}
	nc.recorder.Event(n, core.EventTypeNormal, "NodeNotReady", fmt.Sprintf("Node %s status is now: NodeNotReady", n.Name))
	return out, nil
}

// syncTaints makes the not-ready and unreachable taints follow Ready.
func (nc *Controller) syncTaints(ctx context.Context, n *core.Node, now time.Time) (*core.Node, error) {
	var want string
	switch ready(n) {
	case meta.ConditionUnknown:
		want = TaintUnreachable
	case meta.ConditionFalse:
		want = TaintNotReady
	}
	var kept []core.Taint
	changed := false
	has := map[core.TaintEffect]bool{}
	for _, t := range n.Spec.Taints {
		lifecycle := t.Key == TaintNotReady || t.Key == TaintUnreachable
		switch {
		case lifecycle && t.Key != want:
			changed = true
		case lifecycle:
			has[t.Effect] = true
			kept = append(kept, t)
		default:
			kept = append(kept, t)
		}
	}
	if want != "" {
		added := meta.NewTime(now)
		for _, e := range []core.TaintEffect{core.TaintNoSchedule, core.TaintNoExecute} {
			if !has[e] {
				kept = append(kept, core.Taint{Key: want, Effect: e, TimeAdded: &added})
				changed = true
			}
		}
	}
	if !changed {
		return n, nil
	}
	updated := *n
	updated.Spec.Taints = kept
	out, err := client.For[*core.Node](nc.client).Update(ctx, &updated)
	if err != nil {
		return nil, fmt.Errorf("taint node %s: %w", n.Name, err)
	}
	return out, nil
}

// evict deletes the pods on the node that do not tolerate its NoExecute
// taints (any longer); it returns when the next toleration runs out.
func (nc *Controller) evict(ctx context.Context, n *core.Node, now time.Time) (time.Duration, error) {
	var noExec []core.Taint
	for _, t := range n.Spec.Taints {
		if t.Effect == core.TaintNoExecute {
			noExec = append(noExec, t)
		}
	}
	if len(noExec) == 0 {
		return 0, nil
	}
	var next time.Duration
	pods := client.For[*core.Pod](nc.client)
	for _, p := range nc.pods.ByIndex(client.IndexByNodeName, n.Name) {
		if p.DeletionTimestamp != nil || p.Status.Phase == core.PodSucceeded || p.Status.Phase == core.PodFailed {
			continue
		}
		at, ok := evictionTime(p, noExec)
		if !ok {
			continue // tolerates them for ever
		}
		if wait := at.Sub(now); wait > 0 {
			if next == 0 || wait < next {
				next = wait
			}
			continue
		}
		if nc.recentlyEvicted(p.UID, now) {
			continue
		}
		if wait := nc.bucket.take(); wait > 0 {
			if next == 0 || wait < next {
				next = wait
			}
			continue
		}
		err := pods.Delete(ctx, p.Namespace, p.Name, client.DeleteOptions{UID: p.UID})
		if err != nil && !client.IsNotFound(err) {
			return 0, fmt.Errorf("evict %s/%s: %w", p.Namespace, p.Name, err)
		}
		nc.markEvicted(p.UID, now)
		nc.recorder.Event(p, core.EventTypeNormal, "TaintManagerEviction", "Marking for deletion Pod "+p.Namespace+"/"+p.Name)
	}
	return next, nil
}

func (nc *Controller) recentlyEvicted(uid string, now time.Time) bool {
	nc.evictedMu.Lock()
	defer nc.evictedMu.Unlock()
	for u, at := range nc.evicted {
		if now.Sub(at) > time.Minute {
			delete(nc.evicted, u)
		}
	}
	_, ok := nc.evicted[uid]
	return ok
}

func (nc *Controller) markEvicted(uid string, now time.Time) {
	nc.evictedMu.Lock()
	nc.evicted[uid] = now
	nc.evictedMu.Unlock()
}

// evictionTime is when a pod must leave a node with these NoExecute
// taints: now for an untolerated taint, the taint's time plus
// tolerationSeconds for a bounded toleration; ok is false when it may stay.
func evictionTime(p *core.Pod, taints []core.Taint) (time.Time, bool) {
	var at time.Time
	found := false
	for i := range taints {
		t := &taints[i]
		added := time.Time{}
		if t.TimeAdded != nil {
			added = t.TimeAdded.Time
		}
		idx := slices.IndexFunc(p.Spec.Tolerations, func(tol core.Toleration) bool { return tol.ToleratesTaint(t) })
		var when time.Time
		switch {
		case idx < 0:
			when = added // untolerated: at once
		case p.Spec.Tolerations[idx].TolerationSeconds == nil:
			continue // tolerated for ever
		default:
			when = added.Add(time.Duration(*p.Spec.Tolerations[idx].TolerationSeconds) * time.Second)
		}
		if !found || when.Before(at) {
			at, found = when, true
		}
	}
	return at, found
}

// bucket is a token bucket: rate tokens per second, as many at most.
type bucket struct {
	mu     sync.Mutex
	rate   float64
	tokens float64
	last   time.Time
	now    func() time.Time
}

func newBucket(rate float64, now func() time.Time) *bucket {
	return &bucket{rate: rate, tokens: max(rate, 1), now: now}
}

// take takes a token, or says how long until one is there.
func (b *bucket) take() time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.now()
	if !b.last.IsZero() {
		b.tokens = min(max(b.rate, 1), b.tokens+now.Sub(b.last).Seconds()*b.rate)
	}
	b.last = now
	if b.tokens >= 1 {
		b.tokens--
		return 0
	}
	return time.Duration((1 - b.tokens) / b.rate * float64(time.Second))
}
