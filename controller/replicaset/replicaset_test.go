package replicaset

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kobune/kobune/api/apps"
	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/client"
	"github.com/kobune/kobune/controller"
	"github.com/kobune/kobune/controller/controllertest"
)

var now = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

func rs(replicas int32, mutate ...func(*apps.ReplicaSet)) *apps.ReplicaSet {
	r := &apps.ReplicaSet{ObjectMeta: meta.ObjectMeta{Name: "web", Namespace: "default", UID: "rs-uid", Generation: 2},
		Spec: apps.ReplicaSetSpec{Replicas: &replicas, Selector: &meta.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: core.PodTemplateSpec{ObjectMeta: meta.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec: core.PodSpec{Containers: []core.Container{{Name: "c", Image: "kobune.local/labapp:1.0"}}}}}}
	for _, m := range mutate {
		m(r)
	}
	return r
}

// pod is a pod of the ReplicaSet (owned: true) or an orphan, created age ago.
func pod(name string, owned bool, age time.Duration, mutate ...func(*core.Pod)) *core.Pod {
	p := &core.Pod{ObjectMeta: meta.ObjectMeta{Name: name, Namespace: "default", UID: "uid-" + name, Labels: map[string]string{"app": "web"},
		CreationTimestamp: meta.Time{Time: now.Add(-age)}}}
	if owned {
		yes := true
		p.OwnerReferences = []meta.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web", UID: "rs-uid", Controller: &yes}}
	}
	p.Spec.NodeName = "node-1"
	p.Status.Phase = core.PodRunning
	for _, m := range mutate {
		m(p)
	}
	return p
}

func ready(since time.Duration) func(*core.Pod) {
	return func(p *core.Pod) {
		p.Status.Conditions = []core.PodCondition{{Type: core.PodReady, Status: meta.ConditionTrue, LastTransitionTime: meta.Time{Time: now.Add(-since)}}}
	}
}

func fixture(t *testing.T, r *apps.ReplicaSet, pods ...*core.Pod) (*Controller, *controllertest.API) {
	t.Helper()
	c, api := controllertest.NewClient()
	inf := controller.NewInformers(c)
	inf.ReplicaSets.Seed(r)
	inf.Pods.Seed(pods...)
	rc := New(c, inf, client.NewAsyncRecorder(&client.Recorder{Client: c, Component: Name}, 100))
	rc.now = func() time.Time { return now }
	return rc, api
}

func TestScaleUpCreatesOwnedPodsOnce(t *testing.T) {
	rc, api := fixture(t, rs(3), pod("web-a", true, time.Hour, ready(time.Hour)))
	if _, err := rc.Reconcile(context.Background(), "default/web"); err != nil {
		t.Fatal(err)
	}
	creates := api.Filter("create", "pods")
	if len(creates) != 2 {
		t.Fatalf("%d creates, want 2 (3 wanted, 1 there)", len(creates))
	}
	p := controllertest.Decode[core.Pod](creates[0])
	ref := meta.ControllerOf(&p)
	if ref == nil || ref.UID != "rs-uid" || ref.Kind != "ReplicaSet" || ref.BlockOwnerDeletion == nil || !*ref.BlockOwnerDeletion {
		t.Errorf("owner reference %+v", p.OwnerReferences)
	}
	if p.GenerateName != "web-" || p.Labels["app"] != "web" || p.Spec.Containers[0].Image != "kobune.local/labapp:1.0" {
		t.Errorf("pod from template: %+v", p)
	}
	// The creates are not in the cache yet (a slow watch): a second pass
	// must not create them again.
	api.Reset()
	if _, err := rc.Reconcile(context.Background(), "default/web"); err != nil {
		t.Fatal(err)
	}
	if n := len(api.Filter("create", "pods")); n != 0 {
		t.Errorf("second pass before the watch caught up created %d more pods", n)
	}
	// Once observed, the count is trusted again.
	rc.exp.Observed("default/web", true)
	rc.exp.Observed("default/web", true)
	if !rc.exp.Satisfied("default/web") {
		t.Error("expectations not satisfied after both creates were observed")
	}
}

