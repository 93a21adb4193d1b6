// Package persistentvolume is kube-controller-manager's PersistentVolume
// controllers: the binder (pv-controller), which binds each claim to a
// matching volume — smallest that fits: same class, every access mode the
// claim asks for, enough capacity, the claim's selector — and keeps
// both objects' phases (Available, Bound, Released, Lost); and the
// protection controllers, which remove the pvc-protection finalizer of a
// deleted claim once no pod uses it and the pv-protection finalizer of a
// deleted volume once it is not bound.
//
// Claims of a class with volumeBindingMode WaitForFirstConsumer wait until
// the scheduler has chosen a node for a pod that uses them (the annotation
// volume.kubernetes.io/selected-node); volumes that need provisioning wait
// for their class's provisioner.
package persistentvolume

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/api/resource"
	"github.com/kobune/kobune/api/storage"
	"github.com/kobune/kobune/client"
	"github.com/kobune/kobune/client/reconcile"
	"github.com/kobune/kobune/controller"
)

// Name is the binder's name in logs and events.
const Name = "persistentvolume-binder-controller"

// AnnSelectedNode on a claim: the node the scheduler chose for the first
// pod that uses it (WaitForFirstConsumer).
const AnnSelectedNode = core.AnnSelectedNode

// NoProvisioner is the provisioner of classes whose volumes are made by
// hand.
const NoProvisioner = "kubernetes.io/no-provisioner"

// Binder binds claims to volumes.
type Binder struct {
	client   *client.Client
	volumes  *client.Informer[*core.PersistentVolume]
	claims   *client.Informer[*core.PersistentVolumeClaim]
	classes  *client.Informer[*storage.StorageClass]
	nodes    *client.Informer[*core.Node]
	recorder *client.AsyncRecorder
	// Loop's keys are "claim/<ns>/<name>" and "volume/<name>".
	Loop *reconcile.Loop
}

// New returns the binder and registers its handlers.
func New(c *client.Client, inf *controller.Informers, recorder *client.AsyncRecorder) *Binder {
	b := &Binder{client: c, volumes: inf.Volumes, claims: inf.Claims, classes: inf.StorageClasses, nodes: inf.Nodes, recorder: recorder}
	b.Loop = reconcile.NewLoop(Name, b, 2)
	claim := func(c *core.PersistentVolumeClaim) { b.Loop.Queue.Add("claim/" + meta.Key(c)) }
	volume := func(v *core.PersistentVolume) {
		b.Loop.Queue.Add("volume/" + v.Name)
		if r := v.Spec.ClaimRef; r != nil {
			b.Loop.Queue.Add("claim/" + r.Namespace + "/" + r.Name)
		}
	}
	inf.Claims.AddHandler(client.Handler[*core.PersistentVolumeClaim]{OnAdd: claim, OnUpdate: func(_, c *core.PersistentVolumeClaim) { claim(c) },
		OnDelete: func(c *core.PersistentVolumeClaim) {
			claim(c)
			if c.Spec.VolumeName != "" {
				b.Loop.Queue.Add("volume/" + c.Spec.VolumeName)
			}
		}})
	inf.Volumes.AddHandler(client.Handler[*core.PersistentVolume]{OnAdd: volume, OnUpdate: func(_, v *core.PersistentVolume) { volume(v) }, OnDelete: volume})
	// A new volume may fit a claim that waits: look at the pending ones.
	inf.Volumes.AddHandler(client.Handler[*core.PersistentVolume]{OnAdd: func(*core.PersistentVolume) {
		for _, c := range inf.Claims.List() {
			if c.Spec.VolumeName == "" {
				claim(c)
			}
		}
	}})
	// A node seen (or relabelled) may reach a volume a claim placed on it
	// waits for.
	nodeChanged := func(n *core.Node) {
		for _, c := range inf.Claims.List() {
			if c.Spec.VolumeName == "" && c.Annotations[AnnSelectedNode] == n.Name {
				claim(c)
			}
		}
	}
	inf.Nodes.AddHandler(client.Handler[*core.Node]{OnAdd: nodeChanged, OnUpdate: func(old, n *core.Node) {
		if !maps.Equal(old.Labels, n.Labels) {
			nodeChanged(n)
		}
	}})
	return b
}

