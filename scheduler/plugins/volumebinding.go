package plugins

import (
	"context"
	"fmt"
	"slices"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/resource"
	"github.com/kobune/kobune/api/selector"
	"github.com/kobune/kobune/api/storage"
	"github.com/kobune/kobune/scheduler/framework"
)

// VolumeBinding keeps a pod with PersistentVolumeClaims to the nodes that
// can reach their volumes (kube-scheduler's VolumeBinding): a bound
// claim's volume must admit the node by its node affinity (a local volume:
// its node); an unbound claim of a WaitForFirstConsumer class needs an
// available volume the node reaches, or a class that provisions; an
// unbound claim of any other class keeps the pod waiting until the binder
// binds it; a claim a CSI driver will provision, when the driver's
// CSIDriver says storageCapacity, needs a CSIStorageCapacity of its class
// for the node with room for it (kube-scheduler's capacity check); a ReadWriteOncePod claim another pod uses keeps the pod out
// (kube-scheduler's VolumeRestrictions). The scheduler then names the chosen node on the waiting claims
// (volume.kubernetes.io/selected-node) so the binder binds them there.
//
// Its score prefers, for a pod whose WaitForFirstConsumer claims would
// take existing volumes, the node whose volumes fit them most tightly
// (kube-scheduler's VolumeBinding score with its default shape:
// utilization 0 % scores 0, 100 % scores the maximum), so large volumes
// stay free for large claims; a claim a provisioner will make a volume for
// counts as 0 %.
type VolumeBinding struct{}

var (
	_ framework.FilterPlugin    = VolumeBinding{}
	_ framework.PreFilterPlugin = VolumeBinding{}
	_ framework.ScorePlugin     = VolumeBinding{}
)

// Name implements framework.Plugin.
func (VolumeBinding) Name() string { return "VolumeBinding" }

// noProvisioner is the provisioner of classes whose volumes are made by hand.
const noProvisioner = "kubernetes.io/no-provisioner"

type volumeState struct {
	bound   []*core.PersistentVolume
	waiting []*core.PersistentVolumeClaim
	classes map[string]*storage.StorageClass
	// selected: class → node → other claims of that class (made by hand:
	// no provisioner) already selected for the node but not bound yet. The
	// binder will take one free volume there for each, so a node has room
	// for this pod's claim only with more free volumes than that — the
	// part of Kubernetes' assume cache for volumes that Kobune needs,
	// since the PersistentVolume binder, not the scheduler, picks the
	// volume.
	selected map[string]map[string]int
}

// PreFilter implements framework.PreFilterPlugin: the pod's claims, read
// once.
func (VolumeBinding) PreFilter(_ context.Context, state *framework.CycleState, pod *core.Pod) *framework.Status {
	if state.Volumes == nil {
		return nil
	}
	var vs volumeState
	for _, v := range pod.Spec.Volumes {
		if v.PersistentVolumeClaim == nil {
			continue
		}
		name := v.PersistentVolumeClaim.ClaimName
		c, ok := state.Volumes.Claim(pod.Namespace, name)
		switch {
		case !ok:
			return framework.NewStatus(framework.UnschedulableAndUnresolvable, fmt.Sprintf("persistentvolumeclaim %q not found", name))
		case c.DeletionTimestamp != nil:
			return framework.NewStatus(framework.UnschedulableAndUnresolvable, fmt.Sprintf("persistentvolumeclaim %q is being deleted", name))
		case slices.Contains(c.Spec.AccessModes, core.ReadWriteOncePod) && claimInUse(state, pod, name):
			// Kubernetes' VolumeRestrictions: one pod at a time. Preempting
			// the user (lower priority) can make room.
			return framework.NewStatus(framework.Unschedulable, "node has pod using PersistentVolumeClaim with the same name and ReadWriteOncePod access mode")
		case c.Spec.VolumeName != "":
			pv, ok := state.Volumes.Volume(c.Spec.VolumeName)
			if !ok {
				return framework.NewStatus(framework.UnschedulableAndUnresolvable, fmt.Sprintf("persistentvolume %q not found", c.Spec.VolumeName))
			}
			vs.bound = append(vs.bound, pv)
		default:
			class, ok := state.Volumes.Class(core.ClaimClass(c))
			if !ok || class.VolumeBindingMode == nil || *class.VolumeBindingMode != storage.WaitForFirstConsumer {
				return framework.NewStatus(framework.UnschedulableAndUnresolvable, "pod has unbound immediate PersistentVolumeClaims")
			}
			if vs.classes == nil {
				vs.classes = map[string]*storage.StorageClass{}
			}
			vs.classes[class.Name] = class
			vs.waiting = append(vs.waiting, c)
		}
	}
	for _, c := range vs.waiting {
		if vs.classes[core.ClaimClass(c)].Provisioner != noProvisioner || vs.selected != nil {
			continue
		}
		vs.selected = map[string]map[string]int{}
		for _, other := range state.Volumes.Claims() {
			node := other.Annotations[core.AnnSelectedNode]
			if node == "" || other.Spec.VolumeName != "" || other.DeletionTimestamp != nil || (other.Namespace == pod.Namespace && isPodClaim(pod, other.Name)) {
				continue
			}
			cls := core.ClaimClass(other)
			if vs.selected[cls] == nil {
				vs.selected[cls] = map[string]int{}
			}
			vs.selected[cls][node]++
		}
	}
	state.Write("VolumeBinding", &vs)
	return nil
}

