package provisioner_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/api/resource"
	"github.com/kobune/kobune/api/storage"
	"github.com/kobune/kobune/apiserver/testserver"
	"github.com/kobune/kobune/client"
	"github.com/kobune/kobune/csi/localpath"
	"github.com/kobune/kobune/csi/provisioner"
)

// nodes starts an API server and, for each node name, kobune-csi-local's
// driver on a socket and a provisioner beside it; it returns the client
// and each node's volume directory.
func nodes(t *testing.T, ctx context.Context, names ...string) (*client.Client, map[string]string) {
	t.Helper()
	srv, err := testserver.Start(t.TempDir(), testserver.StableAddr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	ctx, cancel := context.WithCancel(ctx)
	dirs := map[string]string{}
	done := make(chan struct{}, 2*len(names))
	for _, name := range names {
		base := t.TempDir()
		d := &localpath.Driver{NodeID: name, Dir: filepath.Join(base, "data")}
		sock := filepath.Join(base, "csi.sock")
		dirs[name] = filepath.Join(d.Dir, "volumes")
		go func() { _ = localpath.Serve(ctx, d, sock); done <- struct{}{} }()
		go func() {
			_ = provisioner.Run(ctx, srv.Client, provisioner.Config{NodeName: name, CSIAddress: sock, Logf: t.Logf})
			done <- struct{}{}
		}()
	}
	t.Cleanup(func() {
		cancel()
		for range 2 * len(names) {
			<-done
		}
	})
	return srv.Client, dirs
}

func claim(name, class string) *core.PersistentVolumeClaim {
	return &core.PersistentVolumeClaim{ObjectMeta: meta.ObjectMeta{Namespace: "default", Name: name},
		Spec: core.PersistentVolumeClaimSpec{AccessModes: []core.PersistentVolumeAccessMode{core.ReadWriteOnce}, StorageClassName: &class,
			Resources: core.VolumeResourceRequirements{Requests: resource.List{"storage": resource.MustParse("64Mi")}}}}
}

func waitFor[T any](t *testing.T, what string, get func() (T, error), ok func(T) bool) T {
	t.Helper()
	var last T
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		v, err := get()
		if err == nil && ok(v) {
			return v
		}
		last = v
	}
	t.Fatalf("%s: never happened; last %+v", what, last)
	return last
}

func class(t *testing.T, ctx context.Context, c *client.Client, name string, mode storage.VolumeBindingMode, policy core.PersistentVolumeReclaimPolicy) {
	t.Helper()
	if _, err := client.For[*storage.StorageClass](c).Create(ctx, &storage.StorageClass{ObjectMeta: meta.ObjectMeta{Name: name},
		Provisioner: localpath.Name, VolumeBindingMode: &mode, ReclaimPolicy: &policy}); err != nil {
		t.Fatal(err)
	}
}