// Reconcile implements reconcile.Reconciler.
func (b *Binder) Reconcile(ctx context.Context, key string) (reconcile.Result, error) {
	if name, ok := strings.CutPrefix(key, "volume/"); ok {
		return reconcile.Result{}, b.syncVolume(ctx, name)
	}
	return b.syncClaim(ctx, strings.TrimPrefix(key, "claim/"))
}

// Resync is how long a claim that nothing fits waits before the binder
// looks again even if no event says something changed (kube-controller-
// manager's pv-controller resyncs every claim and volume every 15 s): the
// events that would announce a fit — a volume added, a node seen — are
// handled, and this is the net below them.
const Resync = 15 * time.Second

func (b *Binder) syncClaim(ctx context.Context, key string) (reconcile.Result, error) {
	claim, ok := b.claims.GetByKey(key)
	if !ok || claim.DeletionTimestamp != nil {
		return reconcile.Result{}, nil
	}
	if claim.Spec.VolumeName != "" {
		return reconcile.Result{}, b.syncBoundClaim(ctx, claim)
	}
	// A class named but not there still binds to volumes of that class
	// name, as in Kubernetes; it only cannot provision.
	class, classOK := b.classes.Get("", core.ClaimClass(claim))
	if !classOK {
		class = nil
	}
	if class != nil && class.VolumeBindingMode != nil && *class.VolumeBindingMode == storage.WaitForFirstConsumer && claim.Annotations[AnnSelectedNode] == "" {
		b.recorder.Event(claim, core.EventTypeNormal, "WaitForFirstConsumer", "waiting for first consumer to be created before binding")
		return reconcile.Result{}, nil
	}
	pv := b.match(claim)
	if pv == nil {
		switch node := claim.Annotations[AnnSelectedNode]; {
		case node != "" && !b.known(node):
			b.recorder.Event(claim, core.EventTypeNormal, "WaitForNode", fmt.Sprintf("the scheduler chose node %q, which this controller has not seen yet", node))
		case class == nil && core.ClaimClass(claim) != "":
			b.recorder.Event(claim, core.EventTypeWarning, "ProvisioningFailed", fmt.Sprintf("storageclass.storage.k8s.io %q not found", core.ClaimClass(claim)))
		case class == nil:
			b.recorder.Event(claim, core.EventTypeNormal, "FailedBinding", "no persistent volumes available for this claim and no storage class is set")
		case class.Provisioner == NoProvisioner:
			b.recorder.Event(claim, core.EventTypeNormal, "FailedBinding", fmt.Sprintf("no persistent volumes available for this claim and storage class %q has no provisioner", class.Name))
		default:
			b.recorder.Event(claim, core.EventTypeNormal, "ExternalProvisioning",
				fmt.Sprintf("Waiting for a volume to be created either by the external provisioner %q or manually by the system administrator", class.Provisioner))
		}
		return reconcile.Result{RequeueAfter: Resync}, nil
	}
	return reconcile.Result{}, b.bind(ctx, claim, pv)
}

// known: the node is in the informer's cache.
func (b *Binder) known(node string) bool {
	_, ok := b.nodes.Get("", node)
	return ok
}

