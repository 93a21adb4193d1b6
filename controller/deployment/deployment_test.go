package deployment

import (
	"context"
	"testing"
	"time"

	"github.com/kobune/kobune/api/apps"
	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/client"
	"github.com/kobune/kobune/controller"
	"github.com/kobune/kobune/controller/controllertest"
)

var now = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

func deploy(replicas int32, image string, mutate ...func(*apps.Deployment)) *apps.Deployment {
	d := &apps.Deployment{ObjectMeta: meta.ObjectMeta{Name: "web", Namespace: "default", UID: "d-uid", Generation: 1},
		Spec: apps.DeploymentSpec{Replicas: &replicas, Selector: &meta.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: core.PodTemplateSpec{ObjectMeta: meta.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec: core.PodSpec{Containers: []core.Container{{Name: "c", Image: image}}}}}}
	for _, m := range mutate {
		m(d)
	}
	return d
}

// ownedRS is a ReplicaSet of the Deployment for the given image, as the
// controller would have made it, with replicas and available pods.
func ownedRS(d *apps.Deployment, image string, revision string, spec, available int32, age time.Duration) *apps.ReplicaSet {
	t := d.Spec.Template
	t.Spec.Containers = []core.Container{{Name: "c", Image: image}}
	hash := TemplateHash(&t, 0)
	t.Labels = map[string]string{"app": "web", apps.PodTemplateHashLabel: hash}
	yes := true
	return &apps.ReplicaSet{
		ObjectMeta: meta.ObjectMeta{Name: "web-" + hash, Namespace: "default", UID: "rs-" + image, Labels: t.Labels,
			Annotations:       map[string]string{apps.RevisionAnnotation: revision},
			CreationTimestamp: meta.Time{Time: now.Add(-age)},
			OwnerReferences:   []meta.OwnerReference{{Kind: "Deployment", Name: "web", UID: "d-uid", Controller: &yes}}},
		Spec:   apps.ReplicaSetSpec{Replicas: &spec, Selector: &meta.LabelSelector{MatchLabels: t.Labels}, Template: t},
		Status: apps.ReplicaSetStatus{Replicas: spec, ReadyReplicas: available, AvailableReplicas: available},
	}
}

func fixture(d *apps.Deployment, rss ...*apps.ReplicaSet) (*Controller, *controllertest.API) {
	c, api := controllertest.NewClient()
	inf := controller.NewInformers(c)
	inf.Deployments.Seed(d)
	inf.ReplicaSets.Seed(rss...)
	inf.Pods.Seed()
	dc := New(c, inf, client.NewAsyncRecorder(&client.Recorder{Client: c, Component: Name}, 100))
	dc.now = func() time.Time { return now }
	return dc, api
}

// scaledTo returns the replicas each ReplicaSet was last scaled to.
func scaledTo(api *controllertest.API) map[string]int32 {
	out := map[string]int32{}
	for _, a := range api.Actions() {
		if a.Resource == "replicasets" && (a.Verb == "update" || a.Verb == "create") {
			rs := controllertest.Decode[apps.ReplicaSet](a)
			out[rs.Name] = *rs.Spec.Replicas
		}
	}
	return out
}

func TestNewDeploymentCreatesRevisionOne(t *testing.T) {
	d := deploy(4, "labapp:1.0")
	dc, api := fixture(d)
	if _, err := dc.Reconcile(context.Background(), "default/web"); err != nil {
		t.Fatal(err)
	}
	creates := api.Filter("create", "replicasets")
	if len(creates) != 1 {
		t.Fatalf("%d ReplicaSets created", len(creates))
	}
	rs := controllertest.Decode[apps.ReplicaSet](creates[0])
	hash := TemplateHash(&d.Spec.Template, 0)
	if rs.Name != "web-"+hash || rs.Labels[apps.PodTemplateHashLabel] != hash || rs.Spec.Selector.MatchLabels[apps.PodTemplateHashLabel] != hash ||
		rs.Spec.Template.Labels[apps.PodTemplateHashLabel] != hash || rs.Annotations[apps.RevisionAnnotation] != "1" {
		t.Errorf("new ReplicaSet %+v", rs.ObjectMeta)
	}
	if got := scaledTo(api)[rs.Name]; got != 4 {
		t.Errorf("scaled to %d, want 4 (no old pods: everything at once)", got)
	}
}

