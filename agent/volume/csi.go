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
	"sync"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/kobune/kobune/api/core"
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

// csiSetup stages (once per node) and publishes (for this pod) a CSI
// volume, and returns the path the pod's containers bind.
func (m *Manager) csiSetup(ctx context.Context, pod *core.Pod, volName string, pv *core.PersistentVolume, readOnly bool) (string, error) {
	src := pv.Spec.CSI
	d, err := m.CSI.driver(src.Driver)
	if err != nil {
		return "", err
	}
	mode := core.ReadWriteOnce
	if len(pv.Spec.AccessModes) > 0 {
		mode = pv.Spec.AccessModes[0]
	}
	capability := &csi.VolumeCapability{
		AccessType: &csi.VolumeCapability_Mount{Mount: &csi.VolumeCapability_MountVolume{FsType: src.FSType}},
		AccessMode: &csi.VolumeCapability_AccessMode{Mode: csiAccessMode(mode)},
	}
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	staging := ""
	if d.stage {
		dir := m.CSI.stagingDir(d.Name, src.VolumeHandle)
		staging = filepath.Join(dir, "globalmount")
		if err := writeVolData(dir, volData{Driver: d.Name, VolumeHandle: src.VolumeHandle, SpecVolumeID: pv.Name}); err != nil {
			return "", err
		}
		if _, err := d.node.NodeStageVolume(ctx, &csi.NodeStageVolumeRequest{VolumeId: src.VolumeHandle, StagingTargetPath: staging,
			VolumeCapability: capability, VolumeContext: src.VolumeAttributes}); err != nil {
			return "", fmt.Errorf("MountVolume.MountDevice failed for volume %q: rpc error: %w", pv.Name, err)
		}
	}
	dir := m.dir(pod, csiPlugin, volName)
	target := filepath.Join(dir, "mount")
	if err := writeVolData(dir, volData{Driver: d.Name, VolumeHandle: src.VolumeHandle, SpecVolumeID: pv.Name, StagingPath: staging}); err != nil {
		return "", err
	}
	if _, err := d.node.NodePublishVolume(ctx, &csi.NodePublishVolumeRequest{VolumeId: src.VolumeHandle, StagingTargetPath: staging,
		TargetPath: target, VolumeCapability: capability, Readonly: readOnly || src.ReadOnly, VolumeContext: src.VolumeAttributes}); err != nil {
		return "", fmt.Errorf("rpc error: NodePublishVolume of %q: %w", pv.Name, err)
	}
	return target, nil
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
