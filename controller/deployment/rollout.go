package deployment

import (
	"context"

	"github.com/kobune/kobune/controller"

	"github.com/kobune/kobune/api/apps"
	"github.com/kobune/kobune/api/meta"
)

// fenceposts resolves maxSurge (rounded up) and maxUnavailable (rounded
// down) against the replicas, 25% each by default; both zero is not
// allowed to stall a rollout, so maxUnavailable becomes 1.
func (r *rollout) fenceposts() (surge, unavailable int32) {
	n := deploymentReplicas(r.d)
	quarter := meta.FromString("25%")
	s, u := &quarter, &quarter
	if ru := r.d.Spec.Strategy.RollingUpdate; ru != nil {
		if ru.MaxSurge != nil {
			s = ru.MaxSurge
		}
		if ru.MaxUnavailable != nil {
			u = ru.MaxUnavailable
		}
	}
	su, _ := s.ScaledValue(int(n), true) // validation has checked the form
	un, _ := u.ScaledValue(int(n), false)
	surge, unavailable = int32(su), int32(un)
	if surge == 0 && unavailable == 0 {
		unavailable = 1
	}
	return surge, unavailable
}

func sumReplicas(rss []*apps.ReplicaSet) (spec, available int32) {
	for _, rs := range rss {
		spec += replicas(rs)
		available += rs.Status.AvailableReplicas
	}
	return spec, available
}

// rollingUpdate is one step of a rolling update: scale the new
// ReplicaSet up as far as maxSurge allows, then the old ones down as far
// as maxUnavailable allows (Kubernetes' rolloutRolling).
func (r *rollout) rollingUpdate(ctx context.Context) error {
	if err := r.reconcileNew(ctx); err != nil {
		return err
	}
	return r.reconcileOld(ctx)
}

func (r *rollout) reconcileNew(ctx context.Context) error {
	want := deploymentReplicas(r.d)
	cur := replicas(r.newRS)
	switch {
	case cur == want:
		return nil
	case cur > want:
		return r.scale(ctx, r.newRS, want)
	}
	if !r.oldSettled() {
		return nil // their status update requeues the Deployment
	}
	surge, _ := r.fenceposts()
	total := r.podsOrReplicas()
	maxTotal := want + surge
	if total >= maxTotal {
		return nil
	}
	up := min(maxTotal-total, want-cur)
	return r.scale(ctx, r.newRS, cur+up)
}

// podsOrReplicas counts, for each ReplicaSet, its replicas or its pods
// that are not terminating, whichever is more. Kubernetes bounds the surge
// by replicas only, so for a moment an old pod whose ReplicaSet was scaled
// down but that its controller has not deleted yet can coexist with the new
// pod that replaces it; Kobune waits for that deletion, so that the pods,
// not only the replicas, stay within replicas + maxSurge.
func (r *rollout) podsOrReplicas() int32 {
	var total int32
	for _, rs := range r.all {
		active := int32(0)
		for _, p := range r.dc.pods.ByIndex(controller.IndexByOwner, rs.UID) {
			if controller.IsActive(p) {
				active++
			}
		}
		total += max(replicas(rs), active)
	}
	return total
}

// oldSettled reports whether the ReplicaSet controller has acted on every
// old ReplicaSet's latest replicas (status.observedGeneration caught up).
// Until then an old ReplicaSet just scaled down may still be creating pods
// for its earlier, higher count, and the new one must not grow yet.
func (r *rollout) oldSettled() bool {
	for _, rs := range r.old {
		if rs.Status.ObservedGeneration < rs.Generation {
			return false
		}
	}
	return true
}

func (r *rollout) reconcileOld(ctx context.Context) error {
	oldCount, _ := sumReplicas(r.old)
	if oldCount == 0 {
		return nil
	}
	// Availability comes from the ReplicaSets' status: act on it only
	// when each one's controller has caught up with its latest replicas
	// (else a status from before a scale-down still counts pods that are
	// going, and too many old pods would go).
	if !r.oldSettled() || (r.newRS.Status.ObservedGeneration < r.newRS.Generation) {
		return nil
	}
	_, maxUnavailable := r.fenceposts()
	minAvailable := deploymentReplicas(r.d) - maxUnavailable
	total, _ := sumReplicas(r.all)
	newUnavailable := replicas(r.newRS) - r.newRS.Status.AvailableReplicas
	maxScaleDown := total - minAvailable - newUnavailable
	if maxScaleDown <= 0 {
		return nil
	}
	// First the old pods that are not available anyway: removing them
	// costs no availability.
	cleaned := int32(0)
	for _, rs := range r.old {
		if cleaned >= maxScaleDown {
			break
		}
		spec := replicas(rs)
		// Nothing unavailable to remove. (A status counting more available
		// pods than the replicas is from before a scale-down: without this
		// the difference would be negative and scale the old ReplicaSet
		// back up.)
		if spec == 0 || rs.Status.AvailableReplicas >= spec {
			continue
		}
		down := min(maxScaleDown-cleaned, spec-rs.Status.AvailableReplicas)
		if err := r.scale(ctx, rs, spec-down); err != nil {
			return err
		}
		cleaned += down
	}
	// Then available old pods, as long as minAvailable stays available.
	_, available := sumReplicas(r.all)
	if available <= minAvailable {
		return nil
	}
	budget := available - minAvailable
	for _, rs := range r.old {
		if budget <= 0 {
			break
		}
		spec := replicas(rs)
		if spec == 0 {
			continue
		}
		down := min(spec, budget)
		if err := r.scale(ctx, rs, spec-down); err != nil {
			return err
		}
		budget -= down
	}
	return nil
}

// recreate scales every old ReplicaSet to zero, waits until their pods are
// gone, then scales the new one up.
func (r *rollout) recreate(ctx context.Context) error {
	for _, rs := range r.old {
		if replicas(rs) != 0 {
			if err := r.scale(ctx, rs, 0); err != nil {
				return err
			}
		}
	}
	if r.dc.oldPodsExist(r.old) {
		return nil // their deletions requeue the Deployment
	}
	return r.scale(ctx, r.newRS, deploymentReplicas(r.d))
}

// syncPaused only follows a change of replicas while paused: the new
// ReplicaSet (or, without one, the newest active one) absorbs the
// difference; no rollout step is taken.
func (r *rollout) syncPaused(ctx context.Context) error {
	target := r.newRS
	if target == nil {
		for i := len(r.old) - 1; i >= 0; i-- {
			if replicas(r.old[i]) > 0 {
				target = r.old[i]
				break
			}
		}
	}
	if target == nil {
		return nil
	}
	total, _ := sumReplicas(r.all)
	diff := deploymentReplicas(r.d) - total
	if diff == 0 {
		return nil
	}
	return r.scale(ctx, target, max(replicas(target)+diff, 0))
}
