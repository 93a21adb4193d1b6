package controllermanager_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/api/resource"
	"github.com/kobune/kobune/api/storage"
	"github.com/kobune/kobune/client"
)

func pv(name, size, class string, modes ...core.PersistentVolumeAccessMode) *core.PersistentVolume {
	return &core.PersistentVolume{ObjectMeta: meta.ObjectMeta{Name: name, Labels: map[string]string{"size": size}},
		Spec: core.PersistentVolumeSpec{Capacity: resource.List{"storage": resource.MustParse(size)}, AccessModes: modes, StorageClassName: class,
			HostPath: &core.HostPathVolumeSource{Path: "/srv/" + name}}}
}

func pvc(name, size string, class *string, modes ...core.PersistentVolumeAccessMode) *core.PersistentVolumeClaim {
	return &core.PersistentVolumeClaim{ObjectMeta: meta.ObjectMeta{Name: name, Namespace: "default"},
		Spec: core.PersistentVolumeClaimSpec{AccessModes: modes, StorageClassName: class,
			Resources: core.VolumeResourceRequirements{Requests: resource.List{"storage": resource.MustParse(size)}}}}
}

// waitFor polls get until ok, or fails after 20 s saying what.
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

// The binder, table by table: a claim gets the smallest volume that fits
// (class, access modes, size, selector), never one bound to another
// claim; one that nothing fits stays Pending; a claim of a
// WaitForFirstConsumer class waits; a volume whose claim is deleted is
// Released under Retain and Failed under Delete (no CSI driver to delete
// it); a claim a pod uses stays Terminating after its deletion until the
// pod is gone, and a bound volume until its claim is.
func TestPersistentVolumeBinding(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := cluster(t, ctx, 1)
	volumes, claims, pods := client.For[*core.PersistentVolume](c), client.For[*core.PersistentVolumeClaim](c), client.For[*core.Pod](c)
	fast, local := "fast", "local"
	wait := storage.WaitForFirstConsumer
	if _, err := client.For[*storage.StorageClass](c).Create(ctx, &storage.StorageClass{ObjectMeta: meta.ObjectMeta{Name: "local"},
		Provisioner: "kubernetes.io/no-provisioner", VolumeBindingMode: &wait}); err != nil {
		t.Fatal(err)
	}
	for _, v := range []*core.PersistentVolume{pv("big", "10Gi", ""), pv("small", "1Gi", ""), pv("tiny", "100Mi", ""),
		pv("rox", "2Gi", "", core.ReadOnlyMany), pv("fast-1", "5Gi", "fast"), pv("local-1", "1Gi", "local")} {
		if len(v.Spec.AccessModes) == 0 {
			v.Spec.AccessModes = []core.PersistentVolumeAccessMode{core.ReadWriteOnce}
		}
		created, err := volumes.Create(ctx, v)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Contains(created.Finalizers, core.PVProtectionFinalizer) {
			t.Errorf("volume %s made without its protection finalizer: %v", v.Name, created.Finalizers)
		}
	}
	bound := func(name, want string) *core.PersistentVolumeClaim {
		t.Helper()
		return waitFor(t, name+" bound to "+want, func() (*core.PersistentVolumeClaim, error) { return claims.Get(ctx, "default", name) },
			func(c *core.PersistentVolumeClaim) bool {
				return c.Spec.VolumeName == want && c.Status.Phase == core.ClaimBound
			})
	}
	rwo := core.ReadWriteOnce
	if _, err := claims.Create(ctx, pvc("a", "500Mi", nil, rwo)); err != nil {
		t.Fatal(err)
	}
	a := bound("a", "small") // not tiny (too small), not big (larger than needed)
	if a.Status.Capacity["storage"].String() != "1Gi" || !slices.Contains(a.Finalizers, core.PVCProtectionFinalizer) {
		t.Errorf("claim a: capacity %v, finalizers %v", a.Status.Capacity, a.Finalizers)
	}
	if _, err := claims.Create(ctx, pvc("b", "500Mi", nil, rwo)); err != nil {
		t.Fatal(err)
	}
	bound("b", "big") // small is taken
	if _, err := claims.Create(ctx, pvc("c", "1Gi", &fast, rwo)); err != nil {
		t.Fatal(err)
	}
	bound("c", "fast-1")
	sel := pvc("d", "1Gi", nil, core.ReadOnlyMany)
	sel.Spec.Selector = &meta.LabelSelector{MatchLabels: map[string]string{"size": "2Gi"}}
	if _, err := claims.Create(ctx, sel); err != nil {
		t.Fatal(err)
	}
	bound("d", "rox")
	if _, err := claims.Create(ctx, pvc("none", "50Gi", nil, rwo)); err != nil {
		t.Fatal(err)
	}
	if _, err := claims.Create(ctx, pvc("later", "1Gi", &local, rwo)); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	for _, name := range []string{"none", "later"} {
		if cl, _ := claims.Get(ctx, "default", name); cl.Status.Phase != core.ClaimPending || cl.Spec.VolumeName != "" {
			t.Errorf("claim %s: %s %q, want Pending and unbound", name, cl.Status.Phase, cl.Spec.VolumeName)
		}
	}
	waitFor(t, "a FailedBinding event for claim none (kobectl describe pvc shows it)", func() ([]*core.Event, error) {
		evs, _, err := client.For[*core.Event](c).List(ctx, "default", client.ListOptions{FieldSelector: "involvedObject.name=none,involvedObject.kind=PersistentVolumeClaim"})
		return evs, err
	}, func(evs []*core.Event) bool {
		return len(evs) > 0 && evs[0].Reason == "FailedBinding" && evs[0].Message == "no persistent volumes available for this claim and no storage class is set"
	})
	if v, _ := volumes.Get(ctx, "", "local-1"); v.Status.Phase != core.VolumeAvailable {
		t.Errorf("local-1 is %s before any consumer", v.Status.Phase)
	}

	// Deleting a claim a pod uses: it waits for the pod.
	if _, err := pods.Create(ctx, &core.Pod{ObjectMeta: meta.ObjectMeta{Name: "user", Namespace: "default"}, Spec: core.PodSpec{NodeName: "ghost-node",
		Volumes:    []core.Volume{{Name: "data", VolumeSource: core.VolumeSource{PersistentVolumeClaim: &core.PersistentVolumeClaimVolumeSource{ClaimName: "a"}}}},
		Containers: []core.Container{{Name: "app", Image: "i", VolumeMounts: []core.VolumeMount{{Name: "data", MountPath: "/data"}}}}}}); err != nil {
		t.Fatal(err)
	}
	if err := claims.Delete(ctx, "default", "a", client.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	if cl, err := claims.Get(ctx, "default", "a"); err != nil || cl.DeletionTimestamp == nil {
		t.Fatalf("claim a in use: %v %v, want it Terminating", cl, err)
	}
	if err := volumes.Delete(ctx, "", "small", client.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	zero := int64(0)
	if err := pods.Delete(ctx, "default", "user", client.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "claim a gone once its pod is", func() (bool, error) {
		_, err := claims.Get(ctx, "default", "a")
		return client.IsNotFound(err), nil
	}, func(gone bool) bool { return gone })
	// Its volume (Retain, the default of a volume made by hand) was
	// Released, so its own deletion could finish too.
	waitFor(t, "volume small gone once released", func() (bool, error) {
		_, err := volumes.Get(ctx, "", "small")
		return client.IsNotFound(err), nil
	}, func(gone bool) bool { return gone })

	// Retain keeps a released volume; Delete without a CSI driver fails.
	retryUpdate(t, ctx, volumes, "", "fast-1", func(big *core.PersistentVolume) {
		big.Spec.PersistentVolumeReclaimPolicy = core.ReclaimDelete
	})
	for _, name := range []string{"b", "c"} {
		if err := claims.Delete(ctx, "default", name, client.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "big Released", func() (*core.PersistentVolume, error) { return volumes.Get(ctx, "", "big") },
		func(v *core.PersistentVolume) bool { return v.Status.Phase == core.VolumeReleased })
	waitFor(t, "fast-1 Failed", func() (*core.PersistentVolume, error) { return volumes.Get(ctx, "", "fast-1") },
		func(v *core.PersistentVolume) bool {
			return v.Status.Phase == core.VolumeFailed && v.Status.Reason == "VolumeFailedDelete"
		})
	// A released volume is not bound again.
	if _, err := claims.Create(ctx, pvc("again", "5Gi", nil, rwo)); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	if cl, _ := claims.Get(ctx, "default", "again"); cl.Spec.VolumeName != "" {
		t.Errorf("a new claim got the released volume %s", cl.Spec.VolumeName)
	}
}

// TestClaimPlacedOnANodeNotYetSeen: a claim the scheduler placed on a node
// the controller has not seen yet (its informers lag behind the
// scheduler's) says so in an event and binds once the node appears,
// to the volume that node reaches — nothing else announces the fit.
func TestClaimPlacedOnANodeNotYetSeen(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := cluster(t, ctx, 0)
	localVolumes(t, ctx, c, "near", "far")
	local := "local"
	claim := pvc("placed", "500Mi", &local, core.ReadWriteOnce)
	claim.Annotations = map[string]string{core.AnnSelectedNode: "far"}
	claims := client.For[*core.PersistentVolumeClaim](c)
	if _, err := claims.Create(ctx, claim); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a WaitForNode event naming node far", func() ([]*core.Event, error) {
		evs, _, err := client.For[*core.Event](c).List(ctx, "default", client.ListOptions{FieldSelector: "involvedObject.name=placed"})
		return evs, err
	}, func(evs []*core.Event) bool {
		return slices.ContainsFunc(evs, func(e *core.Event) bool { return e.Reason == "WaitForNode" && strings.Contains(e.Message, `"far"`) })
	})
	if cl, _ := claims.Get(ctx, "default", "placed"); cl.Spec.VolumeName != "" {
		t.Fatalf("bound to %s before its node exists", cl.Spec.VolumeName)
	}
	if _, err := client.For[*core.Node](c).Create(ctx, &core.Node{ObjectMeta: meta.ObjectMeta{Name: "far",
		Labels: map[string]string{"kubernetes.io/hostname": "far"}}}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "placed bound to local-far", func() (*core.PersistentVolumeClaim, error) { return claims.Get(ctx, "default", "placed") },
		func(c *core.PersistentVolumeClaim) bool {
			return c.Spec.VolumeName == "local-far" && c.Status.Phase == core.ClaimBound
		})
}

// localVolumes makes the WaitForFirstConsumer class "local" (no
// provisioner) and a 1Gi local volume "local-<node>" on each node.
func localVolumes(t *testing.T, ctx context.Context, c *client.Client, nodes ...string) {
	t.Helper()
	wait := storage.WaitForFirstConsumer
	if _, err := client.For[*storage.StorageClass](c).Create(ctx, &storage.StorageClass{ObjectMeta: meta.ObjectMeta{Name: "local"},
		Provisioner: "kubernetes.io/no-provisioner", VolumeBindingMode: &wait}); err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes {
		v := pv("local-"+n, "1Gi", "local", core.ReadWriteOnce)
		v.Spec.HostPath, v.Spec.Local = nil, &core.LocalVolumeSource{Path: "/srv/data"}
		v.Spec.NodeAffinity = &core.VolumeNodeAffinity{Required: &core.NodeSelector{NodeSelectorTerms: []core.NodeSelectorTerm{{MatchExpressions: []core.NodeSelectorRequirement{
			{Key: "kubernetes.io/hostname", Operator: "In", Values: []string{n}}}}}}}
		if _, err := client.For[*core.PersistentVolume](c).Create(ctx, v); err != nil {
			t.Fatal(err)
		}
	}
}
