// Package replicaset is the ReplicaSet controller of kube-controller-manager:
// it keeps spec.replicas pods running for each ReplicaSet, creating pods from
// the template and deleting the least valuable ones, adopts matching orphans
// and releases pods that no longer match, and reports replicas,
// readyReplicas and availableReplicas in the status. The same code keeps
// ReplicationControllers (core/v1), read as ReplicaSets (replication.go),
// as kube-controller-manager's replication manager does.
package replicaset

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"google.golang.org/grpc/status"

	"github.com/kobune/kobune/api/apps"
	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/api/selector"
	"github.com/kobune/kobune/client"
	"github.com/kobune/kobune/client/reconcile"
	"github.com/kobune/kobune/controller"
)

// Name is the controller's name in logs and events.
const Name = "replicaset-controller"

// burstReplicas caps the creates or deletes of one reconcile, as
// kube-controller-manager's --concurrent-... burst does; the rest follow
// in the next pass.
const burstReplicas = 500

// Controller reconciles ReplicaSets, or ReplicationControllers.
type Controller struct {
	client   *client.Client
	kind     kind
	pods     *client.Informer[*core.Pod]
	exp      *controller.Expectations
	recorder *client.AsyncRecorder
	now      func() time.Time
	// Loop is the controller's queue and workers.
	Loop *reconcile.Loop
}

// kind is what a Controller keeps replicas for: ReplicaSets, or
// ReplicationControllers read as ReplicaSets.
type kind struct {
	name string // the pods' owner kind
	// get returns the object as a ReplicaSet, and the object itself: the
	// pods' owner and the subject of the events.
	get func(key string) (rs *apps.ReplicaSet, owner meta.Object, ok bool)
	// writeStatus makes st the owner's status.
	writeStatus func(ctx context.Context, c *client.Client, owner meta.Object, st apps.ReplicaSetStatus) (gone bool, err error)
}

// New returns the ReplicaSet controller and registers its handlers on the
// informers.
func New(c *client.Client, inf *controller.Informers, recorder *client.AsyncRecorder) *Controller {
	k := kind{name: "ReplicaSet",
		get: func(key string) (*apps.ReplicaSet, meta.Object, bool) {
			rs, ok := inf.ReplicaSets.GetByKey(key)
			return rs, rs, ok
		},
		writeStatus: func(ctx context.Context, c *client.Client, owner meta.Object, st apps.ReplicaSetStatus) (bool, error) {
			updated := *owner.(*apps.ReplicaSet)
			updated.Status = st
			return controller.WriteStatus(ctx, c, &updated)
		}}
	return newController(Name, k, c, inf, inf.ReplicaSets, func(rs *apps.ReplicaSet) *meta.LabelSelector { return rs.Spec.Selector }, recorder)
}

// newController makes the controller of one kind: its loop, a handler on
// the kind's informer, and one on the pods'.
func newController[O meta.Object](name string, k kind, c *client.Client, inf *controller.Informers, owners *client.Informer[O],
	selectorOf func(O) *meta.LabelSelector, recorder *client.AsyncRecorder) *Controller {
	rc := &Controller{client: c, kind: k, pods: inf.Pods, exp: controller.NewExpectations(), recorder: recorder, now: time.Now}
	rc.Loop = reconcile.NewLoop(name, rc, 5)
	enqueue := func(o O) { rc.Loop.Queue.Add(meta.Key(o)) }
	owners.AddHandler(client.Handler[O]{
		OnAdd:    enqueue,
		OnUpdate: func(_, o O) { enqueue(o) },
		OnDelete: func(o O) { rc.exp.Delete(meta.Key(o)); enqueue(o) },
	})
	inf.Pods.AddHandler(controller.OwnedBy[*core.Pod]{Kind: k.name, Queue: rc.Loop.Queue, Owner: controller.CachedIn(owners),
		Expectations: rc.exp, Adopters: controller.SelectedBy[O, *core.Pod](owners, selectorOf)}.Handler())
	return rc
}

