package garbagecollector

import (
	"context"
	"testing"
	"time"

	"github.com/kobune/kobune/api/apps"
	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/controller"
	"github.com/kobune/kobune/controller/controllertest"
)

func owned(name string, owners ...meta.OwnerReference) *core.Pod {
	return &core.Pod{ObjectMeta: meta.ObjectMeta{Name: name, Namespace: "default", UID: "uid-" + name, OwnerReferences: owners}}
}

func ref(kind, name, uid string, block bool) meta.OwnerReference {
	r := meta.OwnerReference{APIVersion: "apps/v1", Kind: kind, Name: name, UID: uid}
	if block {
		r.BlockOwnerDeletion = &block
	}
	return r
}

func rs(name, uid string, finalizers ...string) *apps.ReplicaSet {
	r := &apps.ReplicaSet{ObjectMeta: meta.ObjectMeta{Name: name, Namespace: "default", UID: uid, Finalizers: finalizers}}
	if len(finalizers) > 0 {
		ts := meta.NewTime(time.Now())
		r.DeletionTimestamp = &ts
	}
	return r
}

func fixture(rss []*apps.ReplicaSet, pods ...*core.Pod) (*Collector, *controllertest.API) {
	c, api := controllertest.NewClient()
	inf := controller.NewInformers(c)
	inf.ReplicaSets.Seed(rss...)
	inf.ReplicationControllers.Seed()
	inf.Pods.Seed(pods...)
	inf.Deployments.Seed()
	inf.DaemonSets.Seed()
	inf.StatefulSets.Seed()
	inf.Revisions.Seed()
	inf.Jobs.Seed()
	inf.CronJobs.Seed()
	inf.Services.Seed()
	inf.EndpointSlices.Seed()
	for _, p := range pods {
		api.Put("pods", p)
	}
	for _, r := range rss {
		api.Put("replicasets", r)
	}
	return New(c, inf), api
}

func TestDanglingDependents(t *testing.T) {
	alive := rs("alive", "rs-alive")
	gc, api := fixture([]*apps.ReplicaSet{alive},
		owned("orphaned", ref("ReplicaSet", "gone", "rs-gone", true)),
		owned("half", ref("ReplicaSet", "gone", "rs-gone", false), ref("ReplicaSet", "alive", "rs-alive", false)),
		owned("kept", ref("ReplicaSet", "alive", "rs-alive", true)),
		owned("recreated", ref("ReplicaSet", "alive", "an-older-uid", true)), // same name, other uid: its owner is gone
	)
	for _, name := range []string{"orphaned", "half", "kept", "recreated"} {
		if _, err := gc.Reconcile(context.Background(), "pods/default/"+name); err != nil {
			t.Fatal(err)
		}
	}
	deleted := map[string]bool{}
	for _, a := range api.Filter("delete", "pods") {
		deleted[a.Name] = true
	}
	if !deleted["orphaned"] || !deleted["recreated"] || deleted["half"] || deleted["kept"] {
		t.Errorf("deleted %v, want orphaned and recreated only", deleted)
	}
	up := api.Filter("update", "pods")
	if len(up) != 1 || up[0].Name != "half" || len(controllertest.Decode[core.Pod](up[0]).OwnerReferences) != 1 {
		t.Errorf("updates %v, want half with only its living owner left", up)
	}
}

// TestOwnerNotYetInTheCacheKeepsItsDependent: an owner created a moment
// before its dependent may not be in the collector's cache yet; the
// collector asks the API server before it deletes, as Kubernetes' does
// (a CI run deleted a custom resource whose Deployment had just been made).
func TestOwnerNotYetInTheCacheKeepsItsDependent(t *testing.T) {
	gc, api := fixture(nil, owned("new", ref("ReplicaSet", "fresh", "rs-fresh", true)))
	api.Put("replicasets", rs("fresh", "rs-fresh")) // in the API, not in the informer's cache
	if _, err := gc.Reconcile(context.Background(), "pods/default/new"); err != nil {
		t.Fatal(err)
	}
	if d := api.Filter("delete", "pods"); len(d) != 0 {
		t.Errorf("a dependent whose owner exists (not yet cached) was deleted: %v", d)
	}
}

