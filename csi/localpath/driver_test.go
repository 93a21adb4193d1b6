package localpath

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
)

// serve runs a driver for node-1 on a socket in a temporary directory and
// returns a client connection to it, as the agent and the provisioner dial.
func serve(t *testing.T) (*Driver, *grpc.ClientConn) {
	t.Helper()
	dir := t.TempDir()
	d := &Driver{NodeID: "node-1", Dir: filepath.Join(dir, "data")}
	sock := filepath.Join(dir, "plugins", Name, "csi.sock")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, d, sock) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(sock); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the driver did not make its socket")
		}
	}
	if fi, _ := os.Stat(sock); fi.Mode().Perm() != 0o600 {
		t.Errorf("socket mode %v, want 0600 (only root talks to a CSI driver)", fi.Mode().Perm())
	}
	conn, err := grpc.NewClient("unix:"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return d, conn
}

var mount = []*csi.VolumeCapability{{
	AccessType: &csi.VolumeCapability_Mount{Mount: &csi.VolumeCapability_MountVolume{}},
	AccessMode: &csi.VolumeCapability_AccessMode{Mode: csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER},
}}

func code(err error) codes.Code { return status.Code(err) }

// TestIdentityAndTopology: what the agent and the provisioner learn of the
// driver before anything else.
func TestIdentityAndTopology(t *testing.T) {
	_, conn := serve(t)
	ctx := context.Background()
	info, err := csi.NewIdentityClient(conn).GetPluginInfo(ctx, &csi.GetPluginInfoRequest{})
	if err != nil || info.GetName() != Name {
		t.Fatalf("GetPluginInfo: %v %v", info, err)
	}
	ni, err := csi.NewNodeClient(conn).NodeGetInfo(ctx, &csi.NodeGetInfoRequest{})
	if err != nil || ni.GetNodeId() != "node-1" || ni.GetAccessibleTopology().GetSegments()[TopologyKey] != "node-1" {
		t.Fatalf("NodeGetInfo: %v %v", ni, err)
	}
}

// TestCreateRefusesBadNamesAndOtherNodes: a name that is not one path
// element, a block volume, a StorageClass parameter, an fsType and a
// topology that excludes this node are refused with the field named, and
// nothing is made.
func TestCreateRefusesBadNamesAndOtherNodes(t *testing.T) {
	d, conn := serve(t)
	ctl := csi.NewControllerClient(conn)
	ctx := context.Background()
	for _, name := range []string{"../escape", "a/b", "", ".."} {
		_, err := ctl.CreateVolume(ctx, &csi.CreateVolumeRequest{Name: name, VolumeCapabilities: mount})
		if code(err) != codes.InvalidArgument {
			t.Errorf("CreateVolume %q: %v, want InvalidArgument", name, err)
		}
	}
	block := []*csi.VolumeCapability{{AccessType: &csi.VolumeCapability_Block{Block: &csi.VolumeCapability_BlockVolume{}},
		AccessMode: mount[0].AccessMode}}
	if _, err := ctl.CreateVolume(ctx, &csi.CreateVolumeRequest{Name: "pvc-1", VolumeCapabilities: block}); code(err) != codes.InvalidArgument {
		t.Errorf("block volume: %v, want InvalidArgument", err)
	}
	if _, err := ctl.CreateVolume(ctx, &csi.CreateVolumeRequest{Name: "pvc-1", VolumeCapabilities: mount, Parameters: map[string]string{"type": "ssd"}}); code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), `"type"`) {
		t.Errorf("a parameter: %v, want InvalidArgument naming it", err)
	}
	ext4 := []*csi.VolumeCapability{{AccessType: &csi.VolumeCapability_Mount{Mount: &csi.VolumeCapability_MountVolume{FsType: "ext4"}}, AccessMode: mount[0].AccessMode}}
	if _, err := ctl.CreateVolume(ctx, &csi.CreateVolumeRequest{Name: "pvc-1", VolumeCapabilities: ext4}); code(err) != codes.InvalidArgument {
		t.Errorf("fsType ext4: %v, want InvalidArgument", err)
	}
	other := &csi.TopologyRequirement{Requisite: []*csi.Topology{{Segments: map[string]string{TopologyKey: "node-2"}}}}
	if _, err := ctl.CreateVolume(ctx, &csi.CreateVolumeRequest{Name: "pvc-1", VolumeCapabilities: mount, AccessibilityRequirements: other}); code(err) != codes.ResourceExhausted {
		t.Errorf("requisite node-2: %v, want ResourceExhausted", err)
	}
	if entries, _ := os.ReadDir(filepath.Join(d.Dir, "volumes")); len(entries) != 0 {
		t.Errorf("refused requests made %v", entries)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(d.Dir), "escape")); err == nil {
		t.Error("a volume was made outside the data directory")
	}
}

func mountedAt(t *testing.T, p string) bool {
	t.Helper()
	ok, err := isMountPoint(p)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return ok
}