// Reconcile implements reconcile.Reconciler.
func (rc *Controller) Reconcile(ctx context.Context, key string) (reconcile.Result, error) {
	rs, owner, ok := rc.kind.get(key)
	if !ok {
		rc.exp.Delete(key)
		return reconcile.Result{}, nil
	}
	sel, err := selector.FromLabelSelector(rs.Spec.Selector)
	if err != nil {
		return reconcile.Result{}, reconcile.Terminal(fmt.Errorf("selector: %w", err))
	}
	// Expectations first, then the pods: read the other way round, the
	// last awaited create can land between the two, and a cache read
	// before it would miss that pod and make it again.
	// (Kubernetes' syncReplicaSet keeps the same order.)
	satisfied := rc.exp.Satisfied(key)
	pods, err := controller.Claim(ctx, rc.client, owner, sel, rc.pods.ByIndex(client.IndexNamespace, rs.Namespace), controller.IsActive)
	if err != nil {
		return reconcile.Result{}, err
	}
	var active []*core.Pod
	for _, p := range pods {
		if controller.IsActive(p) {
			active = append(active, p)
		}
	}
	var manageErr error
	observed := rs.Status.ObservedGeneration
	if satisfied && rs.DeletionTimestamp == nil {
		var deleted map[string]bool
		deleted, manageErr = rc.manageReplicas(ctx, rs, owner, active)
		// The status counts what remains: pods just deleted are going
		// (the Deployment controller reads availability from it).
		if len(deleted) > 0 {
			kept := active[:0:0]
			for _, p := range active {
				if !deleted[p.Name] {
					kept = append(kept, p)
				}
			}
			active = kept
		}
		observed = rs.Generation
	}
	requeue, err := rc.updateStatus(ctx, rs, owner, active, observed, manageErr)
	if manageErr != nil {
		return reconcile.Result{}, manageErr
	}
	return reconcile.Result{RequeueAfter: requeue}, err
}

// manageReplicas creates or deletes pods to reach spec.replicas.
func (rc *Controller) manageReplicas(ctx context.Context, rs *apps.ReplicaSet, owner meta.Object, active []*core.Pod) (deleted map[string]bool, err error) {
	want := 1
	if rs.Spec.Replicas != nil {
		want = int(*rs.Spec.Replicas)
	}
	key := meta.Key(rs)
	diff := len(active) - want
	switch {
	case diff < 0:
		n := min(-diff, burstReplicas)
		rc.exp.Expect(key, n, 0)
		return nil, rc.createPods(ctx, rs, owner, n)
	case diff > 0:
		n := min(diff, burstReplicas)
		victims := podsToDelete(active, n)
		rc.exp.Expect(key, 0, n)
		pods := client.For[*core.Pod](rc.client)
		deleted = map[string]bool{}
		for _, p := range victims {
			if err := pods.Delete(ctx, p.Namespace, p.Name, client.DeleteOptions{UID: p.UID}); err != nil {
				rc.exp.Observed(key, false)
				if !client.IsNotFound(err) {
					return deleted, fmt.Errorf("delete pod %s: %w", p.Name, err)
				}
				continue
			}
			deleted[p.Name] = true
			rc.recorder.Event(owner, core.EventTypeNormal, "SuccessfulDelete", "Deleted pod: "+p.Name)
		}
	}
	return deleted, nil
}

// createPods creates n pods in batches of 1, 2, 4, ... (slow start, as
// Kubernetes does): a template that cannot be created fails after one
// request instead of n.
func (rc *Controller) createPods(ctx context.Context, rs *apps.ReplicaSet, owner meta.Object, n int) error {
	key := meta.Key(rs)
	pods := client.For[*core.Pod](rc.client)
	for batch, done := 1, 0; done < n; batch *= 2 {
		size := min(batch, n-done)
		for i := range size {
			p := controller.PodFromTemplate(&rs.Spec.Template, rs.Namespace, rs.Name+"-", owner)
			created, err := pods.Create(ctx, p)
			if err != nil {
				// The creates not made will not be observed.
				for range n - done - i {
					rc.exp.Observed(key, true)
				}
				rc.recorder.Event(owner, core.EventTypeWarning, "FailedCreate", "Error creating: "+client.Message(err))
				return fmt.Errorf("create pod: %w", err)
			}
			rc.recorder.Event(owner, core.EventTypeNormal, "SuccessfulCreate", "Created pod: "+created.Name)
		}
		done += size
	}
	return nil
}