// isPodClaim: the pod mounts the claim of that name.
func isPodClaim(pod *core.Pod, claim string) bool {
	for _, v := range pod.Spec.Volumes {
		if v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ClaimName == claim {
			return true
		}
	}
	return false
}

// claimInUse: another placed pod that has not finished uses the claim.
func claimInUse(state *framework.CycleState, pod *core.Pod, claim string) bool {
	for _, n := range state.AllNodes {
		for _, p := range n.Pods {
			if p.UID == pod.UID || p.Namespace != pod.Namespace || p.Status.Phase == core.PodSucceeded || p.Status.Phase == core.PodFailed {
				continue
			}
			for _, v := range p.Spec.Volumes {
				if v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ClaimName == claim {
					return true
				}
			}
		}
	}
	return false
}

// Filter implements framework.FilterPlugin.
func (VolumeBinding) Filter(_ context.Context, state *framework.CycleState, _ *core.Pod, n *framework.NodeInfo) *framework.Status {
	vs, _ := state.Read("VolumeBinding").(*volumeState)
	if vs == nil {
		return nil
	}
	for _, pv := range vs.bound {
		if !core.VolumeReachableFrom(pv, n.Node) {
			return framework.NewStatus(framework.UnschedulableAndUnresolvable, "node(s) had volume node affinity conflict")
		}
	}
	for _, c := range vs.waiting {
		if class := vs.classes[core.ClaimClass(c)]; class.Provisioner != noProvisioner {
			// A provisioner makes the volume for the node chosen, if it has
			// room there (when its driver publishes its capacity).
			if !enoughCapacity(state.Volumes, class, c, n.Node) {
				return framework.NewStatus(framework.UnschedulableAndUnresolvable, "node(s) did not have enough free storage")
			}
			continue
		}
		free, mine := 0, false
		for _, pv := range state.Volumes.Volumes() {
			r := pv.Spec.ClaimRef
			if r != nil && (r.Namespace != c.Namespace || r.Name != c.Name) {
				continue
			}
			if pv.DeletionTimestamp == nil && core.VolumeFits(pv, c) && core.VolumeReachableFrom(pv, n.Node) {
				free++
				mine = mine || r != nil // already reserved for this claim
			}
		}
		if !mine && free <= vs.selected[core.ClaimClass(c)][n.Node.Name] {
			return framework.NewStatus(framework.UnschedulableAndUnresolvable, "node(s) didn't find available persistent volumes to bind")
		}
	}
	return nil
}

// enoughCapacity is kube-scheduler's capacity check for a claim a
// provisioner will make a volume for: when the class's provisioner is a
// CSI driver whose CSIDriver says storageCapacity, some CSIStorageCapacity
// of the class whose nodeTopology selects the node must fit the claim's
// request (maximumVolumeSize where set, else capacity); any other
// provisioner is trusted.
func enoughCapacity(l framework.VolumeLister, class *storage.StorageClass, c *core.PersistentVolumeClaim, n *core.Node) bool {
	d, ok := l.Driver(class.Provisioner)
	if !ok || d.Spec.StorageCapacity == nil || !*d.Spec.StorageCapacity {
		return true
	}
	size := c.Spec.Resources.Requests[resource.Name("storage")]
	for _, capacity := range l.Capacities() {
		if capacity.StorageClassName != class.Name || capacity.NodeTopology == nil {
			continue
		}
		sel, err := selector.FromLabelSelector(capacity.NodeTopology)
		if err == nil && sel.Matches(n.Labels) && capacity.Fits(size) {
			return true
		}
	}
	return false
}

// Score implements framework.ScorePlugin: the mean utilization (request /
// capacity) of the volumes the pod's waiting claims would take on the node.
func (VolumeBinding) Score(_ context.Context, state *framework.CycleState, _ *core.Pod, n *framework.NodeInfo) (int64, *framework.Status) {
	vs, _ := state.Read("VolumeBinding").(*volumeState)
	if vs == nil || len(vs.waiting) == 0 {
		return 0, nil
	}
	var sum float64
	for _, c := range vs.waiting {
		var best *core.PersistentVolume
		for _, pv := range state.Volumes.Volumes() {
			if r := pv.Spec.ClaimRef; pv.DeletionTimestamp != nil || (r != nil && (r.Namespace != c.Namespace || r.Name != c.Name)) ||
				!core.VolumeFits(pv, c) || !core.VolumeReachableFrom(pv, n.Node) {
				continue
			}
			if best == nil || pv.Spec.Capacity[resource.Name("storage")].Cmp(best.Spec.Capacity[resource.Name("storage")]) < 0 {
				best = pv
			}
		}
		if best == nil {
			continue // provisioned: 0 %
		}
		req, capacity := c.Spec.Resources.Requests[resource.Name("storage")], best.Spec.Capacity[resource.Name("storage")]
		if capacity.Value() > 0 {
			sum += min(1, float64(req.Value())/float64(capacity.Value()))
		}
	}
	return int64(sum / float64(len(vs.waiting)) * framework.MaxNodeScore), nil
}
