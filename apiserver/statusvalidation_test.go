package apiserver_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/kobune/kobune/apiserver/testserver"
	"github.com/kobune/kobune/client"
)

// TestStatusWritesAreValidated: a write of the status subresource is
// checked as kube-apiserver's status strategies check it — a Deployment's
// counts not negative and a part not above its whole, a custom resource's
// status by its schema — refused with 422 naming the field and leaving the
// stored object as it was; what a controller writes passes.
func TestStatusWritesAreValidated(t *testing.T) {
	s := testserver.New(t)
	c := newRESTClient(t, client.Config{}, s.Addr())
	const deps = "/apis/apps/v1/namespaces/default/deployments"
	dep := `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web"},"spec":{"replicas":2,"selector":{"matchLabels":{"app":"web"}},` +
		`"template":{"metadata":{"labels":{"app":"web"}},"spec":{"containers":[{"name":"app","image":"kobune.local/labapp:1.0"}]}}}}`
	if code, _, b := c.do("POST", deps, "", dep); code != 201 {
		t.Fatalf("create: %d %s", code, b)
	}
	merge := func(path, body string) (int, []byte) {
		code, _, b := c.do("PATCH", path, "", body, "Content-Type", "application/merge-patch+json")
		return code, b
	}
	for _, bad := range []struct{ patch, field string }{
		{`{"status":{"replicas":-5}}`, "status.replicas"},
		{`{"status":{"replicas":2,"readyReplicas":3}}`, "status.readyReplicas"},
		{`{"status":{"replicas":2,"readyReplicas":1,"availableReplicas":2}}`, "status.availableReplicas"},
		{`{"status":{"observedGeneration":-1}}`, "status.observedGeneration"},
	} {
		if code, b := merge(deps+"/web/status", bad.patch); code != 422 || !strings.Contains(string(b), bad.field) {
			t.Errorf("status patch %s: want 422 naming %s, got %d %s", bad.patch, bad.field, code, b)
		}
	}
	if code, b := merge(deps+"/web/status", `{"status":{"replicas":2,"readyReplicas":2,"availableReplicas":1,"updatedReplicas":2}}`); code != 200 {
		t.Errorf("a consistent status: %d %s", code, b)
	}
	_, _, b := c.do("GET", deps+"/web", "", "")
	if st := decodeJSON(t, b)["status"].(map[string]any); st["replicas"] != float64(2) || st["availableReplicas"] != float64(1) {
		t.Errorf("the stored status: %v", st)
	}

	// A custom resource's status, by its schema.
	crd := `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"counters.example.com"},` +
		`"spec":{"group":"example.com","scope":"Namespaced","names":{"plural":"counters","kind":"Counter"},"versions":[{"name":"v1","served":true,"storage":true,` +
		`"subresources":{"status":{}},"schema":{"openAPIV3Schema":{"type":"object","properties":{"spec":{"type":"object","properties":{"n":{"type":"integer"}}},` +
		`"status":{"type":"object","properties":{"count":{"type":"integer","minimum":0},"phase":{"type":"string","enum":["Idle","Busy"]}}}}}}}]}}`
	if code, _, b := c.do("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", "", crd); code != 201 {
		t.Fatalf("create the definition: %d %s", code, b)
	}
	const counters = "/apis/example.com/v1/namespaces/default/counters"
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		code, _, b := c.do("POST", counters, "", `{"apiVersion":"example.com/v1","kind":"Counter","metadata":{"name":"c"},"spec":{"n":1}}`)
		if code == 201 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("create a Counter: %d %s", code, b)
		}
	}
	for _, bad := range []struct{ patch, field string }{
		{`{"status":{"count":-1}}`, "status.count"},
		{`{"status":{"phase":"Maybe"}}`, "status.phase"},
	} {
		if code, b := merge(counters+"/c/status", bad.patch); code != 422 || !strings.Contains(string(b), bad.field) {
			t.Errorf("custom status patch %s: want 422 naming %s, got %d %s", bad.patch, bad.field, code, b)
		}
	}
	if code, b := merge(counters+"/c/status", `{"status":{"count":3,"phase":"Busy"}}`); code != 200 || !strings.Contains(string(b), `"count":3`) {
		t.Errorf("a valid custom status: %d %s", code, b)
	}
}

