package controllermanager_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/kobune/kobune/api/apps"
	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/client"
	testcluster "github.com/kobune/kobune/test/cluster"
)

// TestStatefulSet: stable names created in order, each once the one before
// is ready; scale down from the highest ordinal; a rolling update from the
// highest ordinal down to the partition.
func TestStatefulSet(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := testcluster.Start(t, ctx, testcluster.Options{Nodes: 2}).Client
	three := int32(3)
	set := &apps.StatefulSet{ObjectMeta: meta.ObjectMeta{Name: "db", Namespace: "default"},
		Spec: apps.StatefulSetSpec{Replicas: &three, ServiceName: "db", Selector: &meta.LabelSelector{MatchLabels: map[string]string{"app": "db"}},
			Template: core.PodTemplateSpec{ObjectMeta: meta.ObjectMeta{Labels: map[string]string{"app": "db"}},
				Spec: core.PodSpec{Containers: []core.Container{{Name: "db", Image: "kobune.local/labapp:1.0"}}}}}}
	_, rev, _ := client.For[*core.Pod](c).List(ctx, "default", client.ListOptions{})
	w, err := client.For[*core.Pod](c).Watch(ctx, "default", client.ListOptions{LabelSelector: "app=db"}, rev)
	if err != nil {
		t.Fatal(err)
	}
	sets := client.For[*apps.StatefulSet](c)
	if _, err := sets.Create(ctx, set); err != nil {
		t.Fatal(err)
	}
	// Creation order and readiness: db-N is created only when db-(N-1) is ready.
	ready := map[string]bool{}
	var order []string
	for len(order) < 3 || len(ready) < 3 {
		select {
		case ev := <-w.Events:
			p := ev.Object
			if ev.Type == "ADDED" {
				order = append(order, p.Name)
				if n := len(order); n > 1 && !ready[order[n-2]] {
					t.Fatalf("%s created before %s was ready", p.Name, order[n-2])
				}
				if p.Spec.Hostname != p.Name || p.Spec.Subdomain != "db" {
					t.Errorf("%s: hostname %q subdomain %q", p.Name, p.Spec.Hostname, p.Spec.Subdomain)
				}
			}
			if isReady(p) {
				ready[p.Name] = true
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("StatefulSet stalled: created %v, ready %v", order, ready)
		}
	}
	if fmt.Sprint(order) != "[db-0 db-1 db-2]" {
		t.Errorf("created in order %v", order)
	}

	// Rolling update with partition 1: db-2 then db-1 are replaced, db-0 stays.
	one := int32(1)
	retryUpdate(t, ctx, sets, "default", "db", func(cur *apps.StatefulSet) {
		cur.Spec.Template.Spec.Containers[0].Image = "kobune.local/labapp:2.0"
		cur.Spec.UpdateStrategy = apps.StatefulSetUpdateStrategy{Type: "RollingUpdate", RollingUpdate: &apps.RollingUpdateStatefulSetStrategy{Partition: &one}}
	})
	images := func() map[string]string {
		out := map[string]string{}
		for _, p := range activePods(t, ctx, c, "db") {
			if isReady(p) {
				out[p.Name] = p.Spec.Containers[0].Image
			}
		}
		return out
	}
	var deletions []string
	for deadline := time.Now().Add(30 * time.Second); ; {
		select {
		case ev := <-w.Events:
			if ev.Object.DeletionTimestamp != nil && (len(deletions) == 0 || deletions[len(deletions)-1] != ev.Object.Name) {
				deletions = append(deletions, ev.Object.Name)
			}
		case <-time.After(100 * time.Millisecond):
		}
		im := images()
		if im["db-2"] == "kobune.local/labapp:2.0" && im["db-1"] == "kobune.local/labapp:2.0" && len(im) == 3 {
			if im["db-0"] != "kobune.local/labapp:1.0" {
				t.Errorf("db-0 below the partition was updated")
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("rolling update stalled: %v", im)
		}
	}
	if fmt.Sprint(deletions) != "[db-2 db-1]" {
		t.Errorf("replaced in order %v, want [db-2 db-1]", deletions)
	}
	// Scale down to 1: db-2 goes, then db-1.
	retryUpdate(t, ctx, sets, "default", "db", func(cur *apps.StatefulSet) { cur.Spec.Replicas = &one })
	deletions = nil
	for deadline := time.Now().Add(30 * time.Second); len(activePods(t, ctx, c, "db")) != 1; {
		select {
		case ev := <-w.Events:
			if ev.Object.DeletionTimestamp != nil && (len(deletions) == 0 || deletions[len(deletions)-1] != ev.Object.Name) {
				deletions = append(deletions, ev.Object.Name)
			}
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatal("scale down stalled")
		}
	}
	if len(deletions) < 1 || deletions[0] != "db-2" {
		t.Errorf("scale down deleted %v first, want db-2", deletions)
	}
	if p := activePods(t, ctx, c, "db"); len(p) != 1 || p[0].Name != "db-0" {
		t.Errorf("left %v, want db-0", p)
	}
	// db-0, below the partition, deleted: it comes back at the current
	// revision, not the update's.
	if err := client.For[*core.Pod](c).Delete(ctx, "default", "db-0", client.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if p, err := client.For[*core.Pod](c).Get(ctx, "default", "db-0"); err == nil && p.DeletionTimestamp == nil && isReady(p) {
			if img := p.Spec.Containers[0].Image; img != "kobune.local/labapp:1.0" {
				t.Errorf("db-0 below the partition came back with %s, want the current revision's kobune.local/labapp:1.0", img)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("db-0 did not come back")
		}
	}
}

// volumeClaimTemplates: each ordinal gets its claim (data-db-N, bound to a
// volume), made before its pod and named in the pod's volumes; a pod
// deleted and made again finds the same claim; a scale-down under
// whenScaled: Delete deletes the claim of the removed ordinal once its pod
// is gone, and the set's deletion under whenDeleted: Retain keeps the rest.
func TestStatefulSetClaims(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := testcluster.Start(t, ctx, testcluster.Options{Nodes: 2}).Client
	for _, name := range []string{"pv-a", "pv-b"} {
		v := pv(name, "1Gi", "", core.ReadWriteOnce)
		if _, err := client.For[*core.PersistentVolume](c).Create(ctx, v); err != nil {
			t.Fatal(err)
		}
	}
	two := int32(2)
	set := &apps.StatefulSet{ObjectMeta: meta.ObjectMeta{Name: "db", Namespace: "default"},
		Spec: apps.StatefulSetSpec{Replicas: &two, ServiceName: "db", PodManagementPolicy: "Parallel",
			Selector: &meta.LabelSelector{MatchLabels: map[string]string{"app": "db"}},
			Template: core.PodTemplateSpec{ObjectMeta: meta.ObjectMeta{Labels: map[string]string{"app": "db"}},
				Spec: core.PodSpec{Containers: []core.Container{{Name: "db", Image: "kobune.local/labapp:1.0",
					VolumeMounts: []core.VolumeMount{{Name: "data", MountPath: "/data"}}}}}},
			VolumeClaimTemplates:                 []core.PersistentVolumeClaim{*pvc("data", "500Mi", nil, core.ReadWriteOnce)},
			PersistentVolumeClaimRetentionPolicy: &apps.StatefulSetPersistentVolumeClaimRetentionPolicy{WhenDeleted: "Retain", WhenScaled: "Delete"}}}
	set.Spec.VolumeClaimTemplates[0].Namespace = ""
	sets, claims, pods := client.For[*apps.StatefulSet](c), client.For[*core.PersistentVolumeClaim](c), client.For[*core.Pod](c)
	if _, err := sets.Create(ctx, set); err != nil {
		t.Fatal(err)
	}
	claimOf := func(pod string) string {
		p := waitFor(t, pod+" made", func() (*core.Pod, error) { return pods.Get(ctx, "default", pod) }, func(*core.Pod) bool { return true })
		for _, v := range p.Spec.Volumes {
			if v.Name == "data" && v.PersistentVolumeClaim != nil {
				return v.PersistentVolumeClaim.ClaimName
			}
		}
		t.Fatalf("pod %s has no claim volume: %+v", pod, p.Spec.Volumes)
		return ""
	}
	uids := map[string]string{}
	for i, pod := range []string{"db-0", "db-1"} {
		want := fmt.Sprintf("data-db-%d", i)
		if got := claimOf(pod); got != want {
			t.Errorf("%s mounts claim %s, want %s", pod, got, want)
		}
		cl := waitFor(t, want+" bound", func() (*core.PersistentVolumeClaim, error) { return claims.Get(ctx, "default", want) },
			func(c *core.PersistentVolumeClaim) bool { return c.Status.Phase == core.ClaimBound })
		if cl.Labels["app"] != "db" {
			t.Errorf("claim %s labels %v", want, cl.Labels)
		}
		uids[want] = cl.UID
	}
	// db-0 deleted: made again, with the same claim.
	old, _ := pods.Get(ctx, "default", "db-0")
	zero := int64(0)
	if err := pods.Delete(ctx, "default", "db-0", client.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "db-0 made again", func() (*core.Pod, error) { return pods.Get(ctx, "default", "db-0") }, func(p *core.Pod) bool { return p.UID != old.UID })
	if got := claimOf("db-0"); got != "data-db-0" {
		t.Errorf("db-0 came back with claim %s", got)
	}
	if cl, _ := claims.Get(ctx, "default", "data-db-0"); cl == nil || cl.UID != uids["data-db-0"] {
		t.Errorf("data-db-0 was made again")
	}
	// Scale to 1: db-1 goes, then its claim.
	// The controller writes the set's status meanwhile: retried on conflict.
	one := int32(1)
	retryUpdate(t, ctx, sets, "default", "db", func(s *apps.StatefulSet) { s.Spec.Replicas = &one })
	waitFor(t, "data-db-1 deleted after the scale-down", func() (bool, error) {
		_, err := claims.Get(ctx, "default", "data-db-1")
		return client.IsNotFound(err), nil
	}, func(gone bool) bool { return gone })
	// The set deleted: its pods go, data-db-0 stays (Retain).
	if err := sets.Delete(ctx, "default", "db", client.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "db-0 gone with the set", func() (bool, error) {
		_, err := pods.Get(ctx, "default", "db-0")
		return client.IsNotFound(err), nil
	}, func(gone bool) bool { return gone })
	if cl, err := claims.Get(ctx, "default", "data-db-0"); err != nil || cl.DeletionTimestamp != nil {
		t.Errorf("Retain: data-db-0 after the set's deletion: %v %v", cl, err)
	}
}

// Local volumes with WaitForFirstConsumer, end to end through the real
// scheduler: each node has one local volume; the StatefulSet's two pods
// land on different nodes (the volume is where it is), each claim is bound
// to the volume of its pod's node, and the scheduler's decision names the
// volume reason for the node that could not take a pod. A pod deleted
// comes back to the same node: its claim's volume is there.
func TestStatefulSetOnLocalVolumes(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := testcluster.Start(t, ctx, testcluster.Options{Nodes: 2}).Client
	localVolumes(t, ctx, c, "node-1", "node-2")
	local := "local"
	two := int32(2)
	tmpl := pvc("data", "500Mi", &local, core.ReadWriteOnce)
	tmpl.Namespace = ""
	set := &apps.StatefulSet{ObjectMeta: meta.ObjectMeta{Name: "db", Namespace: "default"},
		Spec: apps.StatefulSetSpec{Replicas: &two, ServiceName: "db", Selector: &meta.LabelSelector{MatchLabels: map[string]string{"app": "db"}},
			Template: core.PodTemplateSpec{ObjectMeta: meta.ObjectMeta{Labels: map[string]string{"app": "db"}},
				Spec: core.PodSpec{Containers: []core.Container{{Name: "db", Image: "kobune.local/labapp:1.0",
					VolumeMounts: []core.VolumeMount{{Name: "data", MountPath: "/data"}}}}}},
			VolumeClaimTemplates: []core.PersistentVolumeClaim{*tmpl}}}
	if _, err := client.For[*apps.StatefulSet](c).Create(ctx, set); err != nil {
		t.Fatal(err)
	}
	pods, claims := client.For[*core.Pod](c), client.For[*core.PersistentVolumeClaim](c)
	nodes := map[string]string{}
	for i, name := range []string{"db-0", "db-1"} {
		p := waitFor(t, name+" scheduled", func() (*core.Pod, error) { return pods.Get(ctx, "default", name) }, func(p *core.Pod) bool { return p.Spec.NodeName != "" })
		cl := waitFor(t, fmt.Sprintf("data-db-%d bound", i), func() (*core.PersistentVolumeClaim, error) {
			return claims.Get(ctx, "default", fmt.Sprintf("data-db-%d", i))
		},
			func(c *core.PersistentVolumeClaim) bool { return c.Status.Phase == core.ClaimBound })
		if cl.Spec.VolumeName != "local-"+p.Spec.NodeName || cl.Annotations[core.AnnSelectedNode] != p.Spec.NodeName {
			t.Errorf("%s on %s, its claim bound to %s (selected node %q)", name, p.Spec.NodeName, cl.Spec.VolumeName, cl.Annotations[core.AnnSelectedNode])
		}
		nodes[name] = p.Spec.NodeName
	}
	if nodes["db-0"] == nodes["db-1"] {
		t.Fatalf("both pods on %s, with one local volume per node", nodes["db-0"])
	}
	p1, _ := pods.Get(ctx, "default", "db-1")
	if d := p1.Annotations["scheduler.kobune.io/decision"]; !strings.Contains(d, "node(s) didn't find available persistent volumes to bind") {
		t.Errorf("db-1's decision does not name the volume reason: %s", d)
	}
	old, _ := pods.Get(ctx, "default", "db-0")
	zero := int64(0)
	if err := pods.Delete(ctx, "default", "db-0", client.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatal(err)
	}
	back := waitFor(t, "db-0 back", func() (*core.Pod, error) { return pods.Get(ctx, "default", "db-0") },
		func(p *core.Pod) bool { return p.UID != old.UID && p.Spec.NodeName != "" })
	if back.Spec.NodeName != nodes["db-0"] {
		t.Errorf("db-0 came back on %s, its volume is on %s", back.Spec.NodeName, nodes["db-0"])
	}
}