// match is the smallest Available volume that fits the claim, or the one
// pre-bound to it (claimRef set by the user).
func (b *Binder) match(claim *core.PersistentVolumeClaim) *core.PersistentVolume {
	var best *core.PersistentVolume
	for _, pv := range b.volumes.List() {
		if pv.DeletionTimestamp != nil {
			continue
		}
		if r := pv.Spec.ClaimRef; r != nil {
			if r.Namespace != claim.Namespace || r.Name != claim.Name || (r.UID != "" && r.UID != claim.UID) {
				continue // bound or reserved to another claim
			}
			if core.VolumeFits(pv, claim) {
				return pv // reserved for this claim: it wins
			}
			continue
		}
		if !core.VolumeFits(pv, claim) || !b.reachable(pv, claim) {
			continue
		}
		if best == nil || pv.Spec.Capacity[resource.Name("storage")].Cmp(best.Spec.Capacity[resource.Name("storage")]) < 0 {
			best = pv
		}
	}
	return best
}

// reachable: a claim the scheduler placed (WaitForFirstConsumer) takes
// only a volume its node can reach.
func (b *Binder) reachable(pv *core.PersistentVolume, claim *core.PersistentVolumeClaim) bool {
	node := claim.Annotations[AnnSelectedNode]
	if node == "" || pv.Spec.NodeAffinity == nil || pv.Spec.NodeAffinity.Required == nil {
		return true
	}
	n, ok := b.nodes.Get("", node)
	return ok && core.VolumeReachableFrom(pv, n)
}

// bind writes the binding: the volume's claimRef and phase first (so a
// second claim cannot take it), then the claim's volumeName and phase.
func (b *Binder) bind(ctx context.Context, claim *core.PersistentVolumeClaim, pv *core.PersistentVolume) error {
	volumes, claims := client.For[*core.PersistentVolume](b.client), client.For[*core.PersistentVolumeClaim](b.client)
	if r := pv.Spec.ClaimRef; r == nil || r.UID != claim.UID {
		v := *pv
		v.Spec.ClaimRef = &core.ObjectReference{Kind: "PersistentVolumeClaim", APIVersion: "v1", Namespace: claim.Namespace, Name: claim.Name,
			UID: claim.UID, ResourceVersion: claim.ResourceVersion}
		v.Annotations = withAnnotation(pv.Annotations, core.AnnBoundByController, "yes")
		updated, err := volumes.Update(ctx, &v)
		if err != nil {
			return err // a conflict: someone else changed it; the next pass sees what
		}
		pv = updated
	}
	if pv.Status.Phase != core.VolumeBound {
		v := *pv
		v.Status.Phase = core.VolumeBound
		updated, err := volumes.UpdateStatus(ctx, &v)
		if err != nil {
			return err
		}
		pv = updated
	}
	c := *claim
	c.Spec.VolumeName = pv.Name
	c.Annotations = withAnnotation(withAnnotation(claim.Annotations, core.AnnBoundByController, "yes"), core.AnnBindCompleted, "yes")
	updated, err := claims.Update(ctx, &c)
	if err != nil {
		return err
	}
	if err := b.claimBound(ctx, updated, pv); err != nil {
		return err
	}
	b.recorder.Event(updated, core.EventTypeNormal, "Bound", fmt.Sprintf("bound to volume %s", pv.Name))
	return nil
}

// claimBound sets the claim's status from its volume.
func (b *Binder) claimBound(ctx context.Context, claim *core.PersistentVolumeClaim, pv *core.PersistentVolume) error {
	if claim.Status.Phase == core.ClaimBound && slices.Equal(claim.Status.AccessModes, pv.Spec.AccessModes) {
		return nil
	}
	c := *claim
	c.Status = core.PersistentVolumeClaimStatus{Phase: core.ClaimBound, AccessModes: pv.Spec.AccessModes, Capacity: pv.Spec.Capacity.DeepCopy()}
	_, err := client.For[*core.PersistentVolumeClaim](b.client).UpdateStatus(ctx, &c)
	return err
}

