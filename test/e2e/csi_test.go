package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/api/resource"
	"github.com/kobune/kobune/api/storage"
	"github.com/kobune/kobune/client"
	"github.com/kobune/kobune/scheduler"
)

const csiDriver = "localpath.csi.kobune.io"

// startCSICluster is two real nodes, each with its agent and
// kobune-csi-local, the controllers and the scheduler; it returns once both
// agents have registered the driver (CSINode and topology label).
func startCSICluster(t *testing.T, timeout time.Duration) (string, *client.Client, []*node, context.Context) {
	t.Helper()
	srv, nodes, ctx := startWithControllers(t, timeout, "10.244.91.0/24", "10.244.92.0/24")
	go scheduler.New(scheduler.Config{Logf: func(string, ...any) {}}, componentClient(t, srv, "scheduler")).Run(ctx)
	for _, n := range nodes {
		n.startCSI(t)
	}
	csiNodes, nodeAPI := client.For[*storage.CSINode](srv.Client), client.For[*core.Node](srv.Client)
	for _, n := range nodes {
		for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(200 * time.Millisecond) {
			cn, err := csiNodes.Get(ctx, "", n.name)
			no, nerr := nodeAPI.Get(ctx, "", n.name)
			if err == nil && nerr == nil && len(cn.Spec.Drivers) == 1 && cn.Spec.Drivers[0].Name == csiDriver && cn.Spec.Drivers[0].NodeID == n.name &&
				no.Labels["topology.localpath.csi.kobune.io/node"] == n.name && len(cn.OwnerReferences) == 1 && cn.OwnerReferences[0].UID == no.UID {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: CSINode %+v (%v), node labels %v (%v): the agent did not register the driver within 60 s", n.name, cn, err, no.Labels, nerr)
			}
		}
	}
	return srv.Addr(), srv.Client, nodes, ctx
}

// mountsUnder counts the mount table's mount points below dir.
func mountsUnder(t *testing.T, dir string) []string {
	t.Helper()
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) > 4 && strings.HasPrefix(f[4], dir+"/") {
			out = append(out, f[4])
		}
	}
	return out
}

// nodeOf is the node of the cluster with the name.
func nodeOf(t *testing.T, nodes []*node, name string) *node {
	t.Helper()
	for _, n := range nodes {
		if n.name == name {
			return n
		}
	}
	t.Fatalf("no node %q", name)
	return nil
}

