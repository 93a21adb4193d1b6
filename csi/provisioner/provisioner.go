// Package provisioner is Kobune's CSI provisioner (Kubernetes'
// external-provisioner sidecar, in its node deployment): it runs beside a
// CSI driver on one node, talks to the driver only through the CSI gRPC
// services on its unix socket, and so works with any CSI driver whose
// volumes live on one node. It
//
//   - makes a volume for each claim whose StorageClass names the driver
//     as provisioner and that the scheduler placed on this node
//     (volume.kubernetes.io/selected-node, WaitForFirstConsumer); a claim
//     of an Immediate class is taken by the first node's provisioner that
//     writes its name into that annotation (an update with the claim's
//     resourceVersion: exactly one wins);
//   - calls CreateVolume (name pvc-<claim uid>, the claim's size and
//     access modes, the class's parameters, this node's topology as
//     requisite) and creates the PersistentVolume: reserved for the claim
//     (claimRef), the class's reclaim policy, node affinity from the
//     volume's topology, annotation pv.kubernetes.io/provisioned-by; the
//     binder (kobune-controller) then binds the pair;
//   - deletes a Released volume it made on this node whose policy is
//     Delete: DeleteVolume, then the PersistentVolume object;
//   - expands this node's volume of a bound claim whose request grew
//     (Kubernetes' external-resizer): ControllerExpandVolume, then the
//     volume's capacity and the claim's status.capacity. The API server
//     lets a request grow only when the class allows volume expansion.
//
// Both steps are idempotent (CreateVolume by name, the PV by its name), so
// a provisioner killed half-way finishes the work when it comes back.
package provisioner

import (
	"context"
	"fmt"
	"log"
	"slices"
	"strings"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/api/resource"
	"github.com/kobune/kobune/api/storage"
	"github.com/kobune/kobune/client"
	"github.com/kobune/kobune/client/reconcile"
)

// AnnProvisionedBy on a PersistentVolume: the provisioner that made it.
const AnnProvisionedBy = "pv.kubernetes.io/provisioned-by"

// Config configures a provisioner.
type Config struct {
	// NodeName is this node: claims selected to it are provisioned here.
	NodeName string
	// CSIAddress is the driver's unix socket.
	CSIAddress string
	// CallTimeout bounds each CSI call (1 min).
	CallTimeout time.Duration
	Logf        func(format string, args ...any)
}

// Provisioner makes and deletes the volumes of one driver on one node.
type Provisioner struct {
	cfg      Config
	client   *client.Client
	driver   string
	topology map[string]string
	ctrl     csi.ControllerClient
	claims   *client.Informer[*core.PersistentVolumeClaim]
	volumes  *client.Informer[*core.PersistentVolume]
	classes  *client.Informer[*storage.StorageClass]
	recorder *client.AsyncRecorder
	loop     *reconcile.Loop
}

