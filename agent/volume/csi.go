package volume

// The CSI volume plugin (the kubelet's kubernetes.io/csi): a PersistentVolume
// with a csi source is mounted by its driver, through the CSI Node service
// on the driver's unix socket. Drivers are found as sockets under the
// plugin directory, <Plugins.Dir>/<driver>/csi.sock (the kubelet's
// /var/lib/kubelet/plugins layout; the kubelet learns the path through a
// registration socket, Kobune by looking).
//
// A volume is staged once per node (NodeStageVolume on
// <Plugins.Dir>/kubernetes.io/csi/<driver>/<sha256 of handle>/globalmount,
// when the driver has STAGE_UNSTAGE_VOLUME) and published once per pod
// (NodePublishVolume on <pods>/<uid>/volumes/kubernetes.io~csi/<name>/mount).
// Before each call a vol_data.json beside the path records driver and
// handle, so an agent killed at any point knows, when it comes back, what
// to unpublish and unstage: Teardown unpublishes every recorded volume of
// the pod, then unstages every staged volume no pod records any more.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/storage"
)

const csiPlugin = "kubernetes.io~csi"

// callTimeout bounds one CSI call (the kubelet's is 2 min for mounts).
const callTimeout = time.Minute

// Driver is a CSI driver found on the node, as NodeGetInfo described it.
type Driver struct {
	Name     string
	Socket   string
	NodeID   string
	Topology map[string]string
	// MaxVolumes is the driver's limit per node (0: none).
	MaxVolumes int64
	stage      bool
	conn       *grpc.ClientConn
	node       csi.NodeClient
}

// Plugins are the node's CSI drivers.
type Plugins struct {
	// Dir holds the drivers' sockets and the staging paths.
	Dir string

	mu      sync.Mutex
	drivers map[string]*Driver // by name
	sockets map[string]string  // socket → name
}