// TestStatefulSetOnLocalCSI applies deploy/examples/db.yaml: a StatefulSet
// db of 2 whose claim template's class is provisioned by kobune-csi-local
// on the node the scheduler picks. Each pod writes into its claim; db-0,
// deleted, comes back on the same node with its file; the mount table
// holds exactly one published and one staged mount per running pod and
// none of the deleted pod; scaling to 1 deletes data-db-1 (whenScaled:
// Delete) and, under the class's Delete policy, its directory and volume.
func TestStatefulSetOnLocalCSI(t *testing.T) {
	requireRoot(t)
	addr, c, nodes, ctx := startCSICluster(t, 5*time.Minute)
	out, errOut, code := kobectl(ctx, addr, "apply", "-f", filepath.Join(repoRoot(), "deploy", "examples", "db.yaml"))
	if code != 0 || errOut != "" {
		t.Fatalf("kobectl apply: exit %d: %s%s", code, out, errOut)
	}
	pods, claims, volumes := client.For[*core.Pod](c), client.For[*core.PersistentVolumeClaim](c), client.For[*core.PersistentVolume](c)
	running := func(p *core.Pod, _ bool) bool { return p.Status.Phase == core.PodRunning }
	where := map[string]*core.PersistentVolume{}
	dirs := map[string]string{} // pod → its volume's directory
	var db0 *core.Pod
	for i := range 2 {
		name := fmt.Sprintf("db-%d", i)
		p := waitForPod(t, ctx, pods, name, 0, running)
		if i == 0 {
			db0 = p
		}
		claim, err := claims.Get(ctx, "default", "data-"+name)
		if err != nil || claim.Status.Phase != core.ClaimBound || claim.Annotations[core.AnnSelectedNode] != p.Spec.NodeName {
			t.Fatalf("claim data-%s: %+v (%v); want Bound, selected for %s", name, claim, err, p.Spec.NodeName)
		}
		pv, err := volumes.Get(ctx, "", claim.Spec.VolumeName)
		if err != nil || pv.Spec.CSI == nil || pv.Spec.CSI.Driver != csiDriver || pv.Spec.PersistentVolumeReclaimPolicy != core.ReclaimDelete ||
			pv.Spec.NodeAffinity == nil || !strings.Contains(fmt.Sprint(pv.Spec.NodeAffinity.Required), p.Spec.NodeName) {
			t.Fatalf("volume of data-%s: %+v (%v); want a Delete CSI volume of %s pinned to %s", name, pv, err, csiDriver, p.Spec.NodeName)
		}
		where[name] = pv
		dirs[name] = filepath.Join(nodeOf(t, nodes, p.Spec.NodeName).csiDataDir(), "volumes", pv.Spec.CSI.VolumeHandle)
		file := filepath.Join(dirs[name], "boots")
		for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
			if b, _ := os.ReadFile(file); strings.Count(string(b), "started "+name) == 1 {
				break
			}
			if time.Now().After(deadline) {
				b, _ := os.ReadFile(file)
				t.Fatalf("%s's write is not in its volume's directory %s: %q", name, file, b)
			}
		}
	}
	n0 := nodeOf(t, nodes, db0.Spec.NodeName)
	// Its CSI volume's mounts (the pod also has its token volume's tmpfs).
	published := func(uid string) []string {
		return mountsUnder(t, filepath.Join(n0.dir, "agent", "pods", uid, "volumes", "kubernetes.io~csi"))
	}
	staged := func() []string {
		return mountsUnder(t, filepath.Join(n0.dir, "agent", "plugins", "kubernetes.io", "csi"))
	}
	if p := published(db0.UID); len(p) != 1 {
		t.Errorf("db-0's mounts below its pod directory: %v, want exactly the published volume", p)
	}
	// Delete db-0: it comes back, on the node of its volume, with the file.
	zero := int64(0)
	if err := pods.Delete(ctx, "default", "db-0", client.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatal(err)
	}
	back := waitForPod(t, ctx, pods, "db-0", 0, func(p *core.Pod, _ bool) bool { return p.UID != db0.UID && p.Status.Phase == core.PodRunning })
	if back.Spec.NodeName != db0.Spec.NodeName {
		t.Fatalf("db-0 came back on %s, its volume is on %s", back.Spec.NodeName, db0.Spec.NodeName)
	}
	out, errOut, code = kobectl(ctx, addr, "exec", "db-0", "--", "cat", "/data/boots")
	if code != 0 || strings.Count(out, "started db-0") != 2 {
		t.Fatalf("db-0 after its restart: exit %d: %q%s; want the first start's line and its own", code, out, errOut)
	}
	podMounts := func(uid string) []string { return mountsUnder(t, filepath.Join(n0.dir, "agent", "pods", uid)) }
	for deadline := time.Now().Add(30 * time.Second); len(podMounts(db0.UID)) > 0; time.Sleep(200 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the deleted db-0's mounts are still there: %v", podMounts(db0.UID))
		}
	}
	if p := published(back.UID); len(p) != 1 {
		t.Errorf("the new db-0's mounts: %v, want one", p)
	}
	// db-1 may share the node; each running pod's volume is staged once.
	want := 1
	if pod1, _ := pods.Get(ctx, "default", "db-1"); pod1 != nil && pod1.Spec.NodeName == n0.name {
		want = 2
	}
	if s := staged(); len(s) != want {
		t.Errorf("staged mounts on %s: %v, want %d", n0.name, s, want)
	}
	// Scale to 1: data-db-1 goes, and with it (Delete) its volume and directory.
	if out, errOut, code := kobectl(ctx, addr, "scale", "statefulset/db", "--replicas", "1"); code != 0 {
		t.Fatalf("kobectl scale: exit %d: %s%s", code, out, errOut)
	}
	pv1 := where["db-1"]
	dir1 := dirs["db-1"]
	for deadline := time.Now().Add(90 * time.Second); ; time.Sleep(300 * time.Millisecond) {
		_, claimErr := claims.Get(ctx, "default", "data-db-1")
		_, pvErr := volumes.Get(ctx, "", pv1.Name)
		_, dirErr := os.Stat(dir1)
		if client.IsNotFound(claimErr) && client.IsNotFound(pvErr) && os.IsNotExist(dirErr) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("90 s after scaling to 1: claim %v, volume %v, directory %v; want all gone", claimErr, pvErr, dirErr)
		}
	}
	if _, err := claims.Get(ctx, "default", "data-db-0"); err != nil {
		t.Errorf("data-db-0 after scaling to 1: %v", err)
	}
}

