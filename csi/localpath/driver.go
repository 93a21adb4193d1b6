// Package localpath is kobune-csi-local, Kobune's own storage driver: a
// Container Storage Interface plugin (github.com/container-storage-interface/spec)
// whose volumes are directories under one node's data directory — what
// Kubernetes' local-path provisioners and the CSI hostpath driver do. It
// serves the three CSI services on a unix socket:
//
//   - Identity: its name (localpath.csi.kobune.io), that it has a
//     controller service and that its volumes are reachable only from
//     some nodes (VOLUME_ACCESSIBILITY_CONSTRAINTS);
//   - Controller: CreateVolume makes <data>/volumes/<name> and answers
//     with the volume's topology (topology.localpath.csi.kobune.io/node =
//     this node), DeleteVolume removes it, ControllerExpandVolume answers
//     the new size (a directory has none to change). There is no central
//     controller: a provisioner runs beside the driver on every node and
//     asks its own node's driver (Kubernetes' external-provisioner in
//     node deployment);
//   - Node: NodeStageVolume bind-mounts the volume's directory on the
//     staging path the agent gives, NodePublishVolume binds that onto the
//     pod's target path (read-only when asked), NodeUnpublishVolume and
//     NodeUnstageVolume undo each; a pod's inline (ephemeral) csi volume
//     is an empty directory <data>/ephemeral/<id>, made when it is
//     published and removed when it is unpublished; NodeGetInfo names the node and its
//     topology (the agent writes it into the node's CSINode).
//
// Every call is idempotent, as CSI requires: a repeated call after a crash
// finds its work done and answers the same. All state is on disk (the
// directories) and in the kernel (the mounts); the driver keeps none.
// A volume's size is recorded on its PersistentVolume but not enforced:
// a directory has no quota (as with Kubernetes' local-path provisioners).
package localpath

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kobune/kobune/api/version"
)

// Name is the driver's name: the provisioner of its StorageClasses and the
// driver of its PersistentVolumes.
const Name = "localpath.csi.kobune.io"

// TopologyKey is the topology segment of the driver's volumes: the node
// whose disk holds them.
const TopologyKey = "topology.localpath.csi.kobune.io/node"

// Driver is one node's local-path CSI plugin.
type Driver struct {
	// NodeID is the node's name (what NodeGetInfo answers).
	NodeID string
	// Dir holds the volumes: <Dir>/volumes/<volume id>.
	Dir string

	csi.UnimplementedIdentityServer
	csi.UnimplementedControllerServer
	csi.UnimplementedNodeServer
}