// TestServerSideApplyOfStatus: an apply to the status subresource sets
// the status it names and nothing else (a spec in it is not applied),
// under a managedFields entry of its own with subresource status, is
// validated as any status write, and creates nothing.
func TestServerSideApplyOfStatus(t *testing.T) {
	s := testserver.New(t)
	c := newRESTClient(t, client.Config{}, s.Addr())
	const deps = "/apis/apps/v1/namespaces/default/deployments"
	dep := `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web"},"spec":{"replicas":2,"selector":{"matchLabels":{"app":"web"}},` +
		`"template":{"metadata":{"labels":{"app":"web"}},"spec":{"containers":[{"name":"app","image":"kobune.local/labapp:1.0"}]}}}}`
	if code, _, b := c.do("POST", deps, "", dep); code != 201 {
		t.Fatalf("create: %d %s", code, b)
	}
	apply := func(name, body string) (int, []byte) {
		code, _, b := c.do("PATCH", deps+"/"+name+"/status?fieldManager=status-writer", "", body, "Content-Type", "application/apply-patch+yaml")
		return code, b
	}
	code, b := apply("web", `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","labels":{"sneaky":"yes"}},"spec":{"replicas":9},`+
		`"status":{"replicas":2,"readyReplicas":1,"conditions":[{"type":"Available","status":"False","reason":"Testing"}]}}`)
	if code != 200 {
		t.Fatalf("apply status: %d %s", code, b)
	}
	o := decodeJSON(t, b)
	md := o["metadata"].(map[string]any)
	if st := o["status"].(map[string]any); st["readyReplicas"] != float64(1) || o["spec"].(map[string]any)["replicas"] != float64(2) || md["labels"] != nil {
		t.Errorf("the status apply: status %v, spec.replicas %v (want 2), labels %v (want none)", st, o["spec"].(map[string]any)["replicas"], md["labels"])
	}
	found := false
	for _, e := range md["managedFields"].([]any) {
		if e := e.(map[string]any); e["manager"] == "status-writer" && e["operation"] == "Apply" && e["subresource"] == "status" {
			found = true
		}
	}
	if !found {
		t.Errorf("no Apply entry of status-writer for the status subresource: %v", md["managedFields"])
	}
	if code, b := apply("web", `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web"},"status":{"replicas":-1}}`); code != 422 || !strings.Contains(string(b), "status.replicas") {
		t.Errorf("an invalid status applied: want 422 naming status.replicas, got %d %s", code, b)
	}
	if code, b := apply("ghost", `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"ghost"},"status":{"replicas":1}}`); code != 404 {
		t.Errorf("a status apply of no object: want 404, got %d %s", code, b)
	}
}

// TestStorageVersionMigrationStatusPatches: a new StorageVersionMigration
// has a status ({}, as Kubernetes writes it), so a JSON patch may add
// /status/conditions at once; a condition that is not True, False or
// Unknown is refused naming it; the spec may not change.
func TestStorageVersionMigrationStatusPatches(t *testing.T) {
	s := testserver.New(t)
	c := newRESTClient(t, client.Config{}, s.Addr())
	const base = "/apis/storagemigration.k8s.io/v1/storageversionmigrations"
	if code, _, b := c.do("POST", base, "", `{"apiVersion":"storagemigration.k8s.io/v1","kind":"StorageVersionMigration","metadata":{"name":"m"},"spec":{"resource":{"group":"","resource":"foo"}}}`); code != 201 ||
		!strings.Contains(string(b), `"status":{}`) {
		t.Fatalf("create: %d %s", code, b)
	}
	patch := func(path, typ, body string) (int, []byte) {
		code, _, b := c.do("PATCH", base+path, "", body, "Content-Type", typ)
		return code, b
	}
	if code, b := patch("/m/status", "application/json-patch+json", `[{"op":"add","path":"/status/conditions","value":[{"type":"TestCondition","status":"True","reason":"TestReason","message":"m","lastTransitionTime":"2026-01-01T00:00:00Z"}]}]`); code != 200 {
		t.Errorf("a JSON patch adding the first conditions: %d %s", code, b)
	}
	if code, b := patch("/m/status", "application/merge-patch+json", `{"status":{"conditions":[{"type":"X","status":"Maybe","reason":"R","message":"m","lastTransitionTime":"2026-01-01T00:00:00Z"}]}}`); code != 422 ||
		!strings.Contains(string(b), "status.conditions[0].status") {
		t.Errorf("a condition status Maybe: want 422 naming it, got %d %s", code, b)
	}
	if code, b := patch("/m", "application/merge-patch+json", `{"spec":{"resource":{"resource":"bar"}}}`); code != 422 || !strings.Contains(string(b), "spec") {
		t.Errorf("changing the spec: want 422, got %d %s", code, b)
	}
}

// TestStatusWritesCarryFreshMetadata: a patch of a Job's status (the
// conformance suite's "apply changes to a job status") sets the
// annotations it names, as kube-apiserver's status strategy lets them
// through; an unconditional status write from a stale copy (a
// controller's) takes back no label; a Deployment's status keeps its
// labels, as in Kubernetes.
func TestStatusWritesCarryFreshMetadata(t *testing.T) {
	s := testserver.New(t)
	c := newRESTClient(t, client.Config{}, s.Addr())
	const jobs = "/apis/batch/v1/namespaces/default/jobs"
	job := `{"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"pi","labels":{"team":"a"}},"spec":{"template":{"spec":{"restartPolicy":"Never","containers":[{"name":"c","image":"i"}]}}}}`
	code, _, b := c.do("POST", jobs, "", job)
	if code != 201 {
		t.Fatalf("create: %d %s", code, b)
	}
	stale := decodeJSON(t, b)
	code, _, b = c.do("PATCH", jobs+"/pi/status", "", `{"metadata":{"annotations":{"patchedstatus":"true"}},"status":{"active":1}}`, "Content-Type", "application/merge-patch+json")
	if code != 200 || !strings.Contains(string(b), `"patchedstatus":"true"`) {
		t.Fatalf("status patch with an annotation: %d %s", code, b)
	}
	// The user relabels; a controller's unconditional write of its stale
	// copy's status does not take the label back.
	if code, _, b := c.do("PATCH", jobs+"/pi", "", `{"metadata":{"labels":{"team":"b"}}}`, "Content-Type", "application/merge-patch+json"); code != 200 {
		t.Fatalf("relabel: %d %s", code, b)
	}
	meta := stale["metadata"].(map[string]any)
	delete(meta, "resourceVersion")
	stale["status"] = map[string]any{"active": 2}
	body, _ := json.Marshal(stale)
	if code, _, b := c.do("PUT", jobs+"/pi/status", "", string(body)); code != 200 || !strings.Contains(string(b), `"team":"b"`) {
		t.Errorf("an unconditional status write from a stale copy: %d %s; want the label team=b kept", code, b)
	}
}
