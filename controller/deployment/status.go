package deployment

import (
	"context"
	"fmt"
	"time"

	"github.com/kobune/kobune/api/apps"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/client/reconcile"
	"github.com/kobune/kobune/controller"
)

const defaultProgressDeadlineSec = 600

// syncStatus computes the status from the ReplicaSets and writes it when
// it changed; it asks to be called again when the progress deadline would
// pass.
func (dc *Controller) syncStatus(ctx context.Context, r *rollout) (reconcile.Result, error) {
	d := r.d
	st := apps.DeploymentStatus{ObservedGeneration: d.Generation, CollisionCount: d.Status.CollisionCount}
	for _, rs := range r.all {
		st.Replicas += rs.Status.Replicas
		st.ReadyReplicas += rs.Status.ReadyReplicas
		st.AvailableReplicas += rs.Status.AvailableReplicas
	}
	if r.newRS != nil {
		st.UpdatedReplicas = r.newRS.Status.Replicas
	}
	want := deploymentReplicas(d)
	st.UnavailableReplicas = max(want-st.AvailableReplicas, 0)
	now := meta.Time{Time: dc.now().UTC().Truncate(time.Second)}
	conds := append([]apps.Condition(nil), d.Status.Conditions...)

	_, maxUnavailable := r.fenceposts()
	if st.AvailableReplicas >= want-maxUnavailable {
		conds = setCondition(conds, apps.ConditionAvailable, meta.ConditionTrue, apps.ReasonMinimumAvailable, "Deployment has minimum availability.", now)
	} else {
		conds = setCondition(conds, apps.ConditionAvailable, meta.ConditionFalse, apps.ReasonMinimumNotAvailable, "Deployment does not have minimum availability.", now)
	}

	// A ReplicaSet that cannot create or delete its pods: its
	// ReplicaFailure becomes the Deployment's (the new one's first, as
	// Kubernetes' getReplicaFailures), and goes with it.
	if f := replicaFailure(r); f != nil {
		conds = setCondition(conds, f.Type, f.Status, f.Reason, f.Message, now)
	} else {
		conds = removeCondition(conds, apps.ConditionReplicaFailure)
	}

	var requeue time.Duration
	complete := r.newRS != nil && st.UpdatedReplicas == want && st.Replicas == want && st.AvailableReplicas == want && replicas(r.newRS) == want
	prog := findCondition(d.Status.Conditions, apps.ConditionProgressing)
	switch {
	case d.Spec.Paused:
		conds = setCondition(conds, apps.ConditionProgressing, meta.ConditionUnknown, apps.ReasonPaused, "Deployment is paused", now)
	case prog != nil && prog.Reason == apps.ReasonPaused:
		conds = setCondition(conds, apps.ConditionProgressing, meta.ConditionUnknown, apps.ReasonResumed, "Deployment is resumed", now)
	case complete:
		conds = setCondition(conds, apps.ConditionProgressing, meta.ConditionTrue, apps.ReasonNewRSAvailable, fmt.Sprintf("ReplicaSet %q has successfully progressed.", r.newRS.Name), now)
	case r.created:
		conds = setCondition(conds, apps.ConditionProgressing, meta.ConditionTrue, apps.ReasonNewRSCreated, fmt.Sprintf("Created new replica set %q", r.newRS.Name), now)
	case prog == nil || progressed(d.Status, st, d.Generation):
		conds = setCondition(conds, apps.ConditionProgressing, meta.ConditionTrue, apps.ReasonRSUpdated, fmt.Sprintf("ReplicaSet %q is progressing.", r.newRS.Name), now)
		findCondition(conds, apps.ConditionProgressing).LastUpdateTime = now // progress restarts the deadline
	case prog.Reason != apps.ReasonDeadlineExceeded:
		// No progress since the condition's last update: past the
		// deadline the rollout is declared stalled.
		deadline := time.Duration(defaultProgressDeadlineSec) * time.Second
		if d.Spec.ProgressDeadlineSeconds != nil {
			deadline = time.Duration(*d.Spec.ProgressDeadlineSeconds) * time.Second
		}
		if left := prog.LastUpdateTime.Add(deadline).Sub(now.Time); left <= 0 {
			conds = setCondition(conds, apps.ConditionProgressing, meta.ConditionFalse, apps.ReasonDeadlineExceeded,
				fmt.Sprintf("ReplicaSet %q has timed out progressing.", r.newRS.Name), now)
		} else {
			requeue = left + time.Second
		}
	}
	st.Conditions = conds
	if statusEqual(d.Status, st) {
		return reconcile.Result{RequeueAfter: requeue}, nil
	}
	updated := *d
	updated.Status = st
	if gone, err := controller.WriteStatus(ctx, dc.client, &updated); gone || err != nil {
		return reconcile.Result{}, err
	}
	return reconcile.Result{RequeueAfter: requeue}, nil
}