// TestVolumeLifecycle goes through what a pod's volume sees: create,
// stage, publish (twice, as an agent restarted half-way calls again),
// write through the target, unpublish, unstage, delete — checking the
// kernel's mount table and the directory at each step.
func TestVolumeLifecycle(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: the driver bind-mounts")
	}
	d, conn := serve(t)
	ctl, node := csi.NewControllerClient(conn), csi.NewNodeClient(conn)
	ctx := context.Background()
	req := &csi.CreateVolumeRequest{Name: "pvc-123", VolumeCapabilities: mount, CapacityRange: &csi.CapacityRange{RequiredBytes: 1 << 20},
		AccessibilityRequirements: &csi.TopologyRequirement{Requisite: []*csi.Topology{{Segments: map[string]string{TopologyKey: "node-1"}}}}}
	for range 2 { // idempotent
		resp, err := ctl.CreateVolume(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		if v := resp.GetVolume(); v.GetVolumeId() != "pvc-123" || v.GetCapacityBytes() != 1<<20 || v.GetAccessibleTopology()[0].GetSegments()[TopologyKey] != "node-1" {
			t.Fatalf("CreateVolume: %v", v)
		}
	}
	base := t.TempDir()
	staging, target := filepath.Join(base, "globalmount"), filepath.Join(base, "pod", "mount")
	t.Cleanup(func() { _ = unix.Unmount(target, unix.MNT_DETACH); _ = unix.Unmount(staging, unix.MNT_DETACH) })
	if _, err := node.NodePublishVolume(ctx, &csi.NodePublishVolumeRequest{VolumeId: "pvc-123", StagingTargetPath: staging, TargetPath: target,
		VolumeCapability: mount[0]}); code(err) != codes.FailedPrecondition {
		t.Errorf("publish before stage: %v, want FailedPrecondition", err)
	}
	for range 2 {
		if _, err := node.NodeStageVolume(ctx, &csi.NodeStageVolumeRequest{VolumeId: "pvc-123", StagingTargetPath: staging, VolumeCapability: mount[0]}); err != nil {
			t.Fatal(err)
		}
		if _, err := node.NodePublishVolume(ctx, &csi.NodePublishVolumeRequest{VolumeId: "pvc-123", StagingTargetPath: staging, TargetPath: target,
			VolumeCapability: mount[0]}); err != nil {
			t.Fatal(err)
		}
	}
	if n := countMounts(t, target); n != 1 {
		t.Fatalf("%d mounts on the target after two publishes, want 1", n)
	}
	if err := os.WriteFile(filepath.Join(target, "f"), []byte("data"), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(d.Dir, "volumes", "pvc-123", "f")); err != nil || string(b) != "data" {
		t.Fatalf("the file written through the target is not in the volume: %q %v", b, err)
	}
	if _, err := ctl.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: "pvc-123"}); code(err) != codes.FailedPrecondition {
		t.Errorf("DeleteVolume while published: %v, want FailedPrecondition", err)
	}
	for range 2 {
		if _, err := node.NodeUnpublishVolume(ctx, &csi.NodeUnpublishVolumeRequest{VolumeId: "pvc-123", TargetPath: target}); err != nil {
			t.Fatal(err)
		}
		if _, err := node.NodeUnstageVolume(ctx, &csi.NodeUnstageVolumeRequest{VolumeId: "pvc-123", StagingTargetPath: staging}); err != nil {
			t.Fatal(err)
		}
	}
	if mountedAt(t, target) || mountedAt(t, staging) {
		t.Fatal("still mounted after unpublish and unstage")
	}
	if _, err := os.Stat(target); !os.IsNotExist(err) {
		t.Errorf("target not removed: %v", err)
	}
	for range 2 {
		if _, err := ctl.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: "pvc-123"}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.Stat(filepath.Join(d.Dir, "volumes", "pvc-123")); !os.IsNotExist(err) {
		t.Errorf("the volume's directory is still there: %v", err)
	}
}

// TestReadOnlyPublish: a read-only publish refuses writes.
func TestReadOnlyPublish(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: the driver bind-mounts")
	}
	_, conn := serve(t)
	ctl, node := csi.NewControllerClient(conn), csi.NewNodeClient(conn)
	ctx := context.Background()
	if _, err := ctl.CreateVolume(ctx, &csi.CreateVolumeRequest{Name: "ro", VolumeCapabilities: mount}); err != nil {
		t.Fatal(err)
	}
	base := t.TempDir()
	staging, target := filepath.Join(base, "globalmount"), filepath.Join(base, "mount")
	t.Cleanup(func() { _ = unix.Unmount(target, unix.MNT_DETACH); _ = unix.Unmount(staging, unix.MNT_DETACH) })
	if _, err := node.NodeStageVolume(ctx, &csi.NodeStageVolumeRequest{VolumeId: "ro", StagingTargetPath: staging, VolumeCapability: mount[0]}); err != nil {
		t.Fatal(err)
	}
	if _, err := node.NodePublishVolume(ctx, &csi.NodePublishVolumeRequest{VolumeId: "ro", StagingTargetPath: staging, TargetPath: target,
		VolumeCapability: mount[0], Readonly: true}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(target, "f"), nil, 0o644); err == nil {
		t.Error("wrote into a read-only published volume")
	}
	if err := os.WriteFile(filepath.Join(staging, "f"), nil, 0o644); err != nil {
		t.Errorf("the staging mount became read-only too: %v", err)
	}
	_, _ = node.NodeUnpublishVolume(ctx, &csi.NodeUnpublishVolumeRequest{VolumeId: "ro", TargetPath: target})
	_, _ = node.NodeUnstageVolume(ctx, &csi.NodeUnstageVolumeRequest{VolumeId: "ro", StagingTargetPath: staging})
}

func countMounts(t *testing.T, p string) int {
	t.Helper()
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) > 4 && f[4] == p {
			n++
		}
	}
	return n
}