// Discover looks for driver sockets and asks each new one what it is; a
// driver whose socket is gone is forgotten. It reports whether the set
// changed, and errors of sockets that did not answer (tried again next
// time).
func (p *Plugins) Discover(ctx context.Context) (bool, error) {
	found, err := filepath.Glob(filepath.Join(p.Dir, "*", "csi.sock"))
	if err != nil {
		return false, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.drivers == nil {
		p.drivers, p.sockets = map[string]*Driver{}, map[string]string{}
	}
	changed := false
	present := map[string]bool{}
	var errs []error
	for _, sock := range found {
		present[sock] = true
		if _, known := p.sockets[sock]; known {
			continue
		}
		d, err := probe(ctx, sock)
		if err != nil {
			errs = append(errs, fmt.Errorf("CSI driver at %s: %w", sock, err))
			continue
		}
		if old, ok := p.drivers[d.Name]; ok {
			old.conn.Close()
			delete(p.sockets, old.Socket)
		}
		p.drivers[d.Name], p.sockets[sock] = d, d.Name
		changed = true
	}
	for sock, name := range p.sockets {
		if !present[sock] {
			p.drivers[name].conn.Close()
			delete(p.drivers, name)
			delete(p.sockets, sock)
			changed = true
		}
	}
	return changed, errors.Join(errs...)
}

func probe(ctx context.Context, sock string) (*Driver, error) {
	conn, err := grpc.NewClient("unix:"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	info, err := csi.NewIdentityClient(conn).GetPluginInfo(ctx, &csi.GetPluginInfoRequest{})
	if err != nil {
		conn.Close()
		return nil, err
	}
	node := csi.NewNodeClient(conn)
	ni, err := node.NodeGetInfo(ctx, &csi.NodeGetInfoRequest{})
	if err != nil {
		conn.Close()
		return nil, err
	}
	caps, err := node.NodeGetCapabilities(ctx, &csi.NodeGetCapabilitiesRequest{})
	if err != nil {
		conn.Close()
		return nil, err
	}
	d := &Driver{Name: info.GetName(), Socket: sock, NodeID: ni.GetNodeId(), Topology: ni.GetAccessibleTopology().GetSegments(),
		MaxVolumes: ni.GetMaxVolumesPerNode(), conn: conn, node: node}
	for _, c := range caps.GetCapabilities() {
		d.stage = d.stage || c.GetRpc().GetType() == csi.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME
	}
	if d.Name == "" || d.NodeID == "" {
		conn.Close()
		return nil, errors.New("the driver answered without a name or node id")
	}
	return d, nil
}

// Drivers are the registered drivers, by name.
func (p *Plugins) Drivers() []Driver {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]Driver, 0, len(p.drivers))
	for _, d := range p.drivers {
		out = append(out, *d)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func (p *Plugins) driver(name string) (*Driver, error) {
	if p == nil {
		return nil, fmt.Errorf("CSI driver %s: this node has no CSI plugin directory", name)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	d, ok := p.drivers[name]
	if !ok {
		return nil, fmt.Errorf("driver name %s not found in the list of registered CSI drivers (its socket %s is missing or does not answer)",
			name, filepath.Join(p.Dir, name, "csi.sock"))
	}
	return d, nil
}

// stagingDir is where a volume is staged on this node (the kubelet's path).
func (p *Plugins) stagingDir(driver, handle string) string {
	sum := sha256.Sum256([]byte(handle))
	return filepath.Join(p.Dir, "kubernetes.io", "csi", driver, hex.EncodeToString(sum[:]))
}

// volData is what vol_data.json records of a staged or published volume.
type volData struct {
	Driver       string `json:"driverName"`
	VolumeHandle string `json:"volumeHandle"`
	SpecVolumeID string `json:"specVolID,omitempty"`
	// StagingPath is the staging path a published volume was given.
	StagingPath string `json:"stagingPath,omitempty"`
}

func writeVolData(dir string, d volData) error {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return err
	}
	b, _ := json.Marshal(d)
	tmp := filepath.Join(dir, ".vol_data.json.tmp")
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(dir, "vol_data.json"))
}

func readVolData(dir string) (volData, error) {
	var d volData
	b, err := os.ReadFile(filepath.Join(dir, "vol_data.json"))
	if err != nil {
		return d, err
	}
	return d, json.Unmarshal(b, &d)
}

// csiSetup stages (once per node) and publishes (for this pod) a
// PersistentVolume of a CSI driver, and returns the path the pod's
// containers bind.
func (m *Manager) csiSetup(ctx context.Context, pod *core.Pod, volName string, pv *core.PersistentVolume, readOnly bool) (string, error) {
	src := pv.Spec.CSI
	mode := core.ReadWriteOnce
	if len(pv.Spec.AccessModes) > 0 {
		mode = pv.Spec.AccessModes[0]
	}
	return m.csiPublish(ctx, pod, volName, csiVolume{driver: src.Driver, handle: src.VolumeHandle, specName: pv.Name, fsType: src.FSType,
		mode: mode, readOnly: readOnly || src.ReadOnly, attrs: src.VolumeAttributes, lifecycle: storage.VolumeLifecyclePersistent})
}

// csiInlineSetup publishes a pod's inline csi volume: the driver makes it
// from the volume attributes when it is published, and removes it when
// it is unpublished. Its handle is the kubelet's: "csi-" and the SHA-256
// of the pod's uid and the volume's name. Inline volumes are not staged.
func (m *Manager) csiInlineSetup(ctx context.Context, pod *core.Pod, vol *core.Volume) (string, error) {
	src := vol.CSI
	sum := sha256.Sum256([]byte(pod.UID + vol.Name))
	cv := csiVolume{driver: src.Driver, handle: "csi-" + hex.EncodeToString(sum[:]), specName: vol.Name, mode: core.ReadWriteOnce,
		readOnly: src.ReadOnly != nil && *src.ReadOnly, attrs: src.VolumeAttributes, lifecycle: storage.VolumeLifecycleEphemeral}
	if src.FSType != nil {
		cv.fsType = *src.FSType
	}
	if r := src.NodePublishSecretRef; r != nil {
		sec, err := m.Sources.Secret(ctx, pod.Namespace, r.Name)
		if errors.Is(err, ErrNotFound) {
			return "", fmt.Errorf("nodePublishSecretRef: secret %q not found", r.Name)
		}
		if err != nil {
			return "", fmt.Errorf("nodePublishSecretRef: secret %q: %w", r.Name, err)
		}
		cv.secrets = map[string]string{}
		for k, b := range sec.Data {
			cv.secrets[k] = string(b)
		}
	}
	return m.csiPublish(ctx, pod, vol.Name, cv)
}

// csiVolume is what the driver is asked to publish for a pod.
type csiVolume struct {
	driver, handle string
	// specName names the volume in errors: the PersistentVolume, or the
	// pod's volume for an inline one.
	specName  string
	fsType    string
	mode      core.PersistentVolumeAccessMode
	readOnly  bool
	attrs     map[string]string
	secrets   map[string]string
	lifecycle storage.VolumeLifecycleMode
}

// csiPublish stages the volume if the driver stages (persistent volumes
// only) and publishes it for the pod, as the driver's CSIDriver object
// (if any) asks: the lifecycle mode must be one it lists, a driver that
// needs attaching is refused (Kobune attaches nothing), pod information
// goes into the volume context when podInfoOnMount, and the pod's fsGroup
// takes the volume when fsGroupPolicy says so (once, when first published).
func (m *Manager) csiPublish(ctx context.Context, pod *core.Pod, volName string, cv csiVolume) (string, error) {
	d, err := m.CSI.driver(cv.driver)
	if err != nil {
		return "", err
	}
	spec, err := m.csiDriverSpec(ctx, cv.driver)
	if err != nil {
		return "", err
	}
	if spec != nil && !spec.Mode(cv.lifecycle) {
		return "", fmt.Errorf("CSI driver %s does not support the %s lifecycle mode: its CSIDriver object does not list it in spec.volumeLifecycleModes", cv.driver, cv.lifecycle)
	}
	if spec == nil && cv.lifecycle == storage.VolumeLifecycleEphemeral {
		return "", fmt.Errorf("CSI driver %s has no CSIDriver object, which an inline csi volume needs (with Ephemeral in spec.volumeLifecycleModes)", cv.driver)
	}
	if spec != nil && spec.AttachRequired != nil && *spec.AttachRequired && cv.lifecycle == storage.VolumeLifecyclePersistent {
		return "", fmt.Errorf("CSI driver %s requires attach (its CSIDriver says attachRequired: true) and Kobune has no attach/detach controller: "+
			"use a driver that needs no ControllerPublishVolume and set attachRequired: false", cv.driver)
	}
	attrs := cv.attrs
	if spec != nil && spec.PodInfoOnMount != nil && *spec.PodInfoOnMount {
		attrs = map[string]string{}
		for k, val := range cv.attrs {
			attrs[k] = val
		}
		attrs["csi.storage.k8s.io/pod.name"] = pod.Name
		attrs["csi.storage.k8s.io/pod.namespace"] = pod.Namespace
		attrs["csi.storage.k8s.io/pod.uid"] = pod.UID
		attrs["csi.storage.k8s.io/serviceAccount.name"] = core.PodServiceAccount(pod)
		attrs["csi.storage.k8s.io/ephemeral"] = strconv.FormatBool(cv.lifecycle == storage.VolumeLifecycleEphemeral)
	}
	capability := &csi.VolumeCapability{
		AccessType: &csi.VolumeCapability_Mount{Mount: &csi.VolumeCapability_MountVolume{FsType: cv.fsType}},
		AccessMode: &csi.VolumeCapability_AccessMode{Mode: csiAccessMode(cv.mode)},
	}
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	staging := ""
	if d.stage && cv.lifecycle == storage.VolumeLifecyclePersistent {
		dir := m.CSI.stagingDir(d.Name, cv.handle)
		staging = filepath.Join(dir, "globalmount")
		if err := writeVolData(dir, volData{Driver: d.Name, VolumeHandle: cv.handle, SpecVolumeID: cv.specName}); err != nil {
			return "", err
		}
		if _, err := d.node.NodeStageVolume(ctx, &csi.NodeStageVolumeRequest{VolumeId: cv.handle, StagingTargetPath: staging,
			VolumeCapability: capability, VolumeContext: attrs}); err != nil {
			return "", fmt.Errorf("MountVolume.MountDevice failed for volume %q: rpc error: %w", cv.specName, err)
		}
	}
	dir := m.dir(pod, csiPlugin, volName)
	target := filepath.Join(dir, "mount")
	_, err = readVolData(dir)
	first := err != nil
	if err := writeVolData(dir, volData{Driver: d.Name, VolumeHandle: cv.handle, SpecVolumeID: cv.specName, StagingPath: staging}); err != nil {
		return "", err
	}
	if _, err := d.node.NodePublishVolume(ctx, &csi.NodePublishVolumeRequest{VolumeId: cv.handle, StagingTargetPath: staging,
		TargetPath: target, VolumeCapability: capability, Readonly: cv.readOnly, VolumeContext: attrs, Secrets: cv.secrets}); err != nil {
		return "", fmt.Errorf("rpc error: NodePublishVolume of %q: %w", cv.specName, err)
	}
	if g := fsGroupOf(pod); first && g != nil && !cv.readOnly && fsGroupApplies(spec, cv) {
		if err := groupOwn(target, int(*g), false); err != nil {
			return "", fmt.Errorf("volume %q: give it to the pod's fsGroup %d: %w", cv.specName, *g, err)
		}
	}
	return target, nil
}

// fsGroupApplies is the CSIDriver's fsGroupPolicy for a volume: File
// always, None never, ReadWriteOnceWithFSType (the default, also with no
// CSIDriver) for a ReadWriteOnce volume with an fsType.
func fsGroupApplies(spec *storage.CSIDriverSpec, cv csiVolume) bool {
	policy := storage.ReadWriteOnceWithFSTypeFSGroupPolicy
	if spec != nil && spec.FSGroupPolicy != nil {
		policy = *spec.FSGroupPolicy
	}
	switch policy {
	case storage.FileFSGroupPolicy:
		return true
	case storage.NoneFSGroupPolicy:
		return false
	}
	return cv.fsType != "" && cv.mode == core.ReadWriteOnce
}

// csiDriverSpec is the driver's CSIDriver object's spec, or nil when it
// has none.
func (m *Manager) csiDriverSpec(ctx context.Context, name string) (*storage.CSIDriverSpec, error) {
	d, err := m.Sources.CSIDriver(ctx, name)
	if errors.Is(err, ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("CSIDriver %s: %w", name, err)
	}
	return &d.Spec, nil
}

// csiAccessMode is the CSI form of an access mode.
func csiAccessMode(m core.PersistentVolumeAccessMode) csi.VolumeCapability_AccessMode_Mode {
	return csi.VolumeCapability_AccessMode_Mode(csi.VolumeCapability_AccessMode_Mode_value[core.CSIAccessMode(m)])
}

// csiTeardown unpublishes the pod's CSI volumes (each through its driver,
// which unmounts and removes the target) and removes their directories.
func (m *Manager) csiTeardown(ctx context.Context, podDir string) error {
	dirs, _ := filepath.Glob(filepath.Join(podDir, "volumes", csiPlugin, "*"))
	for _, dir := range dirs {
		rec, err := readVolData(dir)
		if errors.Is(err, fs.ErrNotExist) {
			if err := os.Remove(filepath.Join(dir, "mount")); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err // something is mounted there that no record names: left for the generic unmount
			}
			if err := os.Remove(dir); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
			continue
		}
		if err != nil {
			return fmt.Errorf("%s: %w", dir, err)
		}
		d, err := m.CSI.driver(rec.Driver)
		if err != nil {
			return fmt.Errorf("UnmountVolume.TearDown failed for volume %q: %w", rec.SpecVolumeID, err)
		}
		cctx, cancel := context.WithTimeout(ctx, callTimeout)
		_, err = d.node.NodeUnpublishVolume(cctx, &csi.NodeUnpublishVolumeRequest{VolumeId: rec.VolumeHandle, TargetPath: filepath.Join(dir, "mount")})
		cancel()
		if err != nil {
			return fmt.Errorf("UnmountVolume.TearDown failed for volume %q: rpc error: %w", rec.SpecVolumeID, err)
		}
		if err := os.RemoveAll(dir); err != nil {
			return err
		}
	}
	return nil
}

