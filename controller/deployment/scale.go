package deployment

import (
	"context"
	"math"
	"sort"
	"strconv"

	"github.com/kobune/kobune/api/apps"
)

// A scaling event is a change of the Deployment's replicas while it has
// ReplicaSets (Kubernetes' isScalingEvent and scale): an active
// ReplicaSet's desired-replicas annotation says another count. The
// controller then only scales — no rollout step in that pass:
//
//   - one active ReplicaSet (or none: the newest) takes the whole count;
//   - a new ReplicaSet that is saturated (all replicas wanted, available)
//     leaves the old ones at zero;
//   - otherwise, in a rolling update, the replicas added or removed are
//     shared among the active ReplicaSets in proportion to their size:
//     each gets its replicas × (replicas + maxSurge) / the max-replicas it
//     was annotated with, rounded, within what is left to add, largest
//     first (newer first among equals when adding, older first when
//     removing), and the largest takes the leftover. A rollout stuck on a
//     bad image keeps its shares: scaling 10 (8 old, 5 new) to 30 makes
//     20 and 13.

// isScalingEvent reports whether an active ReplicaSet was last sized for
// another count of replicas than the Deployment's.
func (r *rollout) isScalingEvent() bool {
	want := deploymentReplicas(r.d)
	for _, rs := range r.all {
		if replicas(rs) == 0 {
			continue
		}
		if n, err := strconv.Atoi(rs.Annotations[apps.DesiredReplicasAnnotation]); err == nil && int32(n) != want {
			return true
		}
	}
	return false
}

// scaleForEvent sizes the ReplicaSets for the Deployment's new count, and
// reports whether it did: a Recreate Deployment with several active
// ReplicaSets has nothing to share and goes on with its rollout.
func (r *rollout) scaleForEvent(ctx context.Context) (bool, error) {
	want := deploymentReplicas(r.d)
	var active []*apps.ReplicaSet
	for _, rs := range r.all {
		if replicas(rs) > 0 {
			active = append(active, rs)
		}
	}
	switch {
	case len(active) == 1:
		return true, r.scale(ctx, active[0], want)
	case len(active) == 0:
		if r.newRS != nil {
			return true, r.scale(ctx, r.newRS, want)
		}
		if len(r.old) > 0 {
			return true, r.scale(ctx, r.old[len(r.old)-1], want) // the newest
		}
		return false, nil
	}
	if r.saturated() {
		for _, rs := range r.old {
			if replicas(rs) > 0 {
				if err := r.scale(ctx, rs, 0); err != nil {
					return true, err
				}
			}
		}
		return true, nil
	}
	if r.d.Spec.Strategy.Type == apps.RecreateDeploymentStrategyType {
		return false, nil
	}
	surge, _ := r.fenceposts()
	allowed := int32(0)
	if want > 0 {
		allowed = want + surge
	}
	total, _ := sumReplicas(active)
	toAdd := allowed - total
	// r.all is oldest first: a stable sort by size keeps the older first
	// among equals; reversed first, the newer.
	if toAdd > 0 {
		for i, j := 0, len(active)-1; i < j; i, j = i+1, j-1 {
			active[i], active[j] = active[j], active[i]
		}
	}
	sort.SliceStable(active, func(i, j int) bool { return replicas(active[i]) > replicas(active[j]) })
	sizes := make([]int32, len(active))
	added := int32(0)
	for i, rs := range active {
		sizes[i] = replicas(rs)
		if toAdd != 0 {
			p := r.proportion(rs, toAdd, added)
			sizes[i] += p
			added += p
		}
	}
	if toAdd != 0 {
		sizes[0] = max(sizes[0]+toAdd-added, 0) // the leftover, to the largest
	}
	for i, rs := range active {
		if err := r.scale(ctx, rs, sizes[i]); err != nil {
			return true, err
		}
	}
	return true, nil
}

// saturated: the new ReplicaSet has, and was sized for, all the
// Deployment's replicas, and all of them are available.
func (r *rollout) saturated() bool {
	if r.newRS == nil {
		return false
	}
	want := deploymentReplicas(r.d)
	n, err := strconv.Atoi(r.newRS.Annotations[apps.DesiredReplicasAnnotation])
	return err == nil && int32(n) == want && replicas(r.newRS) == want && r.newRS.Status.AvailableReplicas == want
}

// proportion is rs's share of toAdd (negative: of those to remove), of
// which added are given out already (Kubernetes' GetProportion).
func (r *rollout) proportion(rs *apps.ReplicaSet, toAdd, added int32) int32 {
	if replicas(rs) == 0 || toAdd == added {
		return 0
	}
	fraction := r.fraction(rs)
	if toAdd > 0 {
		return min(fraction, toAdd-added)
	}
	return max(fraction, toAdd-added)
}

// fraction is how many replicas rs gains (or loses) at the Deployment's
// new size: its replicas scaled from the max-replicas it was sized for
// (or the Deployment's status replicas, without the annotation) to
// replicas + maxSurge.
func (r *rollout) fraction(rs *apps.ReplicaSet) int32 {
	want := deploymentReplicas(r.d)
	if want == 0 {
		return -replicas(rs)
	}
	surge, _ := r.fenceposts()
	annotated := r.d.Status.Replicas
	if n, err := strconv.Atoi(rs.Annotations[apps.MaxReplicasAnnotation]); err == nil {
		annotated = int32(n)
	}
	if annotated <= 0 {
		return 0
	}
	size := float64(replicas(rs)) * float64(want+surge) / float64(annotated)
	return int32(math.Round(size)) - replicas(rs)
}