// TestCreateLandingMidPassIsNotMadeAgain: the last awaited create shows
// up in the cache while a pass is reading its pods (here: while it adopts
// an orphan). The pass must judge by the expectations as they were before
// it read the pods, or it misses that pod and creates it a second time
// (the pod count then briefly exceeded replicas + maxSurge in
// TestRolloutsInQuickSuccession).
func TestCreateLandingMidPassIsNotMadeAgain(t *testing.T) {
	rc, api := fixture(t, rs(4), pod("web-a", true, time.Hour), pod("web-b", true, time.Hour), pod("orphan", false, time.Hour))
	rc.exp.Expect("default/web", 1, 0) // web-c was created by the last pass and is not in the cache yet
	api.OnWrite = func(a controllertest.Action) {
		if a.Verb == "update" && a.Name == "orphan" {
			rc.pods.Seed(pod("web-c", true, 0)) // its ADDED event lands now
			rc.exp.Observed("default/web", true)
		}
	}
	if _, err := rc.Reconcile(context.Background(), "default/web"); err != nil {
		t.Fatal(err)
	}
	if len(api.Filter("update", "pods")) != 1 {
		t.Fatalf("the orphan was not adopted: %v", api.Actions())
	}
	if n := len(api.Filter("create", "pods")); n != 0 {
		t.Errorf("%d pods created: web-a, web-b, web-c and the adopted orphan already make the 4 replicas", n)
	}
}

func TestScaleDownDeletesTheLeastValuablePods(t *testing.T) {
	pods := []*core.Pod{
		pod("old-ready", true, 3*time.Hour, ready(3*time.Hour)),
		pod("new-ready", true, time.Hour, ready(time.Hour)),
		pod("not-ready", true, 2*time.Hour),
		pod("unscheduled", true, 4*time.Hour, func(p *core.Pod) { p.Spec.NodeName = ""; p.Status.Phase = core.PodPending }),
		pod("finished", true, 5*time.Hour, func(p *core.Pod) { p.Status.Phase = core.PodSucceeded }),
	}
	rc, api := fixture(t, rs(1), pods...)
	if _, err := rc.Reconcile(context.Background(), "default/web"); err != nil {
		t.Fatal(err)
	}
	var deleted []string
	for _, a := range api.Filter("delete", "pods") {
		deleted = append(deleted, a.Name)
	}
	want := []string{"unscheduled", "not-ready", "new-ready"}
	if len(deleted) != len(want) {
		t.Fatalf("deleted %v, want %v", deleted, want)
	}
	for i := range want {
		if deleted[i] != want[i] {
			t.Fatalf("deleted %v, want %v (finished pods do not count; old-ready is kept)", deleted, want)
		}
	}
}

func TestAdoptsOrphansAndReleasesMismatches(t *testing.T) {
	orphan := pod("orphan", false, time.Hour)
	stray := pod("stray", true, time.Hour, func(p *core.Pod) { p.Labels = map[string]string{"app": "other"} })
	otherOwner := pod("theirs", false, time.Hour, func(p *core.Pod) {
		yes := true
		p.OwnerReferences = []meta.OwnerReference{{Kind: "ReplicaSet", Name: "x", UID: "other", Controller: &yes}}
	})
	rc, api := fixture(t, rs(2), orphan, stray, otherOwner, pod("mine", true, time.Hour))
	if _, err := rc.Reconcile(context.Background(), "default/web"); err != nil {
		t.Fatal(err)
	}
	updates := api.Filter("update", "pods")
	if len(updates) != 2 {
		t.Fatalf("updates %v, want adopting orphan and releasing stray", updates)
	}
	for _, u := range updates {
		p := controllertest.Decode[core.Pod](u)
		switch p.Name {
		case "orphan":
			if ref := meta.ControllerOf(&p); ref == nil || ref.UID != "rs-uid" {
				t.Errorf("orphan not adopted: %+v", p.OwnerReferences)
			}
		case "stray":
			if len(p.OwnerReferences) != 0 {
				t.Errorf("stray not released: %+v", p.OwnerReferences)
			}
		default:
			t.Errorf("unexpected update of %s", p.Name)
		}
	}
	if n := len(api.Filter("create", "pods")) + len(api.Filter("delete", "pods")); n != 0 {
		t.Errorf("%d creates/deletes: mine + the adopted orphan make 2", n)
	}
}