// UnstageUnused unstages every volume staged on this node that no pod's
// record names any more (its last pod gone, or the agent killed between
// staging and publishing for a pod that was then deleted).
func (m *Manager) UnstageUnused(ctx context.Context) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.unstageUnused(ctx)
}

func (m *Manager) unstageUnused(ctx context.Context) error {
	if m.CSI == nil {
		return nil
	}
	staged, _ := filepath.Glob(filepath.Join(m.CSI.Dir, "kubernetes.io", "csi", "*", "*", "vol_data.json"))
	if len(staged) == 0 {
		return nil
	}
	inUse := map[string]bool{}
	published, _ := filepath.Glob(filepath.Join(m.Dir, "*", "volumes", csiPlugin, "*", "vol_data.json"))
	for _, p := range published {
		if rec, err := readVolData(filepath.Dir(p)); err == nil {
			inUse[rec.Driver+"\x00"+rec.VolumeHandle] = true
		}
	}
	var errs []error
	for _, p := range staged {
		dir := filepath.Dir(p)
		rec, err := readVolData(dir)
		if err != nil || inUse[rec.Driver+"\x00"+rec.VolumeHandle] {
			continue
		}
		d, err := m.CSI.driver(rec.Driver)
		if err != nil {
			errs = append(errs, fmt.Errorf("UnmountDevice failed for volume %q: %w", rec.SpecVolumeID, err))
			continue
		}
		cctx, cancel := context.WithTimeout(ctx, callTimeout)
		_, err = d.node.NodeUnstageVolume(cctx, &csi.NodeUnstageVolumeRequest{VolumeId: rec.VolumeHandle, StagingTargetPath: filepath.Join(dir, "globalmount")})
		cancel()
		if err != nil {
			errs = append(errs, fmt.Errorf("UnmountDevice failed for volume %q: rpc error: %w", rec.SpecVolumeID, err))
			continue
		}
		if err := os.RemoveAll(dir); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
