package core

import (
	"slices"

	"github.com/kobune/kobune/api/resource"
	"github.com/kobune/kobune/api/selector"
)

// VolumeFits: the volume has the claim's class name, every access mode
// the claim asks for, at least the storage it asks for, and the labels its
// selector wants (the binder's and the scheduler's test).
func VolumeFits(pv *PersistentVolume, claim *PersistentVolumeClaim) bool {
	if pv.Spec.StorageClassName != ClaimClass(claim) {
		return false
	}
	for _, m := range claim.Spec.AccessModes {
		if !slices.Contains(pv.Spec.AccessModes, m) {
			return false
		}
	}
	if pv.Spec.Capacity[resource.Name("storage")].Cmp(claim.Spec.Resources.Requests[resource.Name("storage")]) < 0 {
		return false
	}
	if claim.Spec.Selector != nil {
		sel, err := selector.FromLabelSelector(claim.Spec.Selector)
		if err != nil || !sel.Matches(pv.Labels) {
			return false
		}
	}
	return true
}

// VolumeReachableFrom: the volume's node affinity admits the node (a
// volume without one is reachable from every node).
func VolumeReachableFrom(pv *PersistentVolume, n *Node) bool {
	if pv.Spec.NodeAffinity == nil || pv.Spec.NodeAffinity.Required == nil {
		return true
	}
	for _, t := range pv.Spec.NodeAffinity.Required.NodeSelectorTerms {
		if NodeSelectorTermMatches(t, n.Labels, n.Name) {
			return true
		}
	}
	return false
}
