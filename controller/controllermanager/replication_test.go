package controllermanager_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/api/resource"
	"github.com/kobune/kobune/api/scheme"
	"github.com/kobune/kobune/client"
)

// TestReplicationControllers (issue #36; the conformance suite's
// ReplicationController, garbage collector and quota tests create them): a
// ReplicationController keeps its replicas as a ReplicaSet does — it
// adopts a matching orphan, owns its pods as ReplicationController v1,
// reports ready replicas, follows a scale down, and its pods go with it
// (background) or stay (orphan); a quota counts it.
func TestReplicationControllers(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := cluster(t, ctx, 1)
	rcs := client.For[*core.ReplicationController](c)
	pods := client.For[*core.Pod](c)
	if _, err := client.For[*core.ResourceQuota](c).Create(ctx, &core.ResourceQuota{ObjectMeta: meta.ObjectMeta{Name: "rcs", Namespace: "default"},
		Spec: core.ResourceQuotaSpec{Hard: resource.List{core.QuotaReplicationControllers: resource.MustParse("2")}}}); err != nil {
		t.Fatal(err)
	}
	qctx, qcancel := context.WithTimeout(ctx, 30*time.Second)
	defer qcancel()
	if _, err := client.WaitFor(qctx, client.For[*core.ResourceQuota](c), "default", "rcs", 0, func(q *core.ResourceQuota, _ bool) bool {
		_, counted := q.Status.Used[core.QuotaReplicationControllers]
		return counted
	}); err != nil {
		t.Fatalf("the quota's usage is never computed: %v", err)
	}
	orphan := &core.Pod{ObjectMeta: meta.ObjectMeta{Name: "orphan", Namespace: "default", Labels: map[string]string{"app": "legacy"}},
		Spec: core.PodSpec{Containers: []core.Container{{Name: "app", Image: "kobune.local/labapp:1.0"}}}}
	if _, err := pods.Create(ctx, orphan); err != nil {
		t.Fatal(err)
	}
	// Adoption needs the orphan in the controller's cache before the
	// ReplicationController's first sync, or it makes 3 pods and then
	// deletes the orphan as the fourth (as Kubernetes' would). Waiting
	// until the scheduler bound it gives its creation the time to reach
	// the controller's watch too (once, creating the two back to back
	// lost that race).
	octx, ocancel := context.WithTimeout(ctx, 30*time.Second)
	defer ocancel()
	if _, err := client.WaitFor(octx, pods, "default", "orphan", 0, func(p *core.Pod, _ bool) bool { return p.Spec.NodeName != "" }); err != nil {
		t.Fatalf("the orphan is never scheduled: %v", err)
	}
	newRC := func(name string, replicas int32) *core.ReplicationController {
		return &core.ReplicationController{ObjectMeta: meta.ObjectMeta{Name: name, Namespace: "default"},
			Spec: core.ReplicationControllerSpec{Replicas: &replicas, Template: &core.PodTemplateSpec{
				ObjectMeta: meta.ObjectMeta{Labels: map[string]string{"app": name}},
				Spec:       core.PodSpec{Containers: []core.Container{{Name: "app", Image: "kobune.local/labapp:1.0"}}}}}}
	}
	created, err := rcs.Create(ctx, newRC("legacy", 3))
	if err != nil {
		t.Fatal(err)
	}
	if created.Spec.Selector["app"] != "legacy" || created.Labels["app"] != "legacy" {
		t.Errorf("defaults: selector %v labels %v, want both from the template's labels", created.Spec.Selector, created.Labels)
	}
	wait := func(what string, cond func(*core.ReplicationController) bool) {
		t.Helper()
		wctx, wcancel := context.WithTimeout(ctx, 30*time.Second)
		defer wcancel()
		if _, err := client.WaitFor(wctx, rcs, "default", "legacy", 0, func(rc *core.ReplicationController, _ bool) bool { return cond(rc) }); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	wait("3 ready replicas", func(rc *core.ReplicationController) bool {
		return rc.Status.Replicas == 3 && rc.Status.ReadyReplicas == 3 && rc.Status.ObservedGeneration == rc.Generation
	})
	owned := activePods(t, ctx, c, "legacy")
	adopted := false
	for _, p := range owned {
		ref := meta.ControllerOf(p)
		if ref == nil || ref.Kind != "ReplicationController" || ref.APIVersion != "v1" || ref.UID != created.UID {
			t.Errorf("pod %s's controller %+v, want the ReplicationController", p.Name, ref)
		}
		adopted = adopted || p.Name == "orphan"
	}
	if len(owned) != 3 || !adopted {
		t.Errorf("%d pods, orphan adopted %v; want 3 with the orphan among them", len(owned), adopted)
	}
	retryUpdate(t, ctx, rcs, "default", "legacy", func(rc *core.ReplicationController) { one := int32(1); rc.Spec.Replicas = &one })
	wait("scaled down to 1", func(rc *core.ReplicationController) bool {
		return rc.Status.Replicas == 1 && rc.Status.ObservedGeneration == rc.Generation
	})
	if n := len(activePods(t, ctx, c, "legacy")); n != 1 {
		t.Errorf("%d pods after a scale down to 1", n)
	}

	// The quota counts them: 2 allowed, a third refused.
	if _, err := rcs.Create(ctx, newRC("second", 0)); err != nil {
		t.Fatal(err)
	}
	if _, err := rcs.Create(ctx, newRC("third", 0)); err == nil || !client.IsForbidden(err) {
		t.Errorf("a third ReplicationController under a quota of 2: %v, want forbidden (exceeded quota)", err)
	}

	// The conformance suite's "should not delete dependents that have both
	// valid owner and owner that's waiting for dependents to be deleted":
	// a pod of legacy that "second" owns too (a strategic merge patch adds
	// the reference, merged by uid) outlives legacy's foreground deletion,
	// owned by second alone.
	second, err := rcs.Get(ctx, "default", "second")
	if err != nil {
		t.Fatal(err)
	}
	shared := activePods(t, ctx, c, "legacy")[0]
	ref := fmt.Sprintf(`{"metadata":{"ownerReferences":[{"apiVersion":"v1","kind":"ReplicationController","name":"second","uid":"%s"}]}}`, second.UID)
	pk, _ := scheme.ByResource("pods")
	if _, err := c.Resource(pk).Patch(ctx, "default", shared.Name, client.StrategicMergePatch, []byte(ref), client.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	if patched, err := pods.Get(ctx, "default", shared.Name); err != nil || len(patched.OwnerReferences) != 2 {
		t.Fatalf("a strategic merge patch of ownerReferences: %v %+v; want both owners (merged by uid)", err, patched)
	}
	if err := rcs.Delete(ctx, "default", "legacy", client.DeleteOptions{PropagationPolicy: "Foreground"}); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if _, err := rcs.Get(ctx, "default", "legacy"); client.IsNotFound(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("legacy, deleted in the foreground, is still there after 30 s")
		}
	}
	kept, err := pods.Get(ctx, "default", shared.Name)
	if err != nil || kept.DeletionTimestamp != nil || len(kept.OwnerReferences) != 1 || kept.OwnerReferences[0].UID != second.UID {
		t.Fatalf("the pod second owns too: %v %+v; want it kept, owned by second alone", err, kept)
	}
	if err := pods.Delete(ctx, "default", shared.Name, client.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}

	if err := rcs.Delete(ctx, "default", "second", client.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// The quota frees its two as its controller recounts.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		if _, err = rcs.Create(ctx, newRC("legacy", 1)); err == nil || !client.IsForbidden(err) || time.Now().After(deadline) {
			break
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	wait("1 replica again", func(rc *core.ReplicationController) bool { return rc.Status.Replicas == 1 })
	if err := rcs.Delete(ctx, "default", "legacy", client.DeleteOptions{PropagationPolicy: "Background"}); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); len(activePods(t, ctx, c, "legacy")) > 0; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the pods of a ReplicationController deleted in the background are still there after 30 s")
		}
	}
}
