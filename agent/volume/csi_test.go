package volume

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
	"google.golang.org/grpc/credentials/insecure"

	"github.com/kobune/kobune/api/certificates"
	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/csi/localpath"
)

// claimSources answers a claim "data" bound to the CSI volume "pv-data".
type claimSources struct{ pv *core.PersistentVolume }

func (s claimSources) ConfigMap(context.Context, string, string) (*core.ConfigMap, error) {
	return nil, ErrNotFound
}
func (s claimSources) Secret(context.Context, string, string) (*core.Secret, error) {
	return nil, ErrNotFound
}
func (s claimSources) Token(context.Context, *core.Pod, string, int64) (string, error) {
	return "", ErrNotFound
}
func (s claimSources) ClusterTrustBundles(context.Context) ([]*certificates.ClusterTrustBundle, error) {
	return nil, nil
}
func (s claimSources) PodCertificate(context.Context, *core.Pod, string, *core.PodCertificateProjection) ([]byte, []byte, error) {
	return nil, nil, ErrNotFound
}
func (s claimSources) Claim(_ context.Context, ns, name string) (*core.PersistentVolumeClaim, error) {
	if name != "data" {
		return nil, ErrNotFound
	}
	return &core.PersistentVolumeClaim{ObjectMeta: meta.ObjectMeta{Namespace: ns, Name: name},
		Spec: core.PersistentVolumeClaimSpec{VolumeName: s.pv.Name}, Status: core.PersistentVolumeClaimStatus{Phase: core.ClaimBound}}, nil
}
func (s claimSources) Volume(_ context.Context, name string) (*core.PersistentVolume, error) {
	if name != s.pv.Name {
		return nil, ErrNotFound
	}
	return s.pv, nil
}

// startDriver serves kobune-csi-local where the agent looks for it, and
// returns a stop function.
func startDriver(t *testing.T, plugins, data string) func() {
	t.Helper()
	sock := filepath.Join(plugins, localpath.Name, "csi.sock")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = localpath.Serve(ctx, &localpath.Driver{NodeID: "node-1", Dir: data}, sock); close(done) }()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(sock); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no driver socket")
		}
	}
	return func() { cancel(); <-done }
}

func mountsBelow(t *testing.T, dir string) []string {
	t.Helper()
	points, err := MountPoints()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, p := range points {
		if strings.HasPrefix(p, dir+"/") {
			out = append(out, p)
		}
	}
	return out
}