// TestRetainedCSIVolumeKeepsItsDirectory: a claim of a Retain class,
// provisioned immediately (volumeBindingMode Immediate: one node's
// provisioner takes it), is used by a pod; deleting the claim while the
// pod runs leaves it Terminating; once the pod is gone the volume is
// Released and its directory stays with the data.
func TestRetainedCSIVolumeKeepsItsDirectory(t *testing.T) {
	requireRoot(t)
	_, c, nodes, ctx := startCSICluster(t, 4*time.Minute)
	retain, immediate := core.ReclaimRetain, storage.Immediate
	if _, err := client.For[*storage.StorageClass](c).Create(ctx, &storage.StorageClass{ObjectMeta: meta.ObjectMeta{Name: "keep"},
		Provisioner: csiDriver, ReclaimPolicy: &retain, VolumeBindingMode: &immediate}); err != nil {
		t.Fatal(err)
	}
	claims, volumes, pods := client.For[*core.PersistentVolumeClaim](c), client.For[*core.PersistentVolume](c), client.For[*core.Pod](c)
	class := "keep"
	if _, err := claims.Create(ctx, &core.PersistentVolumeClaim{ObjectMeta: meta.ObjectMeta{Namespace: "default", Name: "kept"},
		Spec: core.PersistentVolumeClaimSpec{AccessModes: []core.PersistentVolumeAccessMode{core.ReadWriteOnce}, StorageClassName: &class,
			Resources: core.VolumeResourceRequirements{Requests: resource.List{"storage": resource.MustParse("10Mi")}}}}); err != nil {
		t.Fatal(err)
	}
	claim, err := client.WaitFor(ctx, claims, "default", "kept", 0, func(cl *core.PersistentVolumeClaim, _ bool) bool { return cl.Status.Phase == core.ClaimBound })
	if err != nil {
		t.Fatal(err)
	}
	home := nodeOf(t, nodes, claim.Annotations[core.AnnSelectedNode])
	if _, err := pods.Create(ctx, &core.Pod{ObjectMeta: meta.ObjectMeta{Namespace: "default", Name: "keeper"}, Spec: core.PodSpec{
		Volumes: []core.Volume{{Name: "data", VolumeSource: core.VolumeSource{PersistentVolumeClaim: &core.PersistentVolumeClaimVolumeSource{ClaimName: "kept"}}}},
		Containers: []core.Container{{Name: "sh", Image: "kobune.local/busybox:1.35", ImagePullPolicy: core.PullNever,
			Command:      []string{"sh", "-c", "trap 'exit 0' TERM; echo kept > /data/file; sleep 3600 & wait"},
			VolumeMounts: []core.VolumeMount{{Name: "data", MountPath: "/data"}}}}}}); err != nil {
		t.Fatal(err)
	}
	p := waitForPod(t, ctx, pods, "keeper", 0, func(p *core.Pod, _ bool) bool { return p.Status.Phase == core.PodRunning })
	if p.Spec.NodeName != home.name {
		t.Fatalf("the pod went to %s, its volume is on %s", p.Spec.NodeName, home.name)
	}
	file := filepath.Join(home.csiDataDir(), "volumes", claim.Spec.VolumeName, "file")
	if err := claims.Delete(ctx, "default", "kept", client.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// The claim in use stays, Terminating, for as long as the pod runs.
	for end := time.Now().Add(3 * time.Second); time.Now().Before(end); time.Sleep(250 * time.Millisecond) {
		if cl, err := claims.Get(ctx, "default", "kept"); err != nil || cl.DeletionTimestamp == nil {
			t.Fatalf("the claim in use: %v, %v; want it Terminating while the pod runs", cl, err)
		}
	}
	zero := int64(0)
	if err := pods.Delete(ctx, "default", "keeper", client.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		pv, err := volumes.Get(ctx, "", claim.Spec.VolumeName)
		if err == nil && pv.Status.Phase == core.VolumeReleased {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the volume 60 s after its claim's pod went: %+v (%v), want Released", pv, err)
		}
	}
	// Longer than the provisioner needs to delete a Delete volume.
	time.Sleep(3 * time.Second)
	if b, err := os.ReadFile(file); err != nil || strings.TrimSpace(string(b)) != "kept" {
		t.Errorf("a Retain volume's data after its claim went: %q %v", b, err)
	}
	if pv, err := volumes.Get(ctx, "", claim.Spec.VolumeName); err != nil || pv.Status.Phase != core.VolumeReleased {
		t.Errorf("the Retain volume: %v %v, want it kept, Released", pv, err)
	}
}

// TestInlineCSIVolumeOnARealNode applies the driver's manifest
// (deploy/csi/kobune-csi-local.yaml: its CSIDriver lists Ephemeral and
// asks for pod information) and runs a pod with an inline csi volume of
// kobune-csi-local: the pod writes into it and the file is in the node's
// driver directory, in an inline volume of its own, owned by the pod's
// fsGroup; once the pod is deleted, the volume and its mount are gone.
func TestInlineCSIVolumeOnARealNode(t *testing.T) {
	requireRoot(t)
	addr, c, nodes, ctx := startCSICluster(t, 3*time.Minute)
	out, errOut, code := kobectl(ctx, addr, "apply", "-f", filepath.Join(repoRoot(), "deploy", "csi", "kobune-csi-local.yaml"))
	if code != 0 || errOut != "" {
		t.Fatalf("kobectl apply: exit %d: %s%s", code, out, errOut)
	}
	pods := client.For[*core.Pod](c)
	gid := int64(2345)
	if _, err := pods.Create(ctx, &core.Pod{ObjectMeta: meta.ObjectMeta{Namespace: "default", Name: "scratch"}, Spec: core.PodSpec{
		SecurityContext: &core.PodSecurityContext{FSGroup: &gid},
		Volumes:         []core.Volume{{Name: "scratch", VolumeSource: core.VolumeSource{CSI: &core.CSIVolumeSource{Driver: csiDriver}}}},
		Containers: []core.Container{{Name: "sh", Image: "kobune.local/busybox:1.35", ImagePullPolicy: core.PullNever,
			Command:      []string{"sh", "-c", "trap 'exit 0' TERM; echo inline > /scratch/file; sleep 3600 & wait"},
			VolumeMounts: []core.VolumeMount{{Name: "scratch", MountPath: "/scratch"}}}}}}); err != nil {
		t.Fatal(err)
	}
	p := waitForPod(t, ctx, pods, "scratch", 0, func(p *core.Pod, _ bool) bool { return p.Status.Phase == core.PodRunning })
	n := nodeOf(t, nodes, p.Spec.NodeName)
	var files []string
	for deadline := time.Now().Add(20 * time.Second); len(files) != 1; time.Sleep(100 * time.Millisecond) {
		files, _ = filepath.Glob(filepath.Join(n.csiDataDir(), "ephemeral", "csi-*", "file"))
		if time.Now().After(deadline) {
			t.Fatalf("the pod's file in %s's inline volumes: %v, want one", n.name, files)
		}
	}
	var st syscall.Stat_t
	if err := syscall.Stat(filepath.Dir(files[0]), &st); err != nil || st.Gid != uint32(gid) {
		t.Errorf("the inline volume's group: %d (%v), want the pod's fsGroup %d", st.Gid, err, gid)
	}
	zero := int64(0)
	if err := pods.Delete(ctx, "default", "scratch", client.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		_, err := os.Stat(filepath.Dir(files[0]))
		mounts := mountsUnder(t, filepath.Join(n.dir, "agent", "pods", p.UID))
		if os.IsNotExist(err) && len(mounts) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("60 s after the pod was deleted: its inline volume %v, its mounts %v; want both gone", err, mounts)
		}
	}
}

