package replicaset

import (
	"context"

	"github.com/kobune/kobune/api/apps"
	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/client"
	"github.com/kobune/kobune/controller"
)

// ReplicationName is the ReplicationController controller's name in logs
// and events (kube-controller-manager's "replication-controller").
const ReplicationName = "replication-controller"

// NewReplication returns the ReplicationController controller: this
// package's controller run on each ReplicationController read as a
// ReplicaSet (its equality selector as matchLabels), its status written
// back — as kube-controller-manager's replication manager runs the
// ReplicaSet controller's code on converted objects.
func NewReplication(c *client.Client, inf *controller.Informers, recorder *client.AsyncRecorder) *Controller {
	k := kind{name: "ReplicationController",
		get: func(key string) (*apps.ReplicaSet, meta.Object, bool) {
			rc, ok := inf.ReplicationControllers.GetByKey(key)
			if !ok {
				return nil, nil, false
			}
			return asReplicaSet(rc), rc, true
		},
		writeStatus: func(ctx context.Context, c *client.Client, owner meta.Object, st apps.ReplicaSetStatus) (bool, error) {
			updated := *owner.(*core.ReplicationController)
			updated.Status = replicationStatus(st)
			return controller.WriteStatus(ctx, c, &updated)
		}}
	return newController(ReplicationName, k, c, inf, inf.ReplicationControllers, func(rc *core.ReplicationController) *meta.LabelSelector {
		return &meta.LabelSelector{MatchLabels: rc.Spec.Selector}
	}, recorder)
}

// asReplicaSet is a ReplicationController as the ReplicaSet it stands for.
func asReplicaSet(rc *core.ReplicationController) *apps.ReplicaSet {
	rs := &apps.ReplicaSet{ObjectMeta: rc.ObjectMeta, Spec: apps.ReplicaSetSpec{Replicas: rc.Spec.Replicas, MinReadySeconds: rc.Spec.MinReadySeconds,
		Selector: &meta.LabelSelector{MatchLabels: rc.Spec.Selector}}}
	if rc.Spec.Template != nil {
		rs.Spec.Template = *rc.Spec.Template
	}
	s := rc.Status
	rs.Status = apps.ReplicaSetStatus{Replicas: s.Replicas, FullyLabeledReplicas: s.FullyLabeledReplicas, ReadyReplicas: s.ReadyReplicas,
		AvailableReplicas: s.AvailableReplicas, ObservedGeneration: s.ObservedGeneration}
	for _, c := range s.Conditions {
		rs.Status.Conditions = append(rs.Status.Conditions, apps.Condition{Type: c.Type, Status: c.Status, LastTransitionTime: c.LastTransitionTime,
			Reason: c.Reason, Message: c.Message})
	}
	return rs
}

// replicationStatus is a ReplicaSet's status as a ReplicationController's.
func replicationStatus(s apps.ReplicaSetStatus) core.ReplicationControllerStatus {
	out := core.ReplicationControllerStatus{Replicas: s.Replicas, FullyLabeledReplicas: s.FullyLabeledReplicas, ReadyReplicas: s.ReadyReplicas,
		AvailableReplicas: s.AvailableReplicas, ObservedGeneration: s.ObservedGeneration}
	for _, c := range s.Conditions {
		out.Conditions = append(out.Conditions, core.ReplicationControllerCondition{Type: c.Type, Status: c.Status, LastTransitionTime: c.LastTransitionTime,
			Reason: c.Reason, Message: c.Message})
	}
	return out
}
