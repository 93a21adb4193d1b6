package validation

import "github.com/kobune/kobune/api/meta"

// Count is one count of a status, by its field name.
type Count struct {
	Field string
	Value int64
}

// NonNegativeCounts names each count below zero, as kube-apiserver's
// ValidateNonnegativeField does in the status validation of its kinds.
func NonNegativeCounts(p *Path, counts ...Count) ErrorList {
	var errs ErrorList
	for _, c := range counts {
		errs = append(errs, ValidateNonnegative(c.Value, p.Child(c.Field))...)
	}
	return errs
}

// ReplicaCounts checks the counts a ReplicaSet's and a
// ReplicationController's status share.
func ReplicaCounts(replicas, fullyLabeled, ready, available int32, observedGeneration int64) ErrorList {
	p := NewPath("status")
	errs := NonNegativeCounts(p, Count{"replicas", int64(replicas)}, Count{"fullyLabeledReplicas", int64(fullyLabeled)},
		Count{"readyReplicas", int64(ready)}, Count{"availableReplicas", int64(available)}, Count{"observedGeneration", observedGeneration})
	errs = append(errs, NotAbove(p, "fullyLabeledReplicas", fullyLabeled, "status.replicas", replicas)...)
	errs = append(errs, NotAbove(p, "readyReplicas", ready, "status.replicas", replicas)...)
	errs = append(errs, NotAbove(p, "availableReplicas", available, "status.replicas", replicas)...)
	return append(errs, NotAbove(p, "availableReplicas", available, "readyReplicas", ready)...)
}

// NotAbove names a count greater than another of the same status (ready
// replicas above replicas), in kube-apiserver's words.
func NotAbove(p *Path, field string, value int32, limitName string, limit int32) ErrorList {
	if value > limit {
		return ErrorList{NewInvalid(p.Child(field), value, "cannot be greater than "+limitName)}
	}
	return nil
}

// NotDecremented names a count that went down (a collisionCount).
func NotDecremented(p *Path, n, o *int32) ErrorList {
	if o != nil && (n == nil || *n < *o) {
		var value int32
		if n != nil {
			value = *n
		}
		return ErrorList{NewInvalid(p, value, "cannot be decremented")}
	}
	return nil
}

// Conditions checks meta.k8s.io Conditions as a status write carries them:
// each has a type (once), a status of True, False or Unknown, and a reason.
func Conditions(cs []meta.Condition, p *Path) ErrorList {
	var errs ErrorList
	seen := map[string]bool{}
	for i, c := range cs {
		cp := p.Index(i)
		if c.Type == "" {
			errs = append(errs, NewRequired(cp.Child("type"), ""))
		} else if seen[c.Type] {
			errs = append(errs, NewDuplicate(cp.Child("type"), c.Type))
		}
		seen[c.Type] = true
		switch c.Status {
		case meta.ConditionTrue, meta.ConditionFalse, meta.ConditionUnknown:
		default:
			errs = append(errs, NewNotSupported(cp.Child("status"), string(c.Status), []string{"True", "False", "Unknown"}))
		}
		if c.Reason == "" {
			errs = append(errs, NewRequired(cp.Child("reason"), ""))
		}
	}
	return errs
}
