package controller_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/kobune/kobune/api/apps"
	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/controller"
	"github.com/kobune/kobune/controller/controllertest"
)

func historyFixture(revs ...*apps.ControllerRevision) (controller.History, *controllertest.API) {
	c, api := controllertest.NewClient()
	inf := controller.NewInformers(c)
	inf.Revisions.Seed(revs...)
	return controller.History{Client: c, Revisions: inf.Revisions}, api
}

var historySet = &apps.StatefulSet{ObjectMeta: meta.ObjectMeta{Name: "db", Namespace: "default", UID: "set-uid",
	Annotations: map[string]string{apps.ChangeCauseAnnotation: "image 2"}}}

func template(image string) *core.PodTemplateSpec {
	return &core.PodTemplateSpec{ObjectMeta: meta.ObjectMeta{Labels: map[string]string{"app": "db"}},
		Spec: core.PodSpec{Containers: []core.Container{{Name: "c", Image: image}}}}
}

func revisionOf(t *testing.T, image string, n int64) *apps.ControllerRevision {
	t.Helper()
	tpl := template(image)
	data, err := controller.RevisionData(tpl)
	if err != nil {
		t.Fatal(err)
	}
	yes := true
	return &apps.ControllerRevision{ObjectMeta: meta.ObjectMeta{Name: controller.RevisionName("db", controller.TemplateHash(tpl)), Namespace: "default",
		UID: fmt.Sprint("rev-", n), OwnerReferences: []meta.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "db", UID: "set-uid", Controller: &yes}}},
		Data: data, Revision: n}
}

func sync(t *testing.T, h controller.History, image string, live ...string) string {
	t.Helper()
	tpl := template(image)
	keep := map[string]bool{}
	for _, l := range live {
		keep[l] = true
	}
	name, err := h.Sync(context.Background(), historySet, tpl, controller.TemplateHash(tpl), nil, keep)
	if err != nil {
		t.Fatal(err)
	}
	return name
}

// TestHistoryKeepsEachTemplateOnce: a new template is a new revision,
// numbered after the highest, owned by the set, carrying its template's
// labels and hash and the set's annotations (the change cause), with data
// that puts the template back as a strategic merge patch.
func TestHistoryKeepsEachTemplateOnce(t *testing.T) {
	h, api := historyFixture(revisionOf(t, "v1", 1))
	name := sync(t, h, "v2")
	created := api.Filter("create", "controllerrevisions")
	if len(created) != 1 || created[0].Name != name {
		t.Fatalf("created %v, want one revision %s", created, name)
	}
	var r apps.ControllerRevision
	if err := json.Unmarshal(created[0].Object, &r); err != nil {
		t.Fatal(err)
	}
	ref := meta.ControllerOf(&r)
	if r.Revision != 2 || ref == nil || ref.UID != "set-uid" || ref.Kind != "StatefulSet" || r.Labels["app"] != "db" ||
		r.Labels[controller.HashLabel] == "" || r.Annotations[apps.ChangeCauseAnnotation] != "image 2" {
		t.Errorf("revision %+v", r)
	}
	var data struct {
		Spec struct {
			Template map[string]any `json:"template"`
		} `json:"spec"`
	}
	if err := json.Unmarshal(r.Data, &data); err != nil || data.Spec.Template["$patch"] != "replace" || data.Spec.Template["spec"] == nil {
		t.Errorf("data %s: want {spec: {template: {..., $patch: replace}}} (%v)", r.Data, err)
	}

	// The same template again: nothing written.
	h, api = historyFixture(revisionOf(t, "v1", 1), revisionOf(t, "v2", 2))
	sync(t, h, "v2")
	if w := api.Actions(); len(w) != 0 {
		t.Errorf("an unchanged template wrote %v", w)
	}
}

// TestHistoryRenumbersARollback: going back to an earlier template makes
// that revision the newest (as Kubernetes does), with no second copy.
func TestHistoryRenumbersARollback(t *testing.T) {
	h, api := historyFixture(revisionOf(t, "v1", 1), revisionOf(t, "v2", 2))
	sync(t, h, "v1")
	if c := api.Filter("create", "controllerrevisions"); len(c) != 0 {
		t.Errorf("a rollback created %v", c)
	}
	u := api.Filter("update", "controllerrevisions")
	var r apps.ControllerRevision
	if len(u) != 1 || json.Unmarshal(u[0].Object, &r) != nil || r.Revision != 3 || r.Name != revisionOf(t, "v1", 0).Name {
		t.Errorf("updates %v: want %s renumbered 3", u, revisionOf(t, "v1", 0).Name)
	}
}

// TestHistoryTrimsBeyondTheLimit: with 13 old revisions, one still run by
// a pod, and the default limit of 10, the two oldest that are not live
// go.
func TestHistoryTrimsBeyondTheLimit(t *testing.T) {
	var revs []*apps.ControllerRevision
	for i := 1; i <= 13; i++ {
		revs = append(revs, revisionOf(t, fmt.Sprint("v", i), int64(i)))
	}
	h, api := historyFixture(revs...)
	sync(t, h, "v14", revs[0].Name) // v1 is still run by a pod
	var deleted []string
	for _, a := range api.Filter("delete", "controllerrevisions") {
		deleted = append(deleted, a.Name)
	}
	if len(deleted) != 2 || deleted[0] != revs[1].Name || deleted[1] != revs[2].Name {
		t.Errorf("deleted %v, want %s and %s (v1 is live)", deleted, revs[1].Name, revs[2].Name)
	}
}