// podsToDelete picks the n least valuable pods, in Kubernetes' order:
// unscheduled before scheduled, pending before unknown before running, not
// ready before ready, ready for less time before more, more restarts
// before fewer, newer before older.
func podsToDelete(active []*core.Pod, n int) []*core.Pod {
	ranked := append([]*core.Pod(nil), active...)
	phaseRank := map[core.PodPhase]int{core.PodPending: 0, core.PodUnknown: 1, core.PodRunning: 2}
	restarts := func(p *core.Pod) int32 {
		var r int32
		for _, c := range p.Status.ContainerStatuses {
			r = max(r, c.RestartCount)
		}
		return r
	}
	sort.SliceStable(ranked, func(i, j int) bool {
		a, b := ranked[i], ranked[j]
		if (a.Spec.NodeName == "") != (b.Spec.NodeName == "") {
			return a.Spec.NodeName == ""
		}
		if phaseRank[a.Status.Phase] != phaseRank[b.Status.Phase] {
			return phaseRank[a.Status.Phase] < phaseRank[b.Status.Phase]
		}
		ra, rb := controller.IsReady(a), controller.IsReady(b)
		if ra != rb {
			return !ra
		}
		if ra {
			sa, sb := readyTime(a), readyTime(b)
			if !sa.Equal(sb) {
				return sa.After(sb)
			}
		}
		if restarts(a) != restarts(b) {
			return restarts(a) > restarts(b)
		}
		return a.CreationTimestamp.After(b.CreationTimestamp.Time)
	})
	return ranked[:n]
}

func readyTime(p *core.Pod) time.Time {
	for _, c := range p.Status.Conditions {
		if c.Type == core.PodReady {
			return c.LastTransitionTime.Time
		}
	}
	return time.Time{}
}

// updateStatus writes replicas, fullyLabeledReplicas, readyReplicas,
// availableReplicas and observedGeneration when they changed; it returns
// when a pod will become available (minReadySeconds), to look again then.
// observedGeneration moves only when this pass acted on the spec (not
// while it waits for its own creates and deletes to show up): the
// Deployment controller reads it as "this ReplicaSet's pods follow its
// replicas now".
func (rc *Controller) updateStatus(ctx context.Context, rs *apps.ReplicaSet, owner meta.Object, active []*core.Pod, observed int64, manageErr error) (time.Duration, error) {
	now := rc.now()
	st := apps.ReplicaSetStatus{Replicas: int32(len(active)), ObservedGeneration: observed, Conditions: replicaFailure(rs, len(active), manageErr, now)}
	var requeue time.Duration
	for _, p := range active {
		fully := true
		for k, v := range rs.Spec.Template.Labels {
			if p.Labels[k] != v {
				fully = false
			}
		}
		if fully {
			st.FullyLabeledReplicas++
		}
		if controller.IsReady(p) {
			st.ReadyReplicas++
		}
		if ok, wait := controller.IsAvailable(p, rs.Spec.MinReadySeconds, now); ok {
			st.AvailableReplicas++
		} else if wait > 0 && (requeue == 0 || wait < requeue) {
			requeue = wait
		}
	}
	if st.Replicas == rs.Status.Replicas && st.FullyLabeledReplicas == rs.Status.FullyLabeledReplicas && st.ReadyReplicas == rs.Status.ReadyReplicas &&
		st.AvailableReplicas == rs.Status.AvailableReplicas && st.ObservedGeneration == rs.Status.ObservedGeneration && len(st.Conditions) == len(rs.Status.Conditions) {
		return requeue, nil
	}
	if gone, err := rc.kind.writeStatus(ctx, rc.client, owner, st); gone || err != nil {
		return 0, err
	}
	return requeue, nil
}

// replicaFailure is the ReplicaSet's conditions after a pass, as
// Kubernetes' calculateStatus has them: a failed create or delete adds
// ReplicaFailure (True, FailedCreate or FailedDelete, the API server's
// message; the first failure's is kept while it lasts), a pass without
// error removes it (also one that only waited for its own creates, as in
// Kubernetes).
func replicaFailure(rs *apps.ReplicaSet, active int, manageErr error, now time.Time) []apps.Condition {
	var conds []apps.Condition
	var failed bool
	for _, c := range rs.Status.Conditions {
		if c.Type == apps.ConditionReplicaFailure {
			failed = true
			if manageErr == nil {
				continue
			}
		}
		conds = append(conds, c)
	}
	if manageErr == nil || failed {
		return conds
	}
	want := 1
	if rs.Spec.Replicas != nil {
		want = int(*rs.Spec.Replicas)
	}
	reason := apps.ReasonFailedCreate
	if active > want {
		reason = apps.ReasonFailedDelete
	}
	return append(conds, apps.Condition{Type: apps.ConditionReplicaFailure, Status: meta.ConditionTrue, Reason: reason,
		Message: apiMessage(manageErr), LastTransitionTime: meta.Time{Time: now.UTC().Truncate(time.Second)}})
}

// apiMessage is the API server's own words in a wrapped error
// (`pods "web-x" is forbidden: exceeded quota: ...`), as Kubernetes' condition
// carries them.
func apiMessage(err error) string {
	var se interface{ GRPCStatus() *status.Status }
	if errors.As(err, &se) {
		return client.Message(se.GRPCStatus().Err())
	}
	return err.Error()
}
