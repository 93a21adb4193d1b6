package statefulset

import (
	"context"
	"testing"

	"github.com/kobune/kobune/api/apps"
	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/client"
	"github.com/kobune/kobune/controller"
	"github.com/kobune/kobune/controller/controllertest"
)

func set(replicas int32, policy string) *apps.StatefulSet {
	return &apps.StatefulSet{ObjectMeta: meta.ObjectMeta{Name: "db", Namespace: "default", UID: "set-uid"},
		Spec: apps.StatefulSetSpec{Replicas: &replicas, PodManagementPolicy: policy, ServiceName: "db",
			Template: core.PodTemplateSpec{ObjectMeta: meta.ObjectMeta{Labels: map[string]string{"app": "db"}}, Spec: core.PodSpec{Containers: []core.Container{{Name: "c", Image: "i"}}}}}}
}

func member(s *apps.StatefulSet, name string, ready bool) *core.Pod {
	yes := true
	p := &core.Pod{ObjectMeta: meta.ObjectMeta{Name: name, Namespace: "default", UID: "uid-" + name, Labels: map[string]string{RevisionLabel: controller.TemplateHash(&s.Spec.Template)},
		OwnerReferences: []meta.OwnerReference{{Kind: "StatefulSet", Name: "db", UID: "set-uid", Controller: &yes}}}}
	p.Status.Phase = core.PodRunning
	if ready {
		p.Status.Conditions = []core.PodCondition{{Type: core.PodReady, Status: meta.ConditionTrue}}
	}
	return p
}

func run(t *testing.T, s *apps.StatefulSet, pods ...*core.Pod) (created, deleted []string) {
	t.Helper()
	c, api := controllertest.NewClient()
	inf := controller.NewInformers(c)
	inf.StatefulSets.Seed(s)
	inf.Pods.Seed(pods...)
	sc := New(c, inf, client.NewAsyncRecorder(&client.Recorder{Client: c, Component: Name}, 100))
	if _, err := sc.Reconcile(context.Background(), "default/db"); err != nil {
		t.Fatal(err)
	}
	for _, a := range api.Filter("create", "pods") {
		created = append(created, a.Name)
	}
	for _, a := range api.Filter("delete", "pods") {
		deleted = append(deleted, a.Name)
	}
	return created, deleted
}

func TestOrderedReady(t *testing.T) {
	s := set(3, "")
	if c, _ := run(t, s); len(c) != 1 || c[0] != "db-0" {
		t.Errorf("from nothing: created %v, want [db-0]", c)
	}
	if c, _ := run(t, s, member(s, "db-0", false)); len(c) != 0 {
		t.Errorf("db-0 not ready: created %v, want nothing", c)
	}
	if c, _ := run(t, s, member(s, "db-0", true)); len(c) != 1 || c[0] != "db-1" {
		t.Errorf("db-0 ready: created %v, want [db-1]", c)
	}
	if c, _ := run(t, s, member(s, "db-0", true), member(s, "db-2", true)); len(c) != 1 || c[0] != "db-1" {
		t.Errorf("a hole at db-1: created %v, want [db-1]", c)
	}
	if _, d := run(t, set(1, ""), member(s, "db-0", true), member(s, "db-1", true), member(s, "db-2", true)); len(d) != 1 || d[0] != "db-2" {
		t.Errorf("scale 3 → 1: deleted %v, want [db-2] first", d)
	}
	// Scaling down halts on unhealthy pods: db-2 does not go while db-1
	// (below it) is not ready; the lowest unready pod itself may go.
	if _, d := run(t, set(0, ""), member(s, "db-0", false), member(s, "db-1", false), member(s, "db-2", false)); len(d) != 0 {
		t.Errorf("scale 3 → 0, none ready: deleted %v, want nothing until they are", d)
	}
	if _, d := run(t, set(1, ""), member(s, "db-0", true), member(s, "db-1", true), member(s, "db-2", false)); len(d) != 1 || d[0] != "db-2" {
		t.Errorf("scale 3 → 1, db-2 the only unready one: deleted %v, want [db-2]", d)
	}
}

func TestParallel(t *testing.T) {
	s := set(3, "Parallel")
	if c, _ := run(t, s); len(c) != 3 {
		t.Errorf("created %v, want all three at once", c)
	}
	if _, d := run(t, set(1, "Parallel"), member(s, "db-0", true), member(s, "db-1", false), member(s, "db-2", true)); len(d) != 2 {
		t.Errorf("scale down deleted %v, want db-1 and db-2 at once", d)
	}
}