// Run connects to the driver, learns its name and this node's topology,
// and provisions until ctx ends.
func Run(ctx context.Context, c *client.Client, cfg Config) error {
	if cfg.CallTimeout == 0 {
		cfg.CallTimeout = time.Minute
	}
	if cfg.Logf == nil {
		cfg.Logf = log.Printf
	}
	conn, err := grpc.NewClient("unix:"+cfg.CSIAddress, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer conn.Close()
	p := &Provisioner{cfg: cfg, client: c, ctrl: csi.NewControllerClient(conn)}
	if err := p.connect(ctx, conn); err != nil {
		return err
	}
	p.claims = client.NewInformer(client.For[*core.PersistentVolumeClaim](c), "", client.ListOptions{})
	p.volumes = client.NewInformer(client.For[*core.PersistentVolume](c), "", client.ListOptions{})
	p.classes = client.NewInformer(client.For[*storage.StorageClass](c), "", client.ListOptions{})
	p.recorder = client.NewAsyncRecorder(&client.Recorder{Client: c, Component: p.driver + "_" + cfg.NodeName, Host: cfg.NodeName}, 100)
	p.loop = reconcile.NewLoop("csi-provisioner", p, 2)
	claim := func(o *core.PersistentVolumeClaim) { p.loop.Queue.Add("claim/" + meta.Key(o)) }
	volume := func(o *core.PersistentVolume) { p.loop.Queue.Add("volume/" + o.Name) }
	p.claims.AddHandler(client.Handler[*core.PersistentVolumeClaim]{OnAdd: claim, OnUpdate: func(_, o *core.PersistentVolumeClaim) { claim(o) }})
	p.volumes.AddHandler(client.Handler[*core.PersistentVolume]{OnAdd: volume, OnUpdate: func(_, o *core.PersistentVolume) { volume(o) }})
	// A class made after its claims: look at the claims again.
	p.classes.AddHandler(client.Handler[*storage.StorageClass]{OnAdd: func(*storage.StorageClass) {
		for _, o := range p.claims.List() {
			claim(o)
		}
	}})
	go p.claims.Run(ctx)
	go p.volumes.Run(ctx)
	go p.classes.Run(ctx)
	go p.recorder.Run(ctx, 1)
	if !client.WaitForSync(ctx, p.claims.HasSynced, p.volumes.HasSynced, p.classes.HasSynced) {
		return ctx.Err()
	}
	cfg.Logf("provisioning volumes of %s on node %s (topology %v)", p.driver, cfg.NodeName, p.topology)
	p.loop.Run(ctx)
	return nil
}

// connect waits for the driver (it may start after the provisioner) and
// reads its name, capabilities and this node's topology.
func (p *Provisioner) connect(ctx context.Context, conn *grpc.ClientConn) error {
	id, node := csi.NewIdentityClient(conn), csi.NewNodeClient(conn)
	delay := 200 * time.Millisecond
	for {
		err := func() error {
			cctx, cancel := context.WithTimeout(ctx, p.cfg.CallTimeout)
			defer cancel()
			info, err := id.GetPluginInfo(cctx, &csi.GetPluginInfoRequest{})
			if err != nil {
				return err
			}
			caps, err := id.GetPluginCapabilities(cctx, &csi.GetPluginCapabilitiesRequest{})
			if err != nil {
				return err
			}
			controller := false
			for _, c := range caps.GetCapabilities() {
				controller = controller || c.GetService().GetType() == csi.PluginCapability_Service_CONTROLLER_SERVICE
			}
			if !controller {
				return fmt.Errorf("driver %s has no controller service: it cannot create volumes", info.GetName())
			}
			ni, err := node.NodeGetInfo(cctx, &csi.NodeGetInfoRequest{})
			if err != nil {
				return err
			}
			p.driver, p.topology = info.GetName(), ni.GetAccessibleTopology().GetSegments()
			return nil
		}()
		if err == nil {
			return nil
		}
		p.cfg.Logf("CSI driver at %s: %v (retrying in %v)", p.cfg.CSIAddress, err, delay)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(delay):
		}
		delay = min(2*delay, 5*time.Second)
	}
}

// Reconcile implements reconcile.Reconciler.
func (p *Provisioner) Reconcile(ctx context.Context, key string) (reconcile.Result, error) {
	if name, ok := strings.CutPrefix(key, "volume/"); ok {
		return reconcile.Result{}, p.syncVolume(ctx, name)
	}
	return reconcile.Result{}, p.syncClaim(ctx, strings.TrimPrefix(key, "claim/"))
}

// VolumeName is the PersistentVolume (and CSI volume name) made for a claim.
func VolumeName(claim *core.PersistentVolumeClaim) string { return "pvc-" + claim.UID }

func (p *Provisioner) syncClaim(ctx context.Context, key string) error {
	claim, ok := p.claims.GetByKey(key)
	if !ok || claim.DeletionTimestamp != nil {
		return nil
	}
	if claim.Spec.VolumeName != "" {
		return p.resize(ctx, claim)
	}
	class, ok := p.classes.Get("", core.ClaimClass(claim))
	if !ok || class.Provisioner != p.driver {
		return nil
	}
	if _, exists := p.volumes.Get("", VolumeName(claim)); exists {
		return nil // made; the binder binds it
	}
	switch node := claim.Annotations[core.AnnSelectedNode]; {
	case node == "" && class.VolumeBindingMode != nil && *class.VolumeBindingMode == storage.WaitForFirstConsumer:
		return nil // the scheduler picks the node
	case node == "":
		// Immediate: take the claim for this node; a conflict means
		// another node's provisioner took it first.
		c := *claim
		c.Annotations = make(map[string]string, len(claim.Annotations)+1)
		for k, v := range claim.Annotations {
			c.Annotations[k] = v
		}
		c.Annotations[core.AnnSelectedNode] = p.cfg.NodeName
		if _, err := client.For[*core.PersistentVolumeClaim](p.client).Update(ctx, &c); err != nil && !client.IsConflict(err) {
			return err
		}
		return nil // the update comes back through the informer
	case node != p.cfg.NodeName:
		return nil
	}
	return p.provision(ctx, claim, class)
}