// volumeID is what CreateVolume accepts as a name (and so a volume id): a
// single path element, never "." or "..".
var volumeID = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9._-]{0,127}$`)

func (d *Driver) volumeDir(id string) (string, error) {
	if !volumeID.MatchString(id) {
		return "", status.Errorf(codes.InvalidArgument, "volume id %q: want letters, digits, '.', '_' or '-' (at most 128), starting with a letter or digit", id)
	}
	return filepath.Join(d.Dir, "volumes", id), nil
}

// GetPluginInfo implements csi.IdentityServer.
func (d *Driver) GetPluginInfo(context.Context, *csi.GetPluginInfoRequest) (*csi.GetPluginInfoResponse, error) {
	return &csi.GetPluginInfoResponse{Name: Name, VendorVersion: version.Kobune}, nil
}

// GetPluginCapabilities implements csi.IdentityServer.
func (d *Driver) GetPluginCapabilities(context.Context, *csi.GetPluginCapabilitiesRequest) (*csi.GetPluginCapabilitiesResponse, error) {
	service := func(t csi.PluginCapability_Service_Type) *csi.PluginCapability {
		return &csi.PluginCapability{Type: &csi.PluginCapability_Service_{Service: &csi.PluginCapability_Service{Type: t}}}
	}
	return &csi.GetPluginCapabilitiesResponse{Capabilities: []*csi.PluginCapability{
		service(csi.PluginCapability_Service_CONTROLLER_SERVICE),
		service(csi.PluginCapability_Service_VOLUME_ACCESSIBILITY_CONSTRAINTS),
		{Type: &csi.PluginCapability_VolumeExpansion_{VolumeExpansion: &csi.PluginCapability_VolumeExpansion{Type: csi.PluginCapability_VolumeExpansion_ONLINE}}},
	}}, nil
}

// Probe implements csi.IdentityServer: ready once the data directory is.
func (d *Driver) Probe(context.Context, *csi.ProbeRequest) (*csi.ProbeResponse, error) {
	if err := os.MkdirAll(filepath.Join(d.Dir, "volumes"), 0o755); err != nil {
		return nil, status.Errorf(codes.FailedPrecondition, "data directory: %v", err)
	}
	return &csi.ProbeResponse{}, nil
}

// ControllerGetCapabilities implements csi.ControllerServer.
func (d *Driver) ControllerGetCapabilities(context.Context, *csi.ControllerGetCapabilitiesRequest) (*csi.ControllerGetCapabilitiesResponse, error) {
	rpc := func(t csi.ControllerServiceCapability_RPC_Type) *csi.ControllerServiceCapability {
		return &csi.ControllerServiceCapability{Type: &csi.ControllerServiceCapability_Rpc{Rpc: &csi.ControllerServiceCapability_RPC{Type: t}}}
	}
	return &csi.ControllerGetCapabilitiesResponse{Capabilities: []*csi.ControllerServiceCapability{
		rpc(csi.ControllerServiceCapability_RPC_CREATE_DELETE_VOLUME), rpc(csi.ControllerServiceCapability_RPC_EXPAND_VOLUME),
	}}, nil
}

func (d *Driver) topology() *csi.Topology {
	return &csi.Topology{Segments: map[string]string{TopologyKey: d.NodeID}}
}

// checkCapabilities refuses what a directory cannot be: a block device.
// Every access mode works on one node; a directory cannot be shared
// across nodes, but the node topology already keeps its pods on one.
func checkCapabilities(caps []*csi.VolumeCapability) error {
	if len(caps) == 0 {
		return status.Error(codes.InvalidArgument, "volume_capabilities: required")
	}
	for _, c := range caps {
		if c.GetBlock() != nil {
			return status.Error(codes.InvalidArgument, "volume_capabilities: block volumes are not supported (a local path is a directory)")
		}
		if c.GetMount() == nil {
			return status.Error(codes.InvalidArgument, "volume_capabilities: access_type mount is required")
		}
		if fs := c.GetMount().GetFsType(); fs != "" {
			// A directory has the node's filesystem; fsType names nothing to make.
			return status.Errorf(codes.InvalidArgument, "volume_capabilities: fs_type %q: a local path has the filesystem of the node's data directory (leave fsType empty)", fs)
		}
	}
	return nil
}

// CreateVolume makes the volume's directory on this node. It refuses a
// request whose topology requirement excludes this node.
func (d *Driver) CreateVolume(_ context.Context, req *csi.CreateVolumeRequest) (*csi.CreateVolumeResponse, error) {
	dir, err := d.volumeDir(req.GetName())
	if err != nil {
		return nil, err
	}
	if err := checkCapabilities(req.GetVolumeCapabilities()); err != nil {
		return nil, err
	}
	for k := range req.GetParameters() {
		return nil, status.Errorf(codes.InvalidArgument, "parameters: %s takes none (the StorageClass sets %q)", Name, k)
	}
	if req.GetVolumeContentSource() != nil {
		return nil, status.Error(codes.InvalidArgument, "volume_content_source: snapshots and clones are not supported")
	}
	if r := req.GetAccessibilityRequirements(); r != nil && len(r.GetRequisite()) > 0 {
		ok := false
		for _, t := range r.GetRequisite() {
			if t.GetSegments()[TopologyKey] == d.NodeID {
				ok = true
			}
		}
		if !ok {
			return nil, status.Errorf(codes.ResourceExhausted, "accessibility_requirements: this driver makes volumes only on node %q, which the requisite topology does not include", d.NodeID)
		}
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return nil, status.Errorf(codes.Internal, "%v", err)
	}
	if err := os.Mkdir(dir, 0o777); err != nil && !errors.Is(err, fs.ErrExist) {
		return nil, status.Errorf(codes.Internal, "%v", err)
	}
	// As emptyDir: writable by whatever user the pod runs as.
	if err := os.Chmod(dir, 0o777); err != nil {
		return nil, status.Errorf(codes.Internal, "%v", err)
	}
	return &csi.CreateVolumeResponse{Volume: &csi.Volume{
		VolumeId:           req.GetName(),
		CapacityBytes:      req.GetCapacityRange().GetRequiredBytes(),
		AccessibleTopology: []*csi.Topology{d.topology()},
	}}, nil
}

// DeleteVolume removes the volume's directory and everything in it.
func (d *Driver) DeleteVolume(_ context.Context, req *csi.DeleteVolumeRequest) (*csi.DeleteVolumeResponse, error) {
	dir, err := d.volumeDir(req.GetVolumeId())
	if err != nil {
		return nil, err
	}
	if mounted, err := d.stillMounted(req.GetVolumeId()); err != nil || mounted {
		return nil, status.Errorf(codes.FailedPrecondition, "volume %s is still staged or published on this node", req.GetVolumeId())
	}
	if err := os.RemoveAll(dir); err != nil {
		return nil, status.Errorf(codes.Internal, "%v", err)
	}
	return &csi.DeleteVolumeResponse{}, nil
}

// ControllerExpandVolume grows a volume: a directory has no size, so only
// the new capacity is answered (online, no node step needed).
func (d *Driver) ControllerExpandVolume(_ context.Context, req *csi.ControllerExpandVolumeRequest) (*csi.ControllerExpandVolumeResponse, error) {
	dir, err := d.volumeDir(req.GetVolumeId())
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(dir); err != nil {
		return nil, status.Errorf(codes.NotFound, "volume %s: %v", req.GetVolumeId(), err)
	}
	if req.GetCapacityRange().GetRequiredBytes() <= 0 {
		return nil, status.Error(codes.InvalidArgument, "capacity_range.required_bytes: required")
	}
	return &csi.ControllerExpandVolumeResponse{CapacityBytes: req.GetCapacityRange().GetRequiredBytes()}, nil
}

// ValidateVolumeCapabilities implements csi.ControllerServer.
func (d *Driver) ValidateVolumeCapabilities(_ context.Context, req *csi.ValidateVolumeCapabilitiesRequest) (*csi.ValidateVolumeCapabilitiesResponse, error) {
	dir, err := d.volumeDir(req.GetVolumeId())
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(dir); err != nil {
		return nil, status.Errorf(codes.NotFound, "volume %s: %v", req.GetVolumeId(), err)
	}
	if err := checkCapabilities(req.GetVolumeCapabilities()); err != nil {
		return &csi.ValidateVolumeCapabilitiesResponse{Message: err.Error()}, nil
	}
	return &csi.ValidateVolumeCapabilitiesResponse{Confirmed: &csi.ValidateVolumeCapabilitiesResponse_Confirmed{
		VolumeCapabilities: req.GetVolumeCapabilities()}}, nil
}

// NodeGetCapabilities implements csi.NodeServer: the driver stages.
func (d *Driver) NodeGetCapabilities(context.Context, *csi.NodeGetCapabilitiesRequest) (*csi.NodeGetCapabilitiesResponse, error) {
	return &csi.NodeGetCapabilitiesResponse{Capabilities: []*csi.NodeServiceCapability{{
		Type: &csi.NodeServiceCapability_Rpc{Rpc: &csi.NodeServiceCapability_RPC{Type: csi.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME}},
	}}}, nil
}

// NodeGetInfo implements csi.NodeServer.
func (d *Driver) NodeGetInfo(context.Context, *csi.NodeGetInfoRequest) (*csi.NodeGetInfoResponse, error) {
	return &csi.NodeGetInfoResponse{NodeId: d.NodeID, AccessibleTopology: d.topology()}, nil
}

// NodeStageVolume binds the volume's directory onto the staging path.
func (d *Driver) NodeStageVolume(_ context.Context, req *csi.NodeStageVolumeRequest) (*csi.NodeStageVolumeResponse, error) {
	dir, err := d.volumeDir(req.GetVolumeId())
	if err != nil {
		return nil, err
	}
	staging := req.GetStagingTargetPath()
	if !filepath.IsAbs(staging) {
		return nil, status.Errorf(codes.InvalidArgument, "staging_target_path %q: an absolute path is required", staging)
	}
	if err := checkCapabilities([]*csi.VolumeCapability{req.GetVolumeCapability()}); err != nil {
		return nil, err
	}
	if _, err := os.Stat(dir); err != nil {
		return nil, status.Errorf(codes.NotFound, "volume %s is not on this node (%v)", req.GetVolumeId(), err)
	}
	if err := bind(dir, staging, false); err != nil {
		return nil, err
	}
	return &csi.NodeStageVolumeResponse{}, nil
}

// NodeUnstageVolume unmounts the staging path.
func (d *Driver) NodeUnstageVolume(_ context.Context, req *csi.NodeUnstageVolumeRequest) (*csi.NodeUnstageVolumeResponse, error) {
	if _, err := d.volumeDir(req.GetVolumeId()); err != nil {
		return nil, err
	}
	if err := unbind(req.GetStagingTargetPath()); err != nil {
		return nil, err
	}
	return &csi.NodeUnstageVolumeResponse{}, nil
}

// ephemeralKey is the volume context key the agent sets (with the
// CSIDriver's podInfoOnMount) to "true" for a pod's inline volume.
const ephemeralKey = "csi.storage.k8s.io/ephemeral"

// ephemeralDir is where an inline volume lives: <Dir>/ephemeral/<id>.
func (d *Driver) ephemeralDir(id string) (string, error) {
	if _, err := d.volumeDir(id); err != nil {
		return "", err
	}
	return filepath.Join(d.Dir, "ephemeral", id), nil
}

// NodePublishVolume binds the staged volume onto the pod's target path;
// an inline (ephemeral) volume is made empty first, in its own directory,
// and bound without staging.
func (d *Driver) NodePublishVolume(_ context.Context, req *csi.NodePublishVolumeRequest) (*csi.NodePublishVolumeResponse, error) {
	if _, err := d.volumeDir(req.GetVolumeId()); err != nil {
		return nil, err
	}
	staging, target := req.GetStagingTargetPath(), req.GetTargetPath()
	if req.GetVolumeContext()[ephemeralKey] == "true" {
		return d.publishEphemeral(req)
	}
	if staging == "" {
		return nil, status.Error(codes.FailedPrecondition, "staging_target_path: required (the driver stages: call NodeStageVolume first)")
	}
	if !filepath.IsAbs(target) {
		return nil, status.Errorf(codes.InvalidArgument, "target_path %q: an absolute path is required", target)
	}
	if err := checkCapabilities([]*csi.VolumeCapability{req.GetVolumeCapability()}); err != nil {
		return nil, err
	}
	if ok, err := isMountPoint(staging); err != nil || !ok {
		return nil, status.Errorf(codes.FailedPrecondition, "volume %s is not staged at %s", req.GetVolumeId(), staging)
	}
	if err := bind(staging, target, req.GetReadonly()); err != nil {
		return nil, err
	}
	return &csi.NodePublishVolumeResponse{}, nil
}

// publishEphemeral makes an inline volume's directory (writable by any
// user, as an emptyDir) and binds it onto the target path. The volume
// takes no attributes: a directory has nothing to set.
func (d *Driver) publishEphemeral(req *csi.NodePublishVolumeRequest) (*csi.NodePublishVolumeResponse, error) {
	dir, err := d.ephemeralDir(req.GetVolumeId())
	if err != nil {
		return nil, err
	}
	if !filepath.IsAbs(req.GetTargetPath()) {
		return nil, status.Errorf(codes.InvalidArgument, "target_path %q: an absolute path is required", req.GetTargetPath())
	}
	if err := checkCapabilities([]*csi.VolumeCapability{req.GetVolumeCapability()}); err != nil {
		return nil, err
	}
	for k := range req.GetVolumeContext() {
		if !strings.HasPrefix(k, "csi.storage.k8s.io/") {
			return nil, status.Errorf(codes.InvalidArgument, "volume_context: %s takes no volumeAttributes (the pod sets %q)", Name, k)
		}
	}
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return nil, status.Errorf(codes.Internal, "%v", err)
	}
	if err := os.Chmod(dir, 0o777); err != nil {
		return nil, status.Errorf(codes.Internal, "%v", err)
	}
	if err := bind(dir, req.GetTargetPath(), req.GetReadonly()); err != nil {
		return nil, err
	}
	return &csi.NodePublishVolumeResponse{}, nil
}

// NodeUnpublishVolume unmounts and removes the target path; an inline
// volume's directory goes with it.
func (d *Driver) NodeUnpublishVolume(_ context.Context, req *csi.NodeUnpublishVolumeRequest) (*csi.NodeUnpublishVolumeResponse, error) {
	dir, err := d.ephemeralDir(req.GetVolumeId())
	if err != nil {
		return nil, err
	}
	if err := unbind(req.GetTargetPath()); err != nil {
		return nil, err
	}
	if err := os.RemoveAll(dir); err != nil {
		return nil, status.Errorf(codes.Internal, "remove the inline volume %s: %v", req.GetVolumeId(), err)
	}
	return &csi.NodeUnpublishVolumeResponse{}, nil
}

// stillMounted: is the volume's directory the source of a mount on this
// node (staged or published)? Read from the kernel's mount table: a bind
// mount's root (mountinfo's fourth field) is the directory's path within
// its filesystem; device and inode of the mount point confirm it.
func (d *Driver) stillMounted(id string) (bool, error) {
	dir, err := d.volumeDir(id)
	if err != nil {
		return false, err
	}
	var want unix.Stat_t
	if err := unix.Stat(dir, &want); err != nil {
		return false, nil // gone: nothing can be mounted from it
	}
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return false, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 5 || !strings.HasSuffix(f[3], "/volumes/"+id) {
			continue
		}
		var got unix.Stat_t
		if unix.Stat(f[4], &got) == nil && got.Dev == want.Dev && got.Ino == want.Ino {
			return true, nil
		}
	}
	return false, nil
}

// bind bind-mounts src on dst (made if missing), read-only when ro; a dst
// that is a mount point already is left as it is.
func bind(src, dst string, ro bool) error {
	if err := os.MkdirAll(dst, 0o750); err != nil {
		return status.Errorf(codes.Internal, "%v", err)
	}
	if ok, err := isMountPoint(dst); err != nil {
		return status.Errorf(codes.Internal, "%v", err)
	} else if ok {
		return nil
	}
	if err := unix.Mount(src, dst, "", unix.MS_BIND, ""); err != nil {
		return status.Errorf(codes.Internal, "bind %s on %s: %v", src, dst, err)
	}
	if ro {
		if err := unix.Mount("", dst, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY, ""); err != nil {
			_ = unix.Unmount(dst, 0)
			return status.Errorf(codes.Internal, "read-only %s: %v", dst, err)
		}
	}
	return nil
}

// unbind unmounts dst if it is a mount point and removes the directory.
func unbind(dst string) error {
	if !filepath.IsAbs(dst) {
		return status.Errorf(codes.InvalidArgument, "path %q: an absolute path is required", dst)
	}
	for {
		ok, err := isMountPoint(dst)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return status.Errorf(codes.Internal, "%v", err)
		}
		if !ok {
			break
		}
		if err := unix.Unmount(dst, 0); err != nil {
			return status.Errorf(codes.Internal, "unmount %s: %v", dst, err)
		}
	}
	if err := os.Remove(dst); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return status.Errorf(codes.Internal, "%v", err)
	}
	return nil
}

// isMountPoint asks the kernel whether p is the root of a mount (statx's
// STATX_ATTR_MOUNT_ROOT, Linux 5.8): a bind mount of a directory of the
// same filesystem has the same device, so comparing with the parent
// cannot tell.
func isMountPoint(p string) (bool, error) {
	var st unix.Statx_t
	if err := unix.Statx(unix.AT_FDCWD, p, unix.AT_SYMLINK_NOFOLLOW, unix.STATX_BASIC_STATS, &st); err != nil {
		if errors.Is(err, unix.ENOENT) {
			return false, fs.ErrNotExist
		}
		return false, err
	}
	if st.Attributes_mask&unix.STATX_ATTR_MOUNT_ROOT == 0 {
		return false, fmt.Errorf("%s: this kernel does not report mount roots (statx needs Linux 5.8)", p)
	}
	return st.Attributes&unix.STATX_ATTR_MOUNT_ROOT != 0, nil
}