// TestAgentKilledMidMount kills the agent at different moments while it
// mounts a CSI volume for a new pod, restarts it, and checks each time
// that the pod runs with exactly one published mount, and that once the
// pod is deleted no mount of it — published or staged — is left.
func TestAgentKilledMidMount(t *testing.T) {
	requireRoot(t)
	_, c, nodes, ctx := startCSICluster(t, 6*time.Minute)
	n := nodes[0]
	wffc := storage.WaitForFirstConsumer
	if _, err := client.For[*storage.StorageClass](c).Create(ctx, &storage.StorageClass{ObjectMeta: meta.ObjectMeta{Name: "local"},
		Provisioner: csiDriver, VolumeBindingMode: &wffc}); err != nil {
		t.Fatal(err)
	}
	claims, pods := client.For[*core.PersistentVolumeClaim](c), client.For[*core.Pod](c)
	class := "local"
	for i, delay := range []time.Duration{0, 100 * time.Millisecond, 250 * time.Millisecond, 500 * time.Millisecond} {
		name := fmt.Sprintf("k%d", i)
		if _, err := claims.Create(ctx, &core.PersistentVolumeClaim{ObjectMeta: meta.ObjectMeta{Namespace: "default", Name: name},
			Spec: core.PersistentVolumeClaimSpec{AccessModes: []core.PersistentVolumeAccessMode{core.ReadWriteOnce}, StorageClassName: &class,
				Resources: core.VolumeResourceRequirements{Requests: resource.List{"storage": resource.MustParse("10Mi")}}}}); err != nil {
			t.Fatal(err)
		}
		if _, err := pods.Create(ctx, &core.Pod{ObjectMeta: meta.ObjectMeta{Namespace: "default", Name: name}, Spec: core.PodSpec{
			NodeSelector: map[string]string{"kubernetes.io/hostname": n.name},
			Volumes:      []core.Volume{{Name: "data", VolumeSource: core.VolumeSource{PersistentVolumeClaim: &core.PersistentVolumeClaimVolumeSource{ClaimName: name}}}},
			Containers: []core.Container{{Name: "sh", Image: "kobune.local/busybox:1.35", ImagePullPolicy: core.PullNever,
				Command:      []string{"sh", "-c", "trap 'exit 0' TERM; sleep 3600 & wait"},
				VolumeMounts: []core.VolumeMount{{Name: "data", MountPath: "/data"}}}}}}); err != nil {
			t.Fatal(err)
		}
		// The claim is provisioned once the pod is placed; then the agent mounts.
		if _, err := client.WaitFor(ctx, claims, "default", name, 0, func(cl *core.PersistentVolumeClaim, _ bool) bool { return cl.Status.Phase == core.ClaimBound }); err != nil {
			t.Fatal(err)
		}
		time.Sleep(delay)
		n.killAgent()
		n.startAgent(t, "10.244.91.0/24")
		wctx, wcancel := context.WithTimeout(ctx, 40*time.Second)
		p, err := client.WaitFor(wctx, pods, "default", name, 0, func(p *core.Pod, _ bool) bool { return p.Status.Phase == core.PodRunning })
		wcancel()
		if err != nil {
			_ = n.agent.Process.Signal(syscall.SIGQUIT)
			time.Sleep(2 * time.Second)
			t.Fatal(err)
		}
		if m := mountsUnder(t, filepath.Join(n.dir, "agent", "pods", p.UID, "volumes", "kubernetes.io~csi")); len(m) != 1 {
			t.Errorf("kill after %v: the pod's CSI mounts %v, want exactly one", delay, m)
		}
		zero := int64(0)
		if err := pods.Delete(ctx, "default", name, client.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
			t.Fatal(err)
		}
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
			pm := mountsUnder(t, filepath.Join(n.dir, "agent", "pods", p.UID))
			sm := mountsUnder(t, filepath.Join(n.dir, "agent", "plugins", "kubernetes.io", "csi"))
			if len(pm) == 0 && len(sm) == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("kill after %v: 30 s after the pod's deletion, mounts left: %v %v", delay, pm, sm)
			}
		}
	}
}