// progressed reports whether the rollout moved since the last status
// (Kubernetes' DeploymentProgressing): more updated, ready or available
// replicas, fewer old ones, or a new generation.
func progressed(old, cur apps.DeploymentStatus, generation int64) bool {
	oldOld := old.Replicas - old.UpdatedReplicas
	curOld := cur.Replicas - cur.UpdatedReplicas
	return cur.UpdatedReplicas > old.UpdatedReplicas || cur.ReadyReplicas > old.ReadyReplicas ||
		cur.AvailableReplicas > old.AvailableReplicas || curOld < oldOld || generation != old.ObservedGeneration
}

// replicaFailure is the ReplicaFailure condition (True) of the new
// ReplicaSet, else of an old one, else nil.
func replicaFailure(r *rollout) *apps.Condition {
	rss := r.all
	if r.newRS != nil {
		rss = append([]*apps.ReplicaSet{r.newRS}, rss...)
	}
	for _, rs := range rss {
		if c := findCondition(rs.Status.Conditions, apps.ConditionReplicaFailure); c != nil && c.Status == meta.ConditionTrue {
			return c
		}
	}
	return nil
}

func removeCondition(conds []apps.Condition, typ string) []apps.Condition {
	out := conds[:0]
	for _, c := range conds {
		if c.Type != typ {
			out = append(out, c)
		}
	}
	return out
}

func findCondition(conds []apps.Condition, typ string) *apps.Condition {
	for i := range conds {
		if conds[i].Type == typ {
			return &conds[i]
		}
	}
	return nil
}

// setCondition sets a condition; lastTransitionTime moves only when the
// status changes, lastUpdateTime when anything does.
func setCondition(conds []apps.Condition, typ string, status meta.ConditionStatus, reason, msg string, now meta.Time) []apps.Condition {
	c := findCondition(conds, typ)
	if c == nil {
		return append(conds, apps.Condition{Type: typ, Status: status, Reason: reason, Message: msg, LastUpdateTime: now, LastTransitionTime: now})
	}
	if c.Status == status && c.Reason == reason && c.Message == msg {
		return conds
	}
	if c.Status != status {
		c.LastTransitionTime = now
	}
	c.Status, c.Reason, c.Message, c.LastUpdateTime = status, reason, msg, now
	return conds
}

func statusEqual(a, b apps.DeploymentStatus) bool {
	if a.ObservedGeneration != b.ObservedGeneration || a.Replicas != b.Replicas || a.UpdatedReplicas != b.UpdatedReplicas ||
		a.ReadyReplicas != b.ReadyReplicas || a.AvailableReplicas != b.AvailableReplicas || a.UnavailableReplicas != b.UnavailableReplicas ||
		len(a.Conditions) != len(b.Conditions) {
		return false
	}
	for i := range a.Conditions {
		x, y := a.Conditions[i], b.Conditions[i]
		if x.Type != y.Type || x.Status != y.Status || x.Reason != y.Reason || x.Message != y.Message || !x.LastUpdateTime.Equal(y.LastUpdateTime.Time) {
			return false
		}
	}
	return true
}
