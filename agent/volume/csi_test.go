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
	"github.com/kobune/kobune/api/storage"
	"github.com/kobune/kobune/csi/localpath"
)

// claimSources answers a claim "data" bound to the CSI volume "pv-data".
// With driver, that is the CSI driver's CSIDriver object.
type claimSources struct {
	pv     *core.PersistentVolume
	driver *storage.CSIDriver
}

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
func (s claimSources) CSIDriver(_ context.Context, name string) (*storage.CSIDriver, error) {
	if s.driver == nil || s.driver.Name != name {
		return nil, ErrNotFound
	}
	return s.driver, nil
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

// driverUnder serves kobune-csi-local below a test directory (as root:
// its volumes are bind mounts) and unmounts whatever is left below it
// when the test ends.
func driverUnder(t *testing.T) (base, plugins, data string, stop func()) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: CSI volumes are bind mounts")
	}
	base = t.TempDir()
	plugins, data = filepath.Join(base, "plugins"), filepath.Join(base, "csi-data")
	t.Cleanup(func() {
		for _, p := range mountsBelow(t, base) {
			_ = unix.Unmount(p, unix.MNT_DETACH)
		}
	})
	return base, plugins, data, startDriver(t, plugins, data)
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
	base, plugins, data, stop := driverUnder(t)
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
	m := &Manager{Dir: filepath.Join(base, "pods"), Sources: claimSources{pv: pv}, CSI: plug}
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

// TestInlineCSIVolumesFollowTheCSIDriver: a pod's inline csi volume is
// refused while its driver has no CSIDriver object and while the object
// lists only Persistent; with Ephemeral and podInfoOnMount the driver
// gets the pod's name in the volume context, makes an empty volume the
// pod writes to, the pod's fsGroup owns it (fsGroupPolicy File), and the
// pod's teardown removes it. A PersistentVolume of a driver whose
// CSIDriver says attachRequired is refused with what to do.
func TestInlineCSIVolumesFollowTheCSIDriver(t *testing.T) {
	base, plugins, data, stop := driverUnder(t)
	defer stop()
	ctx := context.Background()
	plug := &Plugins{Dir: plugins}
	if _, err := plug.Discover(ctx); err != nil {
		t.Fatal(err)
	}
	gid := int64(4321)
	pod := &core.Pod{ObjectMeta: meta.ObjectMeta{Namespace: "default", Name: "inline", UID: "u-inline"}, Spec: core.PodSpec{
		SecurityContext: &core.PodSecurityContext{FSGroup: &gid},
		Volumes:         []core.Volume{{Name: "scratch", VolumeSource: core.VolumeSource{CSI: &core.CSIVolumeSource{Driver: localpath.Name}}}}}}
	setup := func(driver *storage.CSIDriver) (map[string]string, error) {
		m := &Manager{Dir: filepath.Join(base, "pods"), Sources: claimSources{pv: &core.PersistentVolume{}, driver: driver}, CSI: plug}
		return m.Setup(ctx, pod)
	}
	if _, err := setup(nil); err == nil || !strings.Contains(err.Error(), "has no CSIDriver object") {
		t.Fatalf("no CSIDriver: %v, want an error saying an inline volume needs one", err)
	}
	driver := &storage.CSIDriver{ObjectMeta: meta.ObjectMeta{Name: localpath.Name}}
	storage.SetDefaultsCSIDriver(driver)
	if _, err := setup(driver); err == nil || !strings.Contains(err.Error(), "does not support the Ephemeral lifecycle mode") {
		t.Fatalf("Persistent only: %v, want the lifecycle mode named", err)
	}
	yes, file := true, storage.FileFSGroupPolicy
	driver.Spec.VolumeLifecycleModes = []storage.VolumeLifecycleMode{storage.VolumeLifecyclePersistent, storage.VolumeLifecycleEphemeral}
	driver.Spec.PodInfoOnMount, driver.Spec.FSGroupPolicy = &yes, &file
	paths, err := setup(driver)
	if err != nil {
		t.Fatal(err)
	}
	path := paths["scratch"]
	if err := os.WriteFile(filepath.Join(path, "f"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil || st.Gid != uint32(gid) {
		t.Fatalf("the inline volume's group is %d (%v), want the pod's fsGroup %d", st.Gid, err, gid)
	}
	dirs, _ := filepath.Glob(filepath.Join(data, "ephemeral", "csi-*", "f"))
	if len(dirs) != 1 {
		t.Fatalf("the file written is not in one inline volume of the driver: %v", dirs)
	}
	m := &Manager{Dir: filepath.Join(base, "pods"), Sources: claimSources{pv: &core.PersistentVolume{}, driver: driver}, CSI: plug}
	if err := m.Teardown(ctx, pod.UID); err != nil {
		t.Fatal(err)
	}
	if left, _ := filepath.Glob(filepath.Join(data, "ephemeral", "*")); len(left) != 0 {
		t.Fatalf("the inline volume outlived its pod: %v", left)
	}
	if left := mountsBelow(t, base); len(left) != 0 {
		t.Fatalf("mounts left after the teardown: %v", left)
	}

	// A persistent volume of a driver that needs attaching.
	pv := &core.PersistentVolume{ObjectMeta: meta.ObjectMeta{Name: "pv-data"}, Spec: core.PersistentVolumeSpec{
		AccessModes: []core.PersistentVolumeAccessMode{core.ReadWriteOnce},
		CSI:         &core.CSIPersistentVolumeSource{Driver: localpath.Name, VolumeHandle: "vol-1"}}}
	attach := &storage.CSIDriver{ObjectMeta: meta.ObjectMeta{Name: localpath.Name}}
	storage.SetDefaultsCSIDriver(attach)
	m = &Manager{Dir: filepath.Join(base, "pods"), Sources: claimSources{pv: pv, driver: attach}, CSI: plug}
	claimPod := &core.Pod{ObjectMeta: meta.ObjectMeta{Namespace: "default", Name: "p", UID: "u-p"}, Spec: core.PodSpec{Volumes: []core.Volume{{Name: "data",
		VolumeSource: core.VolumeSource{PersistentVolumeClaim: &core.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}}}}}
	if _, err := m.Setup(ctx, claimPod); err == nil || !strings.Contains(err.Error(), "set attachRequired: false") {
		t.Fatalf("attachRequired: %v, want an error saying what to do", err)
	}
}
