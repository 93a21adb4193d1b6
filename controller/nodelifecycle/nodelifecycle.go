// Package nodelifecycle is kube-controller-manager's node lifecycle
// controller with its taint-based eviction:
//
//   - health: a node whose Lease (kube-node-lease/<node>) this controller
//     has not seen renewed for the grace period (--node-monitor-grace-period,
//     40 s) gets its conditions set to Unknown ("Kubelet stopped posting node
//     status."). The silence is measured on the controller's own clock, from
//     when it last saw the Lease change (or from its own start), never from
//     the Lease's renewTime: after a control-plane outage every Lease is old,
//     and the agents get a full grace period to renew (health.go);
//   - taints: Ready Unknown → node.kubernetes.io/unreachable, Ready False →
//     node.kubernetes.io/not-ready, each as NoSchedule (the scheduler keeps
//     new pods away) and NoExecute (running pods are evicted); a Ready node
//     loses them;
//   - eviction: a pod on a node with a NoExecute taint it does not tolerate
//     is deleted; one that tolerates it for tolerationSeconds (the API
//     server adds 300 s for these two taints to every pod) is deleted when
//     that time has passed since the taint was added. Evictions go through a
//     token bucket (--node-eviction-rate), so a zone going dark does not
//     turn into a storm of deletions;
//   - disruption: when every node (of every zone) is unhealthy at once, the
//     fault is far more likely the control plane's or the network's than
//     every node's, so no node gets a NoExecute taint and nothing is evicted
//     (Kubernetes' "master disruption mode"); when most of a zone is
//     unhealthy, evictions there slow down or stop (disruption.go).
//
// The pods' owners (ReplicaSets, ...) then make replacements, which the
// scheduler places on healthy nodes.
package nodelifecycle

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/kobune/kobune/api/coordination"
	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/client"
	"github.com/kobune/kobune/client/reconcile"
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
	// buckets rate-limit evictions, one token bucket per zone.
	bucketsMu sync.Mutex
	buckets   map[string]*bucket
	// health holds what this controller saw of each node's heartbeats.
	healthMu sync.Mutex
	health   map[string]probe
	// fullDisruption: every node was unhealthy at the last look.
	disruptionMu   sync.Mutex
	fullDisruption bool
	// lastDisruption is the last look at every zone, reused for up to a
	// second while no node or Lease changes: during an outage every
	// unhealthy node's pass asks, and each look walks every node.
	lastDisruption   *disruption
	lastDisruptionAt time.Time
	// evicted remembers the pods deleted lately, so that a pass whose
	// cache has not shown the deletion yet does not delete them again.
	evictedMu sync.Mutex
	evicted   map[string]time.Time
	// Loop is the controller's queue (node names) and workers.
	Loop *reconcile.Loop
}