func TestRollingUpdateStepsWithinSurgeAndUnavailable(t *testing.T) {
	tests := []struct {
		name                 string
		surge, unavailable   meta.IntOrString
		wantNew, wantOld     int32
		newAvailable, newRep int32
	}{
		// 4 replicas, 25%/25%: 1 surge, 1 unavailable.
		{"first step", meta.FromString("25%"), meta.FromString("25%"), 1, 3, 0, 0},
		// surge 0, unavailable 2: old goes down first.
		{"no surge", meta.FromInt(0), meta.FromInt(2), 0, 2, 0, 0},
		// old 3 and new 2 (none available yet) fill 4 + 1 surge; with 2
		// new pods unavailable, no old one may go.
		{"new pods not yet available", meta.FromInt(1), meta.FromInt(1), 2, 3, 0, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := deploy(4, "labapp:2.0", func(d *apps.Deployment) {
				d.Spec.Strategy.RollingUpdate = &apps.RollingUpdateDeployment{MaxSurge: &tt.surge, MaxUnavailable: &tt.unavailable}
			})
			oldRS := ownedRS(d, "labapp:1.0", "1", 4-tt.newRep+tt.newRep/2, 4-tt.newRep+tt.newRep/2, time.Hour)
			rss := []*apps.ReplicaSet{oldRS}
			if tt.newRep > 0 {
				rss = append(rss, ownedRS(d, "labapp:2.0", "2", tt.newRep, tt.newAvailable, time.Minute))
			}
			dc, api := fixture(d, rss...)
			if _, err := dc.Reconcile(context.Background(), "default/web"); err != nil {
				t.Fatal(err)
			}
			got := scaledTo(api)
			newName := "web-" + TemplateHash(&d.Spec.Template, 0)
			newGot, ok := got[newName]
			if !ok && tt.newRep > 0 {
				newGot = tt.newRep
			}
			oldGot, ok := got[oldRS.Name]
			if !ok {
				oldGot = *oldRS.Spec.Replicas
			}
			if newGot != tt.wantNew || oldGot != tt.wantOld {
				t.Errorf("new %d old %d, want new %d old %d (writes %v)", newGot, oldGot, tt.wantNew, tt.wantOld, got)
			}
		})
	}
}

func TestRecreateWaitsForOldPods(t *testing.T) {
	d := deploy(3, "labapp:2.0", func(d *apps.Deployment) { d.Spec.Strategy.Type = apps.RecreateDeploymentStrategyType })
	oldRS := ownedRS(d, "labapp:1.0", "1", 3, 3, time.Hour)
	dc, api := fixture(d, oldRS)
	oldPod := &core.Pod{ObjectMeta: meta.ObjectMeta{Name: "old-pod", Namespace: "default", OwnerReferences: []meta.OwnerReference{{Kind: "ReplicaSet", Name: oldRS.Name, UID: oldRS.UID}}}}
	oldPod.Status.Phase = core.PodRunning
	dc.pods.Seed(oldPod)
	if _, err := dc.Reconcile(context.Background(), "default/web"); err != nil {
		t.Fatal(err)
	}
	got := scaledTo(api)
	newName := "web-" + TemplateHash(&d.Spec.Template, 0)
	if got[oldRS.Name] != 0 || got[newName] != 0 {
		t.Errorf("scaled %v: old must go to 0 and new stay at 0 while old pods exist", got)
	}
}

func TestRollbackMakesOldReplicaSetNewWithNextRevision(t *testing.T) {
	d := deploy(2, "labapp:1.0") // the template of revision 1 is back
	rev1 := ownedRS(d, "labapp:1.0", "1", 0, 0, 2*time.Hour)
	rev2 := ownedRS(d, "labapp:2.0", "2", 2, 2, time.Hour)
	dc, api := fixture(d, rev1, rev2)
	if _, err := dc.Reconcile(context.Background(), "default/web"); err != nil {
		t.Fatal(err)
	}
	if n := len(api.Filter("create", "replicasets")); n != 0 {
		t.Errorf("%d ReplicaSets created; the old one should be reused", n)
	}
	var revised bool
	for _, a := range api.Filter("update", "replicasets") {
		rs := controllertest.Decode[apps.ReplicaSet](a)
		if rs.Name == rev1.Name && rs.Annotations[apps.RevisionAnnotation] == "3" {
			revised = true
		}
	}
	if !revised {
		t.Errorf("revision 1's ReplicaSet was not given revision 3: %v", api.Actions())
	}
}

