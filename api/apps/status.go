package apps

import v "github.com/kobune/kobune/api/validation"

// The status validation of the workload kinds, as kube-apiserver's status
// strategies run it on every status write: counts are not negative, and a
// part is not larger than its whole (ready replicas within replicas,
// available within ready). What the controllers write always holds; a
// client writing status by hand meets these.

func optional(n *int32) int64 {
	if n == nil {
		return 0
	}
	return int64(*n)
}

// ValidateDeploymentStatus checks a Deployment's status write.
func ValidateDeploymentStatus(n, o *Deployment) v.ErrorList {
	p, s := v.NewPath("status"), &n.Status
	errs := v.NonNegativeCounts(p, v.Count{Field: "observedGeneration", Value: s.ObservedGeneration}, v.Count{Field: "replicas", Value: int64(s.Replicas)},
		v.Count{Field: "updatedReplicas", Value: int64(s.UpdatedReplicas)}, v.Count{Field: "readyReplicas", Value: int64(s.ReadyReplicas)},
		v.Count{Field: "availableReplicas", Value: int64(s.AvailableReplicas)}, v.Count{Field: "unavailableReplicas", Value: int64(s.UnavailableReplicas)},
		v.Count{Field: "collisionCount", Value: optional(s.CollisionCount)})
	errs = append(errs, v.NotAbove(p, "updatedReplicas", s.UpdatedReplicas, "status.replicas", s.Replicas)...)
	errs = append(errs, v.NotAbove(p, "readyReplicas", s.ReadyReplicas, "status.replicas", s.Replicas)...)
	errs = append(errs, v.NotAbove(p, "availableReplicas", s.AvailableReplicas, "status.replicas", s.Replicas)...)
	errs = append(errs, v.NotAbove(p, "availableReplicas", s.AvailableReplicas, "readyReplicas", s.ReadyReplicas)...)
	return append(errs, v.NotDecremented(p.Child("collisionCount"), s.CollisionCount, o.Status.CollisionCount)...)
}

// ValidateReplicaSetStatus checks a ReplicaSet's status write.
func ValidateReplicaSetStatus(n, _ *ReplicaSet) v.ErrorList {
	s := &n.Status
	return v.ReplicaCounts(s.Replicas, s.FullyLabeledReplicas, s.ReadyReplicas, s.AvailableReplicas, s.ObservedGeneration)
}

// ValidateStatefulSetStatus checks a StatefulSet's status write.
func ValidateStatefulSetStatus(n, o *StatefulSet) v.ErrorList {
	p, s := v.NewPath("status"), &n.Status
	errs := v.NonNegativeCounts(p, v.Count{Field: "replicas", Value: int64(s.Replicas)}, v.Count{Field: "readyReplicas", Value: int64(s.ReadyReplicas)},
		v.Count{Field: "currentReplicas", Value: int64(s.CurrentReplicas)}, v.Count{Field: "updatedReplicas", Value: int64(s.UpdatedReplicas)},
		v.Count{Field: "availableReplicas", Value: int64(s.AvailableReplicas)}, v.Count{Field: "observedGeneration", Value: s.ObservedGeneration},
		v.Count{Field: "collisionCount", Value: optional(s.CollisionCount)})
	for _, c := range []struct {
		field string
		value int32
	}{{"readyReplicas", s.ReadyReplicas}, {"currentReplicas", s.CurrentReplicas}, {"updatedReplicas", s.UpdatedReplicas}, {"availableReplicas", s.AvailableReplicas}} {
		errs = append(errs, v.NotAbove(p, c.field, c.value, "status.replicas", s.Replicas)...)
	}
	errs = append(errs, v.NotAbove(p, "availableReplicas", s.AvailableReplicas, "status.readyReplicas", s.ReadyReplicas)...)
	return append(errs, v.NotDecremented(p.Child("collisionCount"), s.CollisionCount, o.Status.CollisionCount)...)
}

// ValidateDaemonSetStatus checks a DaemonSet's status write.
func ValidateDaemonSetStatus(n, _ *DaemonSet) v.ErrorList {
	s := &n.Status
	return v.NonNegativeCounts(v.NewPath("status"), v.Count{Field: "numberAvailable", Value: int64(s.NumberAvailable)},
		v.Count{Field: "currentNumberScheduled", Value: int64(s.CurrentNumberScheduled)}, v.Count{Field: "numberMisscheduled", Value: int64(s.NumberMisscheduled)},
		v.Count{Field: "desiredNumberScheduled", Value: int64(s.DesiredNumberScheduled)}, v.Count{Field: "numberReady", Value: int64(s.NumberReady)},
		v.Count{Field: "observedGeneration", Value: s.ObservedGeneration}, v.Count{Field: "updatedNumberScheduled", Value: int64(s.UpdatedNumberScheduled)},
		v.Count{Field: "numberUnavailable", Value: int64(s.NumberUnavailable)})
}