func (p *Provisioner) provision(ctx context.Context, claim *core.PersistentVolumeClaim, class *storage.StorageClass) error {
	name := VolumeName(claim)
	p.recorder.Event(claim, core.EventTypeNormal, "Provisioning", fmt.Sprintf("External provisioner is provisioning volume for claim %q", meta.Key(claim)))
	size := claim.Spec.Resources.Requests[resource.Name("storage")]
	req := &csi.CreateVolumeRequest{
		Name:               name,
		CapacityRange:      &csi.CapacityRange{RequiredBytes: size.Value()},
		VolumeCapabilities: Capabilities(claim.Spec.AccessModes, ""),
		Parameters:         class.Parameters,
	}
	if len(p.topology) > 0 {
		t := []*csi.Topology{{Segments: p.topology}}
		req.AccessibilityRequirements = &csi.TopologyRequirement{Requisite: t, Preferred: t}
	}
	cctx, cancel := context.WithTimeout(ctx, p.cfg.CallTimeout)
	resp, err := p.ctrl.CreateVolume(cctx, req)
	cancel()
	if err != nil {
		p.recorder.Event(claim, core.EventTypeWarning, "ProvisioningFailed", fmt.Sprintf("failed to provision volume with StorageClass %q: %v", class.Name, err))
		return err
	}
	capacity := size
	if b := resp.GetVolume().GetCapacityBytes(); b > 0 {
		capacity = resource.NewQuantity(b, resource.BinarySI)
	}
	policy := core.ReclaimDelete
	if class.ReclaimPolicy != nil {
		policy = *class.ReclaimPolicy
	}
	pv := &core.PersistentVolume{
		ObjectMeta: meta.ObjectMeta{Name: name, Annotations: map[string]string{AnnProvisionedBy: p.driver}},
		Spec: core.PersistentVolumeSpec{
			Capacity:                      resource.List{resource.Name("storage"): capacity},
			AccessModes:                   claim.Spec.AccessModes,
			ClaimRef:                      &core.ObjectReference{Kind: "PersistentVolumeClaim", APIVersion: "v1", Namespace: claim.Namespace, Name: claim.Name, UID: claim.UID},
			PersistentVolumeReclaimPolicy: policy,
			StorageClassName:              class.Name,
			VolumeMode:                    claim.Spec.VolumeMode,
			NodeAffinity:                  affinity(resp.GetVolume().GetAccessibleTopology()),
			CSI: &core.CSIPersistentVolumeSource{Driver: p.driver, VolumeHandle: resp.GetVolume().GetVolumeId(),
				VolumeAttributes: resp.GetVolume().GetVolumeContext()},
		},
	}
	if _, err := client.For[*core.PersistentVolume](p.client).Create(ctx, pv); err != nil && !client.IsAlreadyExists(err) {
		p.recorder.Event(claim, core.EventTypeWarning, "ProvisioningFailed", fmt.Sprintf("volume %s was made but its PersistentVolume could not be written: %s", name, client.Message(err)))
		return err
	}
	p.recorder.Event(claim, core.EventTypeNormal, "ProvisioningSucceeded", fmt.Sprintf("Successfully provisioned volume %s", name))
	return nil
}

// affinity is the node affinity of a volume reachable from the given
// topologies: any one of them (each a term: every segment matches).
func affinity(tops []*csi.Topology) *core.VolumeNodeAffinity {
	if len(tops) == 0 {
		return nil
	}
	sel := &core.NodeSelector{}
	for _, t := range tops {
		var term core.NodeSelectorTerm
		for k, v := range t.GetSegments() {
			term.MatchExpressions = append(term.MatchExpressions, core.NodeSelectorRequirement{Key: k, Operator: "In", Values: []string{v}})
		}
		sel.NodeSelectorTerms = append(sel.NodeSelectorTerms, term)
	}
	return &core.VolumeNodeAffinity{Required: sel}
}

// Capabilities is the CSI form of a volume's access modes, as the
// external-provisioner and the kubelet map them.
func Capabilities(modes []core.PersistentVolumeAccessMode, fsType string) []*csi.VolumeCapability {
	var out []*csi.VolumeCapability
	for _, m := range modes {
		out = append(out, &csi.VolumeCapability{
			AccessType: &csi.VolumeCapability_Mount{Mount: &csi.VolumeCapability_MountVolume{FsType: fsType}},
			AccessMode: &csi.VolumeCapability_AccessMode{Mode: AccessMode(m)},
		})
	}
	return out
}

// AccessMode maps one access mode.
func AccessMode(m core.PersistentVolumeAccessMode) csi.VolumeCapability_AccessMode_Mode {
	return csi.VolumeCapability_AccessMode_Mode(csi.VolumeCapability_AccessMode_Mode_value[core.CSIAccessMode(m)])
}

