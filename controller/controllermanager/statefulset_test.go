package controllermanager_test

import (
	"context"
	"fmt"
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
}
