package fieldmanager

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/kobune/kobune/api/k8sapi"
)

func obj(t *testing.T, s string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatalf("%v: %s", err, s)
	}
	return m
}

func js(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

const applied1 = `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","labels":{"app":"web","tier":"front"}},
"spec":{"replicas":2,"selector":{"matchLabels":{"app":"web"}},"template":{"metadata":{"labels":{"app":"web"}},"spec":{"containers":[{"name":"app","image":"labapp:1"}]}}}}`

func TestApplyOwnsMergesRemovesAndConflicts(t *testing.T) {
	dt, _ := k8sapi.ForKind("apps/v1", "Deployment")
	// 1. The first apply creates: the manager owns what it applied.
	merged, entries, err := Apply(Request{Applied: obj(t, applied1), Manager: "kubectl", Type: dt, APIVersion: "apps/v1", Now: "t1"})
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || entries[0].Manager != "kubectl" || entries[0].Operation != OperationApply {
		t.Fatalf("entries after the first apply: %s", js(entries))
	}
	fields := js(entries[0].FieldsV1)
	for _, want := range []string{`"f:replicas":{}`, `"k:{\"name\":\"app\"}":{".":{},"f:image":{},"f:name":{}}`, `"f:labels":{"f:app":{},"f:tier":{}}`} {
		if !strings.Contains(fields, want) {
			t.Errorf("fields %s lack %s", fields, want)
		}
	}
	// The server defaults a field and a controller (an Update manager)
	// changes replicas.
	live := merged
	live["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)["imagePullPolicy"] = "IfNotPresent"
	before := obj(t, js(live))
	live["spec"].(map[string]any)["replicas"] = 5.0
	entries = Update(before, live, entries, "kube-controller-manager", "", dt, "apps/v1", "t2")
	if len(entries) != 2 || !entries[1].FieldsV1.Has([]string{"f:spec", "f:replicas"}) || entries[0].FieldsV1.Has([]string{"f:spec", "f:replicas"}) {
		t.Fatalf("after the controller's update: %s", js(entries))
	}

	// 2. Applying replicas 2 again now conflicts with the controller.
	_, _, err = Apply(Request{Live: live, Applied: obj(t, applied1), Entries: entries, Manager: "kubectl", Type: dt, APIVersion: "apps/v1", Now: "t3"})
	if err == nil || err.Error() != `Apply failed with 1 conflict: conflict with "kube-controller-manager" using apps/v1: .spec.replicas` {
		t.Fatalf("apply over the controller's replicas: %v", err)
	}
	// 3. Forced, it takes the field; a label it no longer applies goes,
	// the defaulted field stays.
	applied2 := strings.Replace(applied1, `,"tier":"front"`, "", 1)
	merged, entries, err = Apply(Request{Live: live, Applied: obj(t, applied2), Entries: entries, Manager: "kubectl", Force: true, Type: dt, APIVersion: "apps/v1", Now: "t4"})
	if err != nil {
		t.Fatal(err)
	}
	m := js(merged)
	if !strings.Contains(m, `"replicas":2`) || strings.Contains(m, `"tier"`) || !strings.Contains(m, `"imagePullPolicy":"IfNotPresent"`) {
		t.Fatalf("merged after a forced apply: %s", m)
	}
	if len(entries) != 1 || entries[0].Manager != "kubectl" {
		t.Fatalf("the controller should own nothing after the forced apply: %s", js(entries))
	}
	// 4. A container it no longer applies is removed; the same value
	// owned by two managers is no conflict.
	applied3 := strings.Replace(applied2, `[{"name":"app","image":"labapp:1"}]`, `[{"name":"other","image":"x"}]`, 1)
	merged, _, err = Apply(Request{Live: merged, Applied: obj(t, applied3), Entries: entries, Manager: "kubectl", Type: dt, APIVersion: "apps/v1", Now: "t5"})
	if err != nil {
		t.Fatal(err)
	}
	if m := js(merged); strings.Contains(m, `"name":"app"`) || !strings.Contains(m, `"name":"other"`) {
		t.Fatalf("containers after applying another one: %s", m)
	}
}

func TestUpdateOfAnUntrackedObjectRecordsNothing(t *testing.T) {
	dt, _ := k8sapi.ForKind("apps/v1", "Deployment")
	if e := Update(obj(t, applied1), obj(t, strings.Replace(applied1, `"replicas":2`, `"replicas":3`, 1)), nil, "m", "", dt, "apps/v1", "t"); e != nil {
		t.Fatalf("entries for an object no apply touched: %s", js(e))
	}
}