// TestProvisionOnTheSelectedNode: a WaitForFirstConsumer claim is left
// alone until the scheduler's annotation names a node; then that node's
// provisioner (only) makes the volume — a directory on that node and a
// PersistentVolume reserved for the claim, pinned to the node, with the
// class's policy.
func TestProvisionOnTheSelectedNode(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, dirs := nodes(t, ctx, "node-1", "node-2")
	class(t, ctx, c, "local", storage.WaitForFirstConsumer, core.ReclaimRetain)
	claims, volumes := client.For[*core.PersistentVolumeClaim](c), client.For[*core.PersistentVolume](c)
	cl, err := claims.Create(ctx, claim("data", "local"))
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	if vs, _, _ := volumes.List(ctx, "", client.ListOptions{}); len(vs) != 0 {
		t.Fatalf("volumes made before the scheduler chose a node: %v", vs)
	}
	cl.Annotations = map[string]string{core.AnnSelectedNode: "node-2"}
	if _, err := claims.Update(ctx, cl); err != nil {
		t.Fatal(err)
	}
	pv := waitFor(t, "the volume of claim data", func() (*core.PersistentVolume, error) { return volumes.Get(ctx, "", provisioner.VolumeName(cl)) },
		func(*core.PersistentVolume) bool { return true })
	if r := pv.Spec.ClaimRef; r == nil || r.Name != "data" || r.UID != cl.UID {
		t.Errorf("claimRef %+v, want the claim", r)
	}
	if pv.Spec.PersistentVolumeReclaimPolicy != core.ReclaimRetain || pv.Spec.StorageClassName != "local" || pv.Annotations[provisioner.AnnProvisionedBy] != localpath.Name {
		t.Errorf("volume %+v: want the class's policy and name, provisioned-by %s", pv, localpath.Name)
	}
	if q := pv.Spec.Capacity["storage"]; q.Cmp(resource.MustParse("64Mi")) != 0 {
		t.Errorf("capacity %v, want the claim's 64Mi", q.String())
	}
	n2 := &core.Node{ObjectMeta: meta.ObjectMeta{Name: "node-2", Labels: map[string]string{localpath.TopologyKey: "node-2"}}}
	n1 := &core.Node{ObjectMeta: meta.ObjectMeta{Name: "node-1", Labels: map[string]string{localpath.TopologyKey: "node-1"}}}
	if !core.VolumeReachableFrom(pv, n2) || core.VolumeReachableFrom(pv, n1) {
		t.Errorf("node affinity %+v: want node-2 only", pv.Spec.NodeAffinity)
	}
	if _, err := os.Stat(filepath.Join(dirs["node-2"], pv.Spec.CSI.VolumeHandle)); err != nil {
		t.Errorf("no directory on node-2: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dirs["node-1"], pv.Spec.CSI.VolumeHandle)); !os.IsNotExist(err) {
		t.Errorf("node-1 made a directory too: %v", err)
	}
}

// TestImmediateClaimTakenByOneNode: with two nodes' provisioners, a claim
// of an Immediate class gets exactly one volume, on the node that wrote
// its name into the claim first.
func TestImmediateClaimTakenByOneNode(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, dirs := nodes(t, ctx, "node-1", "node-2")
	class(t, ctx, c, "now", storage.Immediate, core.ReclaimDelete)
	claims, volumes := client.For[*core.PersistentVolumeClaim](c), client.For[*core.PersistentVolume](c)
	for _, name := range []string{"a", "b", "c", "d"} {
		cl, err := claims.Create(ctx, claim(name, "now"))
		if err != nil {
			t.Fatal(err)
		}
		pv := waitFor(t, "the volume of claim "+name, func() (*core.PersistentVolume, error) { return volumes.Get(ctx, "", provisioner.VolumeName(cl)) },
			func(*core.PersistentVolume) bool { return true })
		cl, _ = claims.Get(ctx, "default", name)
		home := cl.Annotations[core.AnnSelectedNode]
		made := 0
		for node, dir := range dirs {
			if _, err := os.Stat(filepath.Join(dir, pv.Spec.CSI.VolumeHandle)); err == nil {
				made++
				if node != home {
					t.Errorf("claim %s: directory on %s, the claim names %s", name, node, home)
				}
			}
		}
		if made != 1 {
			t.Errorf("claim %s: %d directories, want 1", name, made)
		}
	}
	if vs, _, _ := volumes.List(ctx, "", client.ListOptions{}); len(vs) != 4 {
		t.Errorf("%d volumes for 4 claims", len(vs))
	}
}

// TestReleasedVolumes: a Released volume under Delete loses its directory
// and its PersistentVolume; under Retain both stay.
func TestReleasedVolumes(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, dirs := nodes(t, ctx, "node-1")
	class(t, ctx, c, "gone", storage.Immediate, core.ReclaimDelete)
	class(t, ctx, c, "kept", storage.Immediate, core.ReclaimRetain)
	claims, volumes := client.For[*core.PersistentVolumeClaim](c), client.For[*core.PersistentVolume](c)
	pvs := map[string]*core.PersistentVolume{}
	for _, name := range []string{"gone", "kept"} {
		cl, err := claims.Create(ctx, claim(name, name))
		if err != nil {
			t.Fatal(err)
		}
		pvs[name] = waitFor(t, "the volume of claim "+name, func() (*core.PersistentVolume, error) { return volumes.Get(ctx, "", provisioner.VolumeName(cl)) },
			func(*core.PersistentVolume) bool { return true })
		if err := claims.Delete(ctx, "default", name, client.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		// What the binder does once the claim is gone.
		pv := pvs[name]
		pv.Status.Phase = core.VolumeReleased
		if _, err := volumes.UpdateStatus(ctx, pv); err != nil {
			t.Fatal(err)
		}
	}
	gone := filepath.Join(dirs["node-1"], pvs["gone"].Spec.CSI.VolumeHandle)
	// Deleted: gone, or waiting for the protection controller (not run
	// here) to drop its pv-protection finalizer.
	waitFor(t, "the Delete volume removed", func() (bool, error) {
		pv, err := volumes.Get(ctx, "", pvs["gone"].Name)
		_, statErr := os.Stat(gone)
		return (client.IsNotFound(err) || (err == nil && pv.DeletionTimestamp != nil)) && os.IsNotExist(statErr), nil
	}, func(b bool) bool { return b })
	time.Sleep(500 * time.Millisecond)
	if pv, err := volumes.Get(ctx, "", pvs["kept"].Name); err != nil || pv.DeletionTimestamp != nil {
		t.Errorf("the Retain volume: %+v %v, want it kept", pv, err)
	}
	if _, err := os.Stat(filepath.Join(dirs["node-1"], pvs["kept"].Spec.CSI.VolumeHandle)); err != nil {
		t.Errorf("the Retain volume's directory: %v", err)
	}
}

// TestResize: the API server refuses to grow a claim that is not bound,
// or whose class does not allow expansion (naming the field and the
// rule); a bound claim of a class that does is expanded by the resizer —
// the volume's capacity, then the claim's status.
func TestResize(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, _ := nodes(t, ctx, "node-1")
	class(t, ctx, c, "fixed", storage.Immediate, core.ReclaimDelete)
	yes := true
	mode, policy := storage.Immediate, core.ReclaimDelete
	if _, err := client.For[*storage.StorageClass](c).Create(ctx, &storage.StorageClass{ObjectMeta: meta.ObjectMeta{Name: "growing"},
		Provisioner: localpath.Name, VolumeBindingMode: &mode, ReclaimPolicy: &policy, AllowVolumeExpansion: &yes}); err != nil {
		t.Fatal(err)
	}
	claims, volumes := client.For[*core.PersistentVolumeClaim](c), client.For[*core.PersistentVolume](c)
	// bound makes the claim and binds it to its volume, as the binder does.
	bound := func(name, class string) *core.PersistentVolumeClaim {
		cl, err := claims.Create(ctx, claim(name, class))
		if err != nil {
			t.Fatal(err)
		}
		pv := waitFor(t, "the volume of claim "+name, func() (*core.PersistentVolume, error) { return volumes.Get(ctx, "", provisioner.VolumeName(cl)) },
			func(*core.PersistentVolume) bool { return true })
		cl, _ = claims.Get(ctx, "default", name)
		cl.Spec.VolumeName = pv.Name
		if cl, err = claims.Update(ctx, cl); err != nil {
			t.Fatal(err)
		}
		cl.Status = core.PersistentVolumeClaimStatus{Phase: core.ClaimBound, AccessModes: pv.Spec.AccessModes, Capacity: pv.Spec.Capacity}
		if cl, err = claims.UpdateStatus(ctx, cl); err != nil {
			t.Fatal(err)
		}
		return cl
	}
	grow := func(cl *core.PersistentVolumeClaim) error {
		cl.Spec.Resources.Requests = resource.List{"storage": resource.MustParse("128Mi")}
		_, err := claims.Update(ctx, cl)
		return err
	}
	unbound, err := claims.Create(ctx, &core.PersistentVolumeClaim{ObjectMeta: meta.ObjectMeta{Namespace: "default", Name: "unbound"},
		Spec: core.PersistentVolumeClaimSpec{AccessModes: []core.PersistentVolumeAccessMode{core.ReadWriteOnce}, StorageClassName: new(string),
			Resources: core.VolumeResourceRequirements{Requests: resource.List{"storage": resource.MustParse("64Mi")}}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := grow(unbound); err == nil || !strings.Contains(err.Error(), "an unbound claim cannot be resized") {
		t.Errorf("growing an unbound claim: %v", err)
	}
	fixed := bound("fixed", "fixed")
	if err := grow(fixed); err == nil || !strings.Contains(err.Error(), "must support resize") {
		t.Errorf("growing a claim whose class does not allow expansion: %v", err)
	}
	if cur, _ := claims.Get(ctx, "default", "fixed"); cur.Spec.Resources.Requests["storage"].Cmp(resource.MustParse("64Mi")) != 0 {
		t.Errorf("the refused resize changed the stored claim: %v", cur.Spec.Resources.Requests)
	}
	growing := bound("growing", "growing")
	if err := grow(growing); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the claim's status after the resize", func() (*core.PersistentVolumeClaim, error) { return claims.Get(ctx, "default", "growing") },
		func(cl *core.PersistentVolumeClaim) bool {
			q := cl.Status.Capacity["storage"]
			return q.Cmp(resource.MustParse("128Mi")) == 0
		})
	pv, err := volumes.Get(ctx, "", growing.Spec.VolumeName)
	if q := pv.Spec.Capacity["storage"]; err != nil || q.Cmp(resource.MustParse("128Mi")) != 0 {
		t.Errorf("the volume after the resize: %v %v", pv.Spec.Capacity, err)
	}
}