func TestForegroundWaitsForBlockingDependents(t *testing.T) {
	owner := rs("web", "rs-web", FinalizerForeground)
	gc, api := fixture([]*apps.ReplicaSet{owner}, owned("a", ref("ReplicaSet", "web", "rs-web", true)))
	if _, err := gc.Reconcile(context.Background(), "replicasets/default/web"); err != nil {
		t.Fatal(err)
	}
	d := api.Filter("delete", "pods")
	if len(d) != 1 || d[0].PropagationPolicy != "Foreground" {
		t.Errorf("deletes %+v, want pod a in the foreground", d)
	}
	if n := len(api.Filter("update", "replicasets")); n != 0 {
		t.Errorf("finalizer removed while a blocking dependent exists")
	}
	// With the dependent gone, the finalizer goes.
	gc, api = fixture([]*apps.ReplicaSet{owner})
	if _, err := gc.Reconcile(context.Background(), "replicasets/default/web"); err != nil {
		t.Fatal(err)
	}
	up := api.Filter("update", "replicasets")
	if len(up) != 1 || len(controllertest.Decode[apps.ReplicaSet](up[0]).Finalizers) != 0 {
		t.Errorf("updates %v, want the foregroundDeletion finalizer removed", up)
	}
}

func TestOrphanReleasesDependents(t *testing.T) {
	owner := rs("web", "rs-web", FinalizerOrphan)
	gc, api := fixture([]*apps.ReplicaSet{owner}, owned("a", ref("ReplicaSet", "web", "rs-web", true)))
	if _, err := gc.Reconcile(context.Background(), "replicasets/default/web"); err != nil {
		t.Fatal(err)
	}
	if d := api.Filter("delete", "pods"); len(d) != 0 {
		t.Errorf("orphan deleted %v", d)
	}
	pu, ru := api.Filter("update", "pods"), api.Filter("update", "replicasets")
	if len(pu) != 1 || len(controllertest.Decode[core.Pod](pu[0]).OwnerReferences) != 0 {
		t.Errorf("pod updates %v, want the owner reference removed", pu)
	}
	if len(ru) != 1 || len(controllertest.Decode[apps.ReplicaSet](ru[0]).Finalizers) != 0 {
		t.Errorf("owner updates %v, want the orphan finalizer removed", ru)
	}
}

// A reference to a second owner added a moment before the first owner's
// foreground deletion may not be in the collector's cache yet: it decides
// on the dependent as the API server has it, keeps it, and takes only
// the deleted owner's reference away (the conformance suite's "should not
// delete dependents that have both valid owner and owner that's waiting
// for dependents to be deleted" lost one of its 50 pods to this).
func TestDependentAnotherOwnerHoldsIsKept(t *testing.T) {
	owner := rs("old", "rs-old", FinalizerForeground)
	other := rs("stay", "rs-stay")
	cached := owned("a", ref("ReplicaSet", "old", "rs-old", true))
	gc, api := fixture([]*apps.ReplicaSet{owner, other}, cached)
	api.Put("pods", owned("a", ref("ReplicaSet", "old", "rs-old", true), ref("ReplicaSet", "stay", "rs-stay", false)))
	if _, err := gc.Reconcile(context.Background(), "replicasets/default/old"); err != nil {
		t.Fatal(err)
	}
	if d := api.Filter("delete", "pods"); len(d) != 0 {
		t.Errorf("a pod another owner holds was deleted: %+v", d)
	}
	up := api.Filter("update", "pods")
	if len(up) != 1 {
		t.Fatalf("pod updates %v, want one taking the deleted owner's reference away", up)
	}
	if refs := controllertest.Decode[core.Pod](up[0]).OwnerReferences; len(refs) != 1 || refs[0].UID != "rs-stay" {
		t.Errorf("the pod's references after: %+v, want rs-stay alone", refs)
	}
}
