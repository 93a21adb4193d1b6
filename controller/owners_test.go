package controller_test

import (
	"context"
	"slices"
	"testing"

	"github.com/kobune/kobune/api/apps"
	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/api/selector"
	"github.com/kobune/kobune/client"
	"github.com/kobune/kobune/controller"
	"github.com/kobune/kobune/controller/controllertest"
)

func drain(q *client.Queue) []string {
	var keys []string
	for q.Len() > 0 {
		k, _ := q.Get()
		q.Done(k)
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func rsNamed(name, uid string, labels map[string]string) *apps.ReplicaSet {
	return &apps.ReplicaSet{ObjectMeta: meta.ObjectMeta{Name: name, Namespace: "default", UID: uid},
		Spec: apps.ReplicaSetSpec{Selector: &meta.LabelSelector{MatchLabels: labels}}}
}

func podOf(name string, owner *apps.ReplicaSet, labels map[string]string) *core.Pod {
	p := &core.Pod{ObjectMeta: meta.ObjectMeta{Name: name, Namespace: "default", UID: "p-" + name, Labels: labels}}
	if owner != nil {
		p.OwnerReferences = []meta.OwnerReference{controller.ControllerRef(owner)}
	}
	return p
}

// The one "enqueue my controller owner" handler: the owner of the right
// kind and uid is enqueued, expectations are settled once per pod (a pod
// that starts terminating counts as deleted, its final removal not
// again), an orphan wakes the owners whose selector matches it, a pod
// whose owner was replaced under the same name wakes nobody, and a
// released pod wakes its old owner.
func TestOwnedByEnqueuesTheControllerOwner(t *testing.T) {
	c, _ := controllertest.NewClient()
	inf := controller.NewInformers(c)
	web := rsNamed("web", "u-web", map[string]string{"app": "web"})
	db := rsNamed("db", "u-db", map[string]string{"app": "db"})
	inf.ReplicaSets.Seed(web, db)
	q := client.NewQueue(nil)
	exp := controller.NewExpectations()
	h := controller.OwnedBy[*core.Pod]{Kind: "ReplicaSet", Queue: q, Owner: controller.CachedIn(inf.ReplicaSets), Expectations: exp,
		Adopters: controller.SelectedBy[*apps.ReplicaSet, *core.Pod](inf.ReplicaSets, func(rs *apps.ReplicaSet) *meta.LabelSelector { return rs.Spec.Selector })}.Handler()

	exp.Expect("default/web", 1, 1)
	p := podOf("web-1", web, map[string]string{"app": "web"})
	h.OnAdd(p)
	if got := drain(q); !slices.Equal(got, []string{"default/web"}) {
		t.Fatalf("add of an owned pod enqueued %v", got)
	}
	terminating := *p
	terminating.DeletionTimestamp = &meta.Time{}
	h.OnUpdate(p, &terminating)
	if !exp.Satisfied("default/web") {
		t.Error("one add and one start of termination did not satisfy 1 add + 1 delete")
	}
	exp.Expect("default/web", 0, 1)
	h.OnDelete(&terminating) // counted when it started terminating
	if exp.Satisfied("default/web") {
		t.Error("the removal of a pod already counted as deleted was counted again")
	}
	drain(q)

	h.OnAdd(podOf("stray", nil, map[string]string{"app": "db"}))
	if got := drain(q); !slices.Equal(got, []string{"default/db"}) {
		t.Errorf("an orphan labelled app=db woke %v, want the ReplicaSet that may adopt it", got)
	}
	h.OnDelete(podOf("stray", nil, map[string]string{"app": "db"}))
	if got := drain(q); len(got) != 0 {
		t.Errorf("an orphan's deletion woke %v", got)
	}

	old := rsNamed("web", "u-web-old", nil) // the web of before, deleted and made again
	h.OnAdd(podOf("web-old", old, nil))
	if got := drain(q); len(got) != 0 {
		t.Errorf("a pod of a replaced owner woke %v", got)
	}

	owned := podOf("web-2", web, map[string]string{"app": "web"})
	released := podOf("web-2", nil, map[string]string{"app": "other"})
	h.OnUpdate(owned, released)
	if got := drain(q); !slices.Equal(got, []string{"default/web"}) {
		t.Errorf("a released pod woke %v, want its old owner", got)
	}

	other := podOf("x", web, nil)
	other.OwnerReferences[0].Kind = "DaemonSet"
	h.OnAdd(other)
	if got := drain(q); len(got) != 0 {
		t.Errorf("a pod controlled by a DaemonSet woke %v", got)
	}
}

// The one claim: matching orphans are adopted (with a controller
// reference that blocks foreground deletion), owned objects that stopped
// matching are released, others' objects and terminating orphans are left
// alone, and the cached objects are never modified.
func TestClaimAdoptsAndReleases(t *testing.T) {
	c, api := controllertest.NewClient()
	web := rsNamed("web", "u-web", map[string]string{"app": "web"})
	other := rsNamed("other", "u-other", nil)
	orphan := podOf("orphan", nil, map[string]string{"app": "web"})
	mine := podOf("mine", web, map[string]string{"app": "web"})
	strayed := podOf("strayed", web, map[string]string{"app": "db"})
	theirs := podOf("theirs", other, map[string]string{"app": "web"})
	dying := podOf("dying", nil, map[string]string{"app": "web"})
	dying.DeletionTimestamp = &meta.Time{}
	sel, _ := selector.FromLabelSelector(web.Spec.Selector)
	got, err := controller.Claim(context.Background(), c, web, sel, []*core.Pod{orphan, mine, strayed, theirs, dying}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range got {
		names = append(names, p.Name)
	}
	slices.Sort(names)
	if !slices.Equal(names, []string{"mine", "orphan"}) {
		t.Errorf("claimed %v, want mine and orphan", names)
	}
	updates := map[string]*core.Pod{}
	for _, a := range api.Filter("update", "pods") {
		p := controllertest.Decode[core.Pod](a)
		updates[p.Name] = &p
	}
	if len(updates) != 2 || updates["orphan"] == nil || updates["strayed"] == nil {
		t.Fatalf("updates %v, want the orphan adopted and the strayed pod released", updates)
	}
	ref := meta.ControllerOf(updates["orphan"])
	if ref == nil || ref.UID != "u-web" || ref.Kind != "ReplicaSet" || ref.BlockOwnerDeletion == nil || !*ref.BlockOwnerDeletion {
		t.Errorf("adopted with %+v", updates["orphan"].OwnerReferences)
	}
	if len(updates["strayed"].OwnerReferences) != 0 {
		t.Errorf("released pod keeps %+v", updates["strayed"].OwnerReferences)
	}
	if len(orphan.OwnerReferences) != 0 || len(strayed.OwnerReferences) != 1 {
		t.Error("Claim modified the cached objects")
	}

	api.Reset()
	deleting := *web
	deleting.DeletionTimestamp = &meta.Time{}
	if _, err := controller.Claim(context.Background(), c, &deleting, sel, []*core.Pod{orphan, strayed}, nil); err != nil {
		t.Fatal(err)
	}
	if n := len(api.Filter("update", "pods")); n != 0 {
		t.Errorf("an owner being deleted adopted or released %d pods", n)
	}
}