func TestProgressDeadline(t *testing.T) {
	deadline := int32(60)
	d := deploy(2, "labapp:2.0", func(d *apps.Deployment) {
		d.Spec.ProgressDeadlineSeconds = &deadline
		d.Status = apps.DeploymentStatus{ObservedGeneration: 1, Replicas: 3, UpdatedReplicas: 1, ReadyReplicas: 2, AvailableReplicas: 2,
			Conditions: []apps.Condition{{Type: apps.ConditionProgressing, Status: meta.ConditionTrue, Reason: apps.ReasonRSUpdated,
				LastUpdateTime: meta.Time{Time: now.Add(-2 * time.Minute)}}}}
	})
	// The new pod never becomes available; the old ones stay.
	dc, api := fixture(d, ownedRS(d, "labapp:1.0", "1", 2, 2, time.Hour), ownedRS(d, "labapp:2.0", "2", 1, 0, 3*time.Minute))
	if _, err := dc.Reconcile(context.Background(), "default/web"); err != nil {
		t.Fatal(err)
	}
	st := api.Filter("updatestatus", "deployments")
	if len(st) != 1 {
		t.Fatalf("%d status writes", len(st))
	}
	c := findCondition(controllertest.Decode[apps.Deployment](st[0]).Status.Conditions, apps.ConditionProgressing)
	if c == nil || c.Status != meta.ConditionFalse || c.Reason != apps.ReasonDeadlineExceeded {
		t.Errorf("Progressing condition %+v, want False ProgressDeadlineExceeded", c)
	}
}

// TestStaleStatusNeverScalesAnOldReplicaSetUp: an old ReplicaSet just
// scaled down to 3 still reports 5 available (its status is from before);
// the clean-up of unavailable replicas must not read that as −2 and scale
// it back up (what let old ReplicaSets create pods mid-rollout).
func TestStaleStatusNeverScalesAnOldReplicaSetUp(t *testing.T) {
	d := deploy(6, "labapp:3.0", func(d *apps.Deployment) {
		two, one := meta.FromInt(2), meta.FromInt(1)
		d.Spec.Strategy.RollingUpdate = &apps.RollingUpdateDeployment{MaxSurge: &two, MaxUnavailable: &one}
	})
	old := ownedRS(d, "labapp:2.0", "2", 3, 5, time.Hour)
	newer := ownedRS(d, "labapp:3.0", "3", 3, 3, time.Minute)
	dc, api := fixture(d, old, newer)
	if _, err := dc.Reconcile(context.Background(), "default/web"); err != nil {
		t.Fatal(err)
	}
	for _, a := range api.Filter("update", "replicasets") {
		if rs := controllertest.Decode[apps.ReplicaSet](a); rs.Name == old.Name && *rs.Spec.Replicas > 3 {
			t.Errorf("old ReplicaSet scaled up to %d on the way", *rs.Spec.Replicas)
		}
	}
}

// TestPassWaitsForItsOwnWrites: a pass creates the new ReplicaSet and
// scales it up; the template changes again before the ReplicaSet cache
// shows those writes. The next pass must not count from that cache (it
// would not see the ReplicaSet it made, and would surge past maxSurge
// with a third one); it waits until the writes are observed.
func TestPassWaitsForItsOwnWrites(t *testing.T) {
	surge := func(d *apps.Deployment) {
		two, one := meta.FromInt(2), meta.FromInt(1)
		d.Spec.Strategy.RollingUpdate = &apps.RollingUpdateDeployment{MaxSurge: &two, MaxUnavailable: &one}
	}
	d := deploy(6, "labapp:2.0", surge)
	old := ownedRS(d, "labapp:1.0", "1", 6, 6, time.Hour)
	dc, api := fixture(d, old)
	if _, err := dc.Reconcile(context.Background(), "default/web"); err != nil {
		t.Fatal(err)
	}
	first := scaledTo(api)
	v2 := "web-" + TemplateHash(&d.Spec.Template, 0)
	if first[v2] != 2 || first[old.Name] != 5 {
		t.Fatalf("first pass scaled %v, want %s to 2 and %s to 5", first, v2, old.Name)
	}
	written := api.Actions()
	api.Reset()
	d3 := deploy(6, "labapp:3.0", surge)
	d3.Generation = 2
	dc.deploys.Seed(d3)
	if _, err := dc.Reconcile(context.Background(), "default/web"); err != nil {
		t.Fatal(err)
	}
	if a := api.Actions(); len(a) != 0 {
		t.Fatalf("a pass before the cache showed the last writes wrote %d objects (first %s %s)", len(a), a[0].Verb, a[0].Name)
	}
	// The watch catches up.
	for _, a := range written {
		if a.Resource == "replicasets" {
			rs := controllertest.Decode[apps.ReplicaSet](a)
			dc.rss.Seed(&rs)
			dc.writes.Observed(&rs, false)
		}
	}
	if _, err := dc.Reconcile(context.Background(), "default/web"); err != nil {
		t.Fatal(err)
	}
	v3 := "web-" + TemplateHash(&d3.Spec.Template, 0)
	if got := scaledTo(api); got[v3] != 1 {
		t.Errorf("with %s at 2 and %s at 5, %s was scaled to %d, want 1 (8 = replicas + maxSurge)", v2, old.Name, v3, got[v3])
	}
}