func TestStatusAndMinReadySeconds(t *testing.T) {
	r := rs(3, func(r *apps.ReplicaSet) { r.Spec.MinReadySeconds = 10 })
	rc, api := fixture(t, r, pod("a", true, time.Hour, ready(time.Minute)), pod("b", true, time.Hour, ready(4*time.Second)), pod("c", true, time.Hour))
	res, err := rc.Reconcile(context.Background(), "default/web")
	if err != nil {
		t.Fatal(err)
	}
	st := api.Filter("updatestatus", "replicasets")
	if len(st) != 1 {
		t.Fatalf("%d status writes", len(st))
	}
	got := controllertest.Decode[apps.ReplicaSet](st[0]).Status
	if got.Replicas != 3 || got.ReadyReplicas != 2 || got.AvailableReplicas != 1 || got.ObservedGeneration != 2 || got.FullyLabeledReplicas != 3 {
		t.Errorf("status %+v", got)
	}
	if res.RequeueAfter != 6*time.Second {
		t.Errorf("requeue after %v, want 6s (b becomes available then)", res.RequeueAfter)
	}
}

func TestDeletingReplicaSetCreatesNothing(t *testing.T) {
	rc, api := fixture(t, rs(3, func(r *apps.ReplicaSet) { ts := meta.Time{Time: now}; r.DeletionTimestamp = &ts }))
	if _, err := rc.Reconcile(context.Background(), "default/web"); err != nil {
		t.Fatal(err)
	}
	if n := len(api.Filter("create", "pods")); n != 0 {
		t.Errorf("%d pods created for a ReplicaSet being deleted", n)
	}
}

// TestReplicaFailureCondition: a refused create sets ReplicaFailure with
// the API server's words (not the wrapping), the first failure's kept
// while failures last; a delete refused is FailedDelete; a pass without
// error removes it and keeps the other conditions.
func TestReplicaFailureCondition(t *testing.T) {
	quota := fmt.Errorf("create pod: %w", status.Error(codes.PermissionDenied, `pods "web-x" is forbidden: exceeded quota: q, requested: pods=1, used: pods=2, limited: pods=2`))
	other := apps.Condition{Type: "Other", Status: meta.ConditionTrue}
	failed := func(reason, msg string) apps.Condition {
		return apps.Condition{Type: apps.ConditionReplicaFailure, Status: meta.ConditionTrue, Reason: reason, Message: msg, LastTransitionTime: meta.Time{Time: now}}
	}
	first := failed(apps.ReasonFailedCreate, `pods "web-x" is forbidden: exceeded quota: q, requested: pods=1, used: pods=2, limited: pods=2`)
	tests := []struct {
		name   string
		conds  []apps.Condition
		active int
		err    error
		want   []apps.Condition
	}{
		{"create refused", []apps.Condition{other}, 2, quota, []apps.Condition{other, first}},
		{"still refused: the first message stays", []apps.Condition{failed(apps.ReasonFailedCreate, "earlier")}, 2, quota, []apps.Condition{failed(apps.ReasonFailedCreate, "earlier")}},
		{"delete refused", nil, 5, errors.New("delete pod web-y: boom"), []apps.Condition{failed(apps.ReasonFailedDelete, "delete pod web-y: boom")}},
		{"a pass without error removes it", []apps.Condition{first, other}, 3, nil, []apps.Condition{other}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := replicaFailure(rs(3, func(r *apps.ReplicaSet) { r.Status.Conditions = tt.conds }), tt.active, tt.err, now)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("conditions\n got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}