// resize expands this node's volume of a bound claim whose request grew
// past the volume's capacity (Kubernetes' external-resizer): the driver's
// ControllerExpandVolume, then the volume's capacity, then the claim's
// status once no step on the node is needed.
func (p *Provisioner) resize(ctx context.Context, claim *core.PersistentVolumeClaim) error {
	pv, ok := p.volumes.Get("", claim.Spec.VolumeName)
	if !ok || pv.Spec.CSI == nil || pv.Spec.CSI.Driver != p.driver || !p.local(pv) {
		return nil
	}
	want, have := claim.Spec.Resources.Requests[resource.Name("storage")], pv.Spec.Capacity[resource.Name("storage")]
	if want.Cmp(have) > 0 {
		p.recorder.Event(claim, core.EventTypeNormal, "Resizing", fmt.Sprintf("External resizer is resizing volume %s", pv.Name))
		cctx, cancel := context.WithTimeout(ctx, p.cfg.CallTimeout)
		resp, err := p.ctrl.ControllerExpandVolume(cctx, &csi.ControllerExpandVolumeRequest{VolumeId: pv.Spec.CSI.VolumeHandle,
			CapacityRange: &csi.CapacityRange{RequiredBytes: want.Value()}, VolumeCapability: Capabilities(firstMode(pv), pv.Spec.CSI.FSType)[0]})
		cancel()
		if err != nil {
			p.recorder.Event(claim, core.EventTypeWarning, "VolumeResizeFailed", fmt.Sprintf("resize volume %q by resizer %q failed: %v", pv.Name, p.driver, err))
			return err
		}
		if resp.GetNodeExpansionRequired() {
			p.recorder.Event(claim, core.EventTypeWarning, "VolumeResizeFailed",
				fmt.Sprintf("driver %s needs a NodeExpandVolume step for volume %s, which kobune-agent does not make", p.driver, pv.Name))
			return nil
		}
		size := want
		if b := resp.GetCapacityBytes(); b > want.Value() {
			size = resource.NewQuantity(b, resource.BinarySI)
		}
		v := *pv
		v.Spec.Capacity = resource.List{resource.Name("storage"): size}
		updated, err := client.For[*core.PersistentVolume](p.client).Update(ctx, &v)
		if err != nil {
			return err
		}
		pv = updated
		p.recorder.Event(claim, core.EventTypeNormal, "VolumeResizeSuccessful", fmt.Sprintf("resize volume %q by resizer %q succeeded", pv.Name, p.driver))
	}
	capacity := pv.Spec.Capacity[resource.Name("storage")]
	if cur := claim.Status.Capacity[resource.Name("storage")]; claim.Status.Phase == core.ClaimBound && cur.Cmp(capacity) < 0 {
		c := *claim
		c.Status.Capacity = resource.List{resource.Name("storage"): capacity}
		_, err := client.For[*core.PersistentVolumeClaim](p.client).UpdateStatus(ctx, &c)
		return err
	}
	return nil
}

// firstMode is the volume's first access mode (ReadWriteOnce if none).
func firstMode(pv *core.PersistentVolume) []core.PersistentVolumeAccessMode {
	if len(pv.Spec.AccessModes) == 0 {
		return []core.PersistentVolumeAccessMode{core.ReadWriteOnce}
	}
	return pv.Spec.AccessModes[:1]
}

// syncVolume deletes a Released volume of this driver made on this node
// whose policy is Delete.
func (p *Provisioner) syncVolume(ctx context.Context, name string) error {
	pv, ok := p.volumes.Get("", name)
	if !ok || pv.DeletionTimestamp != nil || pv.Spec.CSI == nil || pv.Spec.CSI.Driver != p.driver || pv.Annotations[AnnProvisionedBy] != p.driver ||
		pv.Status.Phase != core.VolumeReleased || pv.Spec.PersistentVolumeReclaimPolicy != core.ReclaimDelete || !p.local(pv) {
		return nil
	}
	cctx, cancel := context.WithTimeout(ctx, p.cfg.CallTimeout)
	_, err := p.ctrl.DeleteVolume(cctx, &csi.DeleteVolumeRequest{VolumeId: pv.Spec.CSI.VolumeHandle})
	cancel()
	if err != nil {
		p.recorder.Event(pv, core.EventTypeWarning, "VolumeFailedDelete", err.Error())
		return err
	}
	err = client.For[*core.PersistentVolume](p.client).Delete(ctx, "", pv.Name, client.DeleteOptions{})
	if err != nil && !client.IsNotFound(err) {
		return err
	}
	p.cfg.Logf("deleted volume %s (its claim %s/%s is gone, reclaim policy Delete)", pv.Name, pv.Spec.ClaimRef.Namespace, pv.Spec.ClaimRef.Name)
	return nil
}

// local: is the volume on this node — its affinity satisfied by this
// node's topology? (Another node's provisioner deletes its own.)
func (p *Provisioner) local(pv *core.PersistentVolume) bool {
	if pv.Spec.NodeAffinity == nil || pv.Spec.NodeAffinity.Required == nil {
		return false
	}
	for _, term := range pv.Spec.NodeAffinity.Required.NodeSelectorTerms {
		ok := len(term.MatchExpressions) > 0
		for _, r := range term.MatchExpressions {
			v, has := p.topology[r.Key]
			ok = ok && has && r.Operator == "In" && slices.Contains(r.Values, v)
		}
		if ok {
			return true
		}
	}
	return false
}