// syncBoundClaim: a claim with a volumeName — finish the binding, or say
// the volume is gone (Lost).
func (b *Binder) syncBoundClaim(ctx context.Context, claim *core.PersistentVolumeClaim) error {
	pv, ok := b.volumes.Get("", claim.Spec.VolumeName)
	if !ok {
		if claim.Annotations[core.AnnBindCompleted] != "" && claim.Status.Phase != core.ClaimLost {
			c := *claim
			c.Status.Phase = core.ClaimLost
			b.recorder.Event(claim, core.EventTypeWarning, "ClaimLost", "Bound claim has lost its PersistentVolume. Data on the volume is lost!")
			_, err := client.For[*core.PersistentVolumeClaim](b.client).UpdateStatus(ctx, &c)
			return err
		}
		return nil // a volume asked for by name that does not exist yet
	}
	if r := pv.Spec.ClaimRef; r != nil && (r.Namespace != claim.Namespace || r.Name != claim.Name || (r.UID != "" && r.UID != claim.UID)) {
		b.recorder.Event(claim, core.EventTypeWarning, "FailedBinding", fmt.Sprintf("volume %q already bound to a different claim", pv.Name))
		return nil
	}
	if pv.Spec.ClaimRef == nil || pv.Spec.ClaimRef.UID == "" || pv.Status.Phase != core.VolumeBound {
		if pv.Spec.ClaimRef == nil && !core.VolumeFits(pv, claim) {
			b.recorder.Event(claim, core.EventTypeWarning, "FailedBinding", fmt.Sprintf("volume %q does not fit the claim (class, access modes or size)", pv.Name))
			return nil
		}
		return b.bind(ctx, claim, pv)
	}
	return b.claimBound(ctx, claim, pv)
}

// syncVolume keeps a volume's phase: Available without a claim, Bound to
// one that exists, Released once its claim is gone (with Retain it stays
// so, for an administrator; with Delete a CSI volume is deleted by its
// provisioner, any other cannot be and is Failed).
func (b *Binder) syncVolume(ctx context.Context, name string) error {
	pv, ok := b.volumes.Get("", name)
	if !ok {
		return nil
	}
	phase, reason, message := pv.Status.Phase, pv.Status.Reason, pv.Status.Message
	switch r := pv.Spec.ClaimRef; {
	case r == nil:
		phase, reason, message = core.VolumeAvailable, "", ""
	case r.UID == "":
		// Reserved by the user for a claim: bound when that claim is.
		if phase == core.VolumePending || phase == "" {
			phase = core.VolumeAvailable
		}
	default:
		claim, exists := b.claims.Get(r.Namespace, r.Name)
		switch {
		case exists && claim.UID == r.UID:
			if claim.Spec.VolumeName == pv.Name {
				phase, reason, message = core.VolumeBound, "", ""
			}
		case phase == core.VolumeReleased || phase == core.VolumeFailed:
		case pv.Spec.PersistentVolumeReclaimPolicy == core.ReclaimDelete && pv.Spec.CSI == nil:
			phase, reason, message = core.VolumeFailed, "VolumeFailedDelete", "the claim is gone and the policy is Delete, but only volumes of a CSI driver can be deleted"
			b.recorder.Event(pv, core.EventTypeWarning, reason, message)
		default:
			phase, reason, message = core.VolumeReleased, "", ""
			b.recorder.Event(pv, core.EventTypeNormal, "Released", fmt.Sprintf("claim %s/%s is gone", r.Namespace, r.Name))
		}
	}
	if phase == pv.Status.Phase && reason == pv.Status.Reason && message == pv.Status.Message {
		return nil
	}
	v := *pv
	v.Status = core.PersistentVolumeStatus{Phase: phase, Reason: reason, Message: message}
	_, err := client.For[*core.PersistentVolume](b.client).UpdateStatus(ctx, &v)
	return err
}

func withAnnotation(m map[string]string, k, v string) map[string]string {
	out := make(map[string]string, len(m)+1)
	for a, b := range m {
		out[a] = b
	}
	out[k] = v
	return out
}