// New returns the controller and registers its handlers.
func New(c *client.Client, inf *controller.Informers, recorder *client.AsyncRecorder, cfg Config) *Controller {
	if cfg.GracePeriod == 0 {
		cfg.GracePeriod = 40 * time.Second
	}
	if cfg.EvictionRate <= 0 {
		cfg.EvictionRate = 10
	}
	nc := &Controller{cfg: cfg, client: c, nodes: inf.Nodes, leases: inf.Leases, pods: inf.Pods, recorder: recorder, now: time.Now,
		evicted: map[string]time.Time{}, health: map[string]probe{}, buckets: map[string]*bucket{}}
	nc.Loop = reconcile.NewLoop(Name, nc, 3)
	byName := func(name string) { nc.Loop.Queue.Add(name) }
	changed := func(name string) { nc.forgetDisruption(); byName(name) }
	inf.Nodes.AddHandler(client.Handler[*core.Node]{OnAdd: func(n *core.Node) { changed(n.Name) }, OnUpdate: func(_, n *core.Node) { changed(n.Name) },
		OnDelete: func(n *core.Node) { changed(n.Name) }})
	inf.Leases.AddHandler(client.Handler[*coordination.Lease]{OnAdd: func(l *coordination.Lease) { changed(l.Name) }, OnUpdate: func(_, l *coordination.Lease) { changed(l.Name) }})
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

// Reconcile implements reconcile.Reconciler for a node name.
func (nc *Controller) Reconcile(ctx context.Context, name string) (reconcile.Result, error) {
	n, ok := nc.nodes.Get("", name)
	if !ok {
		nc.forget(name)
		return reconcile.Result{}, nil
	}
	now := nc.now()
	var requeue time.Duration
	seen := nc.lastSeen(n, now)
	silent := now.Sub(seen) >= nc.cfg.GracePeriod
	if !silent {
		requeue = seen.Add(nc.cfg.GracePeriod).Sub(now) + 100*time.Millisecond
	} else if ready(n) != meta.ConditionUnknown {
		var err error
		if n, err = nc.markUnknown(ctx, n, now); err != nil {
			return reconcile.Result{}, err
		}
	}
	// How fast pods may leave this node's zone: the zones' states matter
	// only for an unhealthy node, or to notice the end of full disruption.
	rate := nc.cfg.EvictionRate
	if silent || ready(n) != meta.ConditionTrue || nc.inFullDisruption() {
		rate = nc.observeDisruption(now).evictionRate(n.Labels[ZoneLabel], nc.cfg.EvictionRate)
	}
	// NoExecute only for a node that is really silent (or says it is not
	// ready), never for one whose Unknown status is merely older than its
	// newest heartbeat: its agent is about to post Ready again.
	noExecute := rate > 0 && (silent || ready(n) == meta.ConditionFalse)
	n, err := nc.syncTaints(ctx, n, now, noExecute)
	if err != nil {
		return reconcile.Result{}, err
	}
	wait, err := nc.evict(ctx, n, now, rate)
	if err != nil {
		return reconcile.Result{}, err
	}
	if wait > 0 && (requeue == 0 || wait < requeue) {
		requeue = wait
	}
	return reconcile.Result{RequeueAfter: requeue}, nil
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

// pressureTaints are the NoSchedule taints the pressure conditions bring
// (Kubernetes' TaintNodesByCondition): the scheduler keeps new pods off
// a node that is evicting.
var pressureTaints = map[core.NodeConditionType]string{core.NodeMemoryPressure: "node.kubernetes.io/memory-pressure",
	core.NodeDiskPressure: "node.kubernetes.io/disk-pressure", core.NodePIDPressure: "node.kubernetes.io/pid-pressure"}

// syncTaints makes the not-ready and unreachable taints follow Ready:
// NoSchedule always, NoExecute only when noExecute allows it; and the
// pressure taints follow the pressure conditions.
func (nc *Controller) syncTaints(ctx context.Context, n *core.Node, now time.Time, noExecute bool) (*core.Node, error) {
	wantPressure, isPressure := map[string]bool{}, map[string]bool{}
	for cond, key := range pressureTaints {
		isPressure[key] = true
		for _, c := range n.Status.Conditions {
			if c.Type == cond && c.Status == meta.ConditionTrue {
				wantPressure[key] = true
			}
		}
	}
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
		case isPressure[t.Key] && (!wantPressure[t.Key] || t.Effect != core.TaintNoSchedule):
			changed = true
		case isPressure[t.Key]:
			delete(wantPressure, t.Key) // present already
			kept = append(kept, t)
		case lifecycle && (t.Key != want || (t.Effect == core.TaintNoExecute && !noExecute)):
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
			if !has[e] && (e != core.TaintNoExecute || noExecute) {
				kept = append(kept, core.Taint{Key: want, Effect: e, TimeAdded: &added})
				changed = true
			}
		}
	}
	for key := range wantPressure {
		added := meta.NewTime(now)
		kept = append(kept, core.Taint{Key: key, Effect: core.TaintNoSchedule, TimeAdded: &added})
		changed = true
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