// TestScalingMidRolloutIsProportional: a Deployment of 10 (maxSurge 3,
// maxUnavailable 2) whose rollout is stuck — 8 old pods, 5 new ones that
// never become available, both sized for 10 with max-replicas 13 — is
// scaled to 30: the 20 added share by size, 8 × 33/13 → 20 old and
// 5 × 33/13 → 13 new (Kubernetes' conformance test "deployment should
// support proportional scaling"), and nothing else moves that pass.
// Scaled back to 10, they shrink in proportion again.
func TestScalingMidRolloutIsProportional(t *testing.T) {
	surge, unavailable := meta.FromInt(3), meta.FromInt(2)
	d := deploy(30, "labapp:bad", func(d *apps.Deployment) {
		d.Spec.Strategy.RollingUpdate = &apps.RollingUpdateDeployment{MaxSurge: &surge, MaxUnavailable: &unavailable}
	})
	sized := func(rs *apps.ReplicaSet, desired, max string) *apps.ReplicaSet {
		rs.Annotations[apps.DesiredReplicasAnnotation], rs.Annotations[apps.MaxReplicasAnnotation] = desired, max
		return rs
	}
	oldRS := sized(ownedRS(d, "labapp:1.0", "1", 8, 8, time.Hour), "10", "13")
	newRS := sized(ownedRS(d, "labapp:bad", "2", 5, 0, time.Minute), "10", "13")
	dc, api := fixture(d, oldRS, newRS)
	if _, err := dc.Reconcile(context.Background(), "default/web"); err != nil {
		t.Fatal(err)
	}
	if got := scaledTo(api); got[oldRS.Name] != 20 || got[newRS.Name] != 13 || len(got) != 2 {
		t.Fatalf("scaled to %v; want %s 20 and %s 13", got, oldRS.Name, newRS.Name)
	}
	for _, a := range api.Filter("update", "replicasets") {
		if rs := controllertest.Decode[apps.ReplicaSet](a); rs.Annotations[apps.DesiredReplicasAnnotation] != "30" || rs.Annotations[apps.MaxReplicasAnnotation] != "33" {
			t.Errorf("%s sized for %s (max %s), want 30 (max 33)", rs.Name, rs.Annotations[apps.DesiredReplicasAnnotation], rs.Annotations[apps.MaxReplicasAnnotation])
		}
	}

	// Back to 10 from 20 and 13 (sized for 30, max 33): 33 → 13 removes
	// 20, 20 × 13/33 → 8 and 13 × 13/33 → 5.
	ten := int32(10)
	d.Spec.Replicas = &ten
	oldRS = sized(ownedRS(d, "labapp:1.0", "1", 20, 20, time.Hour), "30", "33")
	newRS = sized(ownedRS(d, "labapp:bad", "2", 13, 0, time.Minute), "30", "33")
	dc, api = fixture(d, oldRS, newRS)
	if _, err := dc.Reconcile(context.Background(), "default/web"); err != nil {
		t.Fatal(err)
	}
	if got := scaledTo(api); got[oldRS.Name] != 8 || got[newRS.Name] != 5 {
		t.Fatalf("scaled back to %v; want %s 8 and %s 5", got, oldRS.Name, newRS.Name)
	}
}