// TestCSIVolumesStagedOncePublishedPerPod: the manager finds the driver by
// its socket, stages a claim's CSI volume once for the node and publishes
// it for each pod (a second Setup mounts nothing twice); a pod's teardown
// unpublishes only its own mount and unstages once no pod uses the volume;
// with the driver down the teardown fails, naming the driver, and leaves
// the mounts for a later try; a volume staged for a pod that was then
// deleted before it was published (an agent killed in between) is
// unstaged by UnstageUnused.
func TestCSIVolumesStagedOncePublishedPerPod(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: CSI volumes are bind mounts")
	}
	base := t.TempDir()
	plugins, data := filepath.Join(base, "plugins"), filepath.Join(base, "csi-data")
	t.Cleanup(func() {
		for _, p := range mountsBelow(t, base) {
			_ = unix.Unmount(p, unix.MNT_DETACH)
		}
	})
	stop := startDriver(t, plugins, data)
	defer func() { stop() }()
	conn, err := grpc.NewClient("unix:"+filepath.Join(plugins, localpath.Name, "csi.sock"), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx := context.Background()
	mode := &csi.VolumeCapability_AccessMode{Mode: csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER}
	if _, err := csi.NewControllerClient(conn).CreateVolume(ctx, &csi.CreateVolumeRequest{Name: "vol-1", VolumeCapabilities: []*csi.VolumeCapability{{
		AccessType: &csi.VolumeCapability_Mount{Mount: &csi.VolumeCapability_MountVolume{}}, AccessMode: mode}}}); err != nil {
		t.Fatal(err)
	}
	pv := &core.PersistentVolume{ObjectMeta: meta.ObjectMeta{Name: "pv-data"}, Spec: core.PersistentVolumeSpec{
		AccessModes: []core.PersistentVolumeAccessMode{core.ReadWriteOnce},
		CSI:         &core.CSIPersistentVolumeSource{Driver: localpath.Name, VolumeHandle: "vol-1"}}}
	plug := &Plugins{Dir: plugins}
	m := &Manager{Dir: filepath.Join(base, "pods"), Sources: claimSources{pv}, CSI: plug}
	pod := func(uid string) *core.Pod {
		return &core.Pod{ObjectMeta: meta.ObjectMeta{Namespace: "default", Name: uid, UID: uid}, Spec: core.PodSpec{Volumes: []core.Volume{{Name: "data",
			VolumeSource: core.VolumeSource{PersistentVolumeClaim: &core.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}}}}}
	}
	if _, err := m.Setup(ctx, pod("p1")); err == nil || !strings.Contains(err.Error(), "not found in the list of registered CSI drivers") {
		t.Fatalf("Setup before the driver was discovered: %v", err)
	}
	if changed, err := plug.Discover(ctx); !changed || err != nil {
		t.Fatalf("Discover: %v %v", changed, err)
	}
	if d := plug.Drivers(); len(d) != 1 || d[0].Name != localpath.Name || d[0].NodeID != "node-1" || d[0].Topology[localpath.TopologyKey] != "node-1" {
		t.Fatalf("drivers %+v", d)
	}
	staging := filepath.Join(plugins, "kubernetes.io", "csi")
	var path string
	for range 2 {
		paths, err := m.Setup(ctx, pod("p1"))
		if err != nil {
			t.Fatal(err)
		}
		path = paths["data"]
	}
	if want := filepath.Join(base, "pods", "p1", "volumes", "kubernetes.io~csi", "data", "mount"); path != want {
		t.Fatalf("path %s, want %s", path, want)
	}
	if err := os.WriteFile(filepath.Join(path, "f"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(data, "volumes", "vol-1", "f")); err != nil || string(b) != "x" {
		t.Fatalf("written through the pod's path, not in the volume: %q %v", b, err)
	}
	if _, err := m.Setup(ctx, pod("p2")); err != nil {
		t.Fatal(err)
	}
	if s, p := mountsBelow(t, staging), mountsBelow(t, filepath.Join(base, "pods")); len(s) != 1 || len(p) != 2 {
		t.Fatalf("two pods: staged %v, published %v; want 1 and 2", s, p)
	}
	if err := m.Teardown(ctx, "p1"); err != nil {
		t.Fatal(err)
	}
	if s, p := mountsBelow(t, staging), mountsBelow(t, filepath.Join(base, "pods")); len(s) != 1 || len(p) != 1 {
		t.Fatalf("after p1's teardown: staged %v, published %v; want p2's left", s, p)
	}
	if _, err := os.Stat(filepath.Join(base, "pods", "p1")); !os.IsNotExist(err) {
		t.Errorf("p1's directory is still there: %v", err)
	}
	// The driver goes away: p2's teardown fails and keeps its mounts.
	stop()
	if changed, _ := plug.Discover(ctx); !changed {
		t.Fatal("the driver's socket is gone, yet Discover saw no change")
	}
	if err := m.Teardown(ctx, "p2"); err == nil || !strings.Contains(err.Error(), localpath.Name) {
		t.Fatalf("Teardown without the driver: %v, want an error naming it", err)
	}
	if p := mountsBelow(t, filepath.Join(base, "pods")); len(p) != 1 {
		t.Fatalf("p2's mount after the failed teardown: %v", p)
	}
	stop = startDriver(t, plugins, data)
	if _, err := plug.Discover(ctx); err != nil {
		t.Fatal(err)
	}
	if err := m.Teardown(ctx, "p2"); err != nil {
		t.Fatal(err)
	}
	if left := mountsBelow(t, base); len(left) != 0 {
		t.Fatalf("mounts left after the last pod: %v", left)
	}
	// Staged for p3, then the agent is killed before publishing and p3 is
	// deleted meanwhile: only the staging record is left.
	if _, err := m.Setup(ctx, pod("p3")); err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(base, "pods", "p3", "volumes", "kubernetes.io~csi", "data", "mount")
	if err := unix.Unmount(target, 0); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(base, "pods", "p3")); err != nil {
		t.Fatal(err)
	}
	if s := mountsBelow(t, staging); len(s) != 1 {
		t.Fatalf("staged: %v", s)
	}
	if err := m.UnstageUnused(ctx); err != nil {
		t.Fatal(err)
	}
	if left := mountsBelow(t, base); len(left) != 0 {
		t.Fatalf("mounts left after UnstageUnused: %v", left)
	}
	if b, err := os.ReadFile(filepath.Join(data, "volumes", "vol-1", "f")); err != nil || string(b) != "x" {
		t.Errorf("the volume's data after all pods went: %q %v", b, err)
	}
}
