package apiserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/kobune/kobune/api/scheme"
	"github.com/kobune/kobune/apiserver/testserver"
	"github.com/kobune/kobune/client"
)

const widgetCRD = `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition",
 "metadata":{"name":"widgets.example.com"},
 "spec":{"group":"example.com","scope":"Namespaced",
  "names":{"plural":"widgets","singular":"widget","kind":"Widget","shortNames":["wd"],"categories":["all"]},
  "versions":[
   {"name":"v1","served":true,"storage":true,
    "subresources":{"status":{},"scale":{"specReplicasPath":".spec.replicas","statusReplicasPath":".status.ready","labelSelectorPath":".status.selector"}},
    "selectableFields":[{"jsonPath":".spec.color"}],
    "additionalPrinterColumns":[{"name":"Color","type":"string","jsonPath":".spec.color"},{"name":"Replicas","type":"integer","description":"replicas wanted","jsonPath":".spec.replicas"},
     {"name":"Ready","type":"string","priority":1,"jsonPath":".status.conditions[?(@.type==\"Ready\")].status"}],
    "schema":{"openAPIV3Schema":{"type":"object","required":["spec"],"properties":{
     "spec":{"type":"object","required":["color"],"properties":{
      "replicas":{"type":"integer","minimum":0,"maximum":10,"default":1},
      "color":{"type":"string","enum":["red","blue"]},
      "size":{"x-kubernetes-int-or-string":true},
      "name":{"type":"string","pattern":"^[a-z]+$","maxLength":8},
      "tags":{"type":"array","items":{"type":"string"},"x-kubernetes-list-type":"set"},
      "config":{"type":"object","x-kubernetes-preserve-unknown-fields":true}}},
     "status":{"type":"object","properties":{"ready":{"type":"integer"},"selector":{"type":"string"},"conditions":{"type":"array","items":{"type":"object","x-kubernetes-preserve-unknown-fields":true}}}}}}}},
   {"name":"v1beta1","served":true,"storage":false,"deprecated":true,
    "schema":{"openAPIV3Schema":{"type":"object","x-kubernetes-preserve-unknown-fields":true}}}]}}`

// TestCustomResourceDefinitions (issue #36): a kind added at run time. A
// definition is Established and its kind discoverable; its objects are
// pruned (an unknown field is refused under Strict, dropped with a
// warning otherwise), defaulted and validated by the schema (each bad
// field named, nothing stored), served at each served version, with a
// status subresource that the main resource cannot write; deleting the
// definition deletes its objects first, then the kind is gone.
func TestCustomResourceDefinitions(t *testing.T) {
	s := testserver.New(t)
	c := newRESTClient(t, client.Config{}, s.Addr())
	const crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
	if code, _, b := c.do("POST", crds, "", widgetCRD); code != 201 {
		t.Fatalf("create the definition: %d %s", code, b)
	}
	established := func(name string) map[string]any {
		var last []byte
		for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			_, _, b := c.do("GET", crds+"/"+name, "", "")
			last = b
			if strings.Contains(string(b), `"type":"Established","status":"True"`) {
				return decodeJSON(t, b)
			}
		}
		t.Fatalf("%s never Established: %s", name, last)
		return nil
	}
	crd := established("widgets.example.com")
	if f, _ := crd["metadata"].(map[string]any)["finalizers"].([]any); len(f) != 1 || f[0] != "customresourcecleanup.apiextensions.k8s.io" {
		t.Errorf("the definition's finalizers: %v", f)
	}
	if st := crd["status"].(map[string]any); st["acceptedNames"].(map[string]any)["kind"] != "Widget" || st["storedVersions"].([]any)[0] != "v1" {
		t.Errorf("status: %v", st)
	}
	_, _, b := c.do("GET", "/apis/example.com/v1", "", "")
	if !strings.Contains(string(b), `"name":"widgets"`) || !strings.Contains(string(b), `"name":"widgets/status"`) || !strings.Contains(string(b), `"shortNames":["wd"]`) {
		t.Errorf("discovery of example.com/v1: %s", b)
	}
	_, _, b = c.do("GET", "/apis", "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList", "")
	if !strings.Contains(string(b), `"name":"example.com"`) || !strings.Contains(string(b), `"categories":["all"]`) {
		t.Errorf("aggregated discovery lacks example.com: %.300s", b)
	}

	const widgets = "/apis/example.com/v1/namespaces/default/widgets"
	w := func(name, spec string) string {
		return `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"` + name + `"},"spec":` + spec + `}`
	}
	code, _, b := c.do("POST", widgets+"?fieldValidation=Strict", "", w("strict", `{"color":"red","bogus":1}`))
	if code != 400 || !strings.Contains(string(b), `unknown field \"spec.bogus\"`) {
		t.Errorf("an unknown field under Strict: %d %s", code, b)
	}
	code, h, b := c.do("POST", widgets, "", w("one", `{"color":"red","bogus":1,"size":"50%","config":{"any":{"thing":true}},"tags":["a","b"]}`))
	if code != 201 || !strings.Contains(h.Get("Warning"), `unknown field \"spec.bogus\"`) {
		t.Fatalf("create with an unknown field: %d %q %s", code, h.Get("Warning"), b)
	}
	one := decodeJSON(t, b)
	spec := one["spec"].(map[string]any)
	if _, ok := spec["bogus"]; ok || spec["replicas"] != float64(1) || spec["config"].(map[string]any)["any"] == nil {
		t.Errorf("not pruned, defaulted or kept as the schema says: %s", b)
	}
	for _, bad := range []struct{ spec, field string }{
		{`{"color":"red","replicas":20}`, "spec.replicas"},
		{`{"color":"green"}`, `spec.color: Unsupported value: \"green\"`},
		{`{"replicas":2}`, "spec.color: Required value"},
		{`{"color":"red","replicas":"two"}`, "spec.replicas: Invalid value: \\\"string\\\""},
		{`{"color":"red","name":"ABC"}`, "spec.name"},
		{`{"color":"red","size":true}`, "spec.size"},
		{`{"color":"red","tags":["a","a"]}`, "spec.tags[1]: Duplicate value"},
	} {
		code, _, b := c.do("POST", widgets, "", w("bad", bad.spec))
		if code != 422 || !strings.Contains(string(b), bad.field) {
			t.Errorf("spec %s: %d %s; want 422 naming %s", bad.spec, code, b, bad.field)
		}
	}
	if code, _, _ := c.do("GET", widgets+"/bad", "", ""); code != 404 {
		t.Errorf("a refused widget was stored")
	}
	if code, _, b := c.do("POST", "/apis/example.com/v1/widgets", "", w("nospec", `{"color":"red"}`)); code != 201 {
		t.Errorf("create at the cluster-wide URL (namespace default): %d %s", code, b)
	}
	_, h, b = c.do("GET", "/apis/example.com/v1beta1/namespaces/default/widgets/one", "", "")
	if got := decodeJSON(t, b); got["apiVersion"] != "example.com/v1beta1" || !strings.Contains(h.Get("Warning"), "example.com/v1beta1 Widget is deprecated") {
		t.Errorf("read at the deprecated v1beta1: %q %s", h.Get("Warning"), b)
	}
	// Server-side apply at the other served version (YAML, as kubectl and
	// the conformance suite send it): the same apply at the stored one, the
	// answer at the URL's version; unknown fields refused under Strict.
	applied := "apiVersion: example.com/v1beta1\nkind: Widget\nmetadata: {name: applied}\nspec: {color: blue, replicas: 2}\n"
	code, _, b = c.do("PATCH", "/apis/example.com/v1beta1/namespaces/default/widgets/applied?fieldManager=versioned-applier", "", applied, "Content-Type", "application/apply-patch+yaml")
	if got := decodeJSON(t, b); code != 201 && code != 200 || got["apiVersion"] != "example.com/v1beta1" {
		t.Errorf("apply at v1beta1: %d %s", code, b)
	}
	if _, _, b := c.do("GET", widgets+"/applied", "", ""); decodeJSON(t, b)["apiVersion"] != "example.com/v1" || !strings.Contains(string(b), `"color":"blue"`) {
		t.Errorf("the widget applied at v1beta1, read at v1: %s", b)
	}
	code, _, b = c.do("PATCH", "/apis/example.com/v1beta1/namespaces/default/widgets/applied?fieldManager=versioned-applier&fieldValidation=Strict", "",
		strings.Replace(applied, "replicas: 2", "replicas: 2, shape: round", 1), "Content-Type", "application/apply-patch+yaml")
	if code == 200 || !strings.Contains(string(b), `.spec.shape: field not declared in schema`) {
		t.Errorf("an apply at v1beta1 with an unknown field under Strict: %d %s", code, b)
	}
	if code, _, b := c.do("DELETE", widgets+"/applied", "", ""); code != 200 {
		t.Fatalf("delete the applied widget: %d %s", code, b)
	}
	// The status subresource: the main resource keeps the stored status,
	// the status subresource keeps the stored spec.
	one["status"] = map[string]any{"ready": 3}
	spec["replicas"] = 2
	code, _, b = c.do("PUT", widgets+"/one", "", string(mustMarshal(t, one)))
	if got := decodeJSON(t, b); code != 200 || got["status"] != nil || got["spec"].(map[string]any)["replicas"] != float64(2) {
		t.Errorf("update through the main resource: %d %s", code, b)
	}
	one = decodeJSON(t, b)
	one["status"] = map[string]any{"ready": 3, "conditions": []any{map[string]any{"type": "Synced", "status": "False"}, map[string]any{"type": "Ready", "status": "True"}}}
	one["spec"].(map[string]any)["replicas"] = 5
	code, _, b = c.do("PUT", widgets+"/one/status", "", string(mustMarshal(t, one)))
	if got := decodeJSON(t, b); code != 200 || got["status"].(map[string]any)["ready"] != float64(3) || got["spec"].(map[string]any)["replicas"] != float64(2) {
		t.Errorf("update through status: %d %s", code, b)
	}
	// Patches: JSON merge and JSON patch, server-side apply; a strategic
	// merge patch is refused (a schema has no merge keys), as in Kubernetes.
	code, _, b = c.do("PATCH", widgets+"/nospec", "", `{"metadata":{"labels":{"tier":"gold"}},"spec":{"tags":["x"]}}`, "Content-Type", "application/merge-patch+json")
	if code != 200 || !strings.Contains(string(b), `"tags":["x"]`) {
		t.Errorf("merge patch: %d %s", code, b)
	}
	code, _, b = c.do("PATCH", widgets+"/nospec", "", `[{"op":"replace","path":"/spec/replicas","value":11}]`, "Content-Type", "application/json-patch+json")
	if code != 422 || !strings.Contains(string(b), "spec.replicas") {
		t.Errorf("a JSON patch that breaks the schema: %d %s", code, b)
	}
	if code, _, b := c.do("PATCH", widgets+"/nospec", "", `{"spec":{"color":"blue"}}`, "Content-Type", "application/strategic-merge-patch+json"); code != 415 {
		t.Errorf("strategic merge patch of a custom resource: %d %s; want 415", code, b)
	}
	code, _, b = c.do("PATCH", widgets+"/applied?fieldManager=test", "", w("applied", `{"color":"blue","replicas":4}`), "Content-Type", "application/apply-patch+yaml")
	if code != 200 && code != 201 || !strings.Contains(string(b), `"manager":"test"`) {
		t.Errorf("server-side apply: %d %s", code, b)
	}
	_, _, b = c.do("GET", widgets+"?labelSelector=tier%3Dgold", "", "")
	if items, _ := decodeJSON(t, b)["items"].([]any); len(items) != 1 {
		t.Errorf("list by label: %s", b)
	}
	_, _, b = c.do("GET", widgets+"?fieldSelector=spec.color%3Dblue", "", "")
	if items, _ := decodeJSON(t, b)["items"].([]any); len(items) != 1 {
		t.Errorf("list by the selectable field spec.color: %s", b)
	}
	if code, _, b := c.do("GET", widgets+"?fieldSelector=spec.size%3D1", "", ""); code != 400 {
		t.Errorf("a field that is not selectable: %d %s", code, b)
	}
	_, _, b = c.do("GET", widgets+"?watch=true&timeoutSeconds=1", "", "")
	if n := strings.Count(string(b), `"type":"ADDED"`); n != 3 {
		t.Errorf("watch from the start: %d ADDED events, want 3: %s", n, b)
	}
	// The gRPC API serves the kind as widgets.example.com.
	gc, err := client.Dial(s.Addr(), "")
	if err != nil {
		t.Fatal(err)
	}
	defer gc.Close()
	objs, _, err := gc.Resource(&scheme.Kind{Kind: "Widget", APIVersion: "example.com/v1", Resource: "widgets.example.com", Namespaced: true}).
		List(context.Background(), "default", client.ListOptions{})
	if err != nil || len(objs) != 3 {
		t.Errorf("list over gRPC: %d objects, %v", len(objs), err)
	}

	// The scale subresource, at the definition's paths.
	code, _, b = c.do("GET", widgets+"/one/scale", "", "")
	if sc := decodeJSON(t, b); code != 200 || sc["kind"] != "Scale" || sc["spec"].(map[string]any)["replicas"] != float64(2) || sc["status"].(map[string]any)["replicas"] != float64(3) {
		t.Errorf("GET scale: %d %s", code, b)
	}
	code, _, b = c.do("PATCH", widgets+"/one/scale", "", `{"spec":{"replicas":4}}`, "Content-Type", "application/merge-patch+json")
	if code != 200 || !strings.Contains(string(b), `"spec":{"replicas":4}`) {
		t.Errorf("PATCH scale: %d %s", code, b)
	}
	if _, _, b := c.do("GET", widgets+"/one", "", ""); decodeJSON(t, b)["spec"].(map[string]any)["replicas"] != float64(4) {
		t.Errorf("the widget after scaling: %s", b)
	}
	if code, _, b := c.do("PATCH", widgets+"/one/scale", "", `{"spec":{"replicas":40}}`, "Content-Type", "application/merge-patch+json"); code != 422 || !strings.Contains(string(b), "spec.replicas") {
		t.Errorf("scaling past the schema's maximum: %d %s", code, b)
	}
	_, _, b = c.do("GET", "/apis/example.com/v1", "", "")
	if !strings.Contains(string(b), `"name":"widgets/scale"`) {
		t.Errorf("discovery lacks widgets/scale: %s", b)
	}
	// Back to 2 replicas for the Table below.
	c.do("PATCH", widgets+"/one/scale", "", `{"spec":{"replicas":2}}`, "Content-Type", "application/merge-patch+json")

	code, _, b = c.do("GET", widgets, "application/json;as=Table;v=v1;g=meta.k8s.io", "")
	if code != 200 || !strings.Contains(string(b), `"cells":["nospec","red","1",""]`) || !strings.Contains(string(b), `"cells":["applied","blue","4",""]`) || !strings.Contains(string(b), `"cells":["one","red","2","True"]`) ||
		!strings.Contains(string(b), `"name":"Ready","type":"string","format":"","description":"","priority":1`) ||
		!strings.Contains(string(b), `"name":"Replicas","type":"integer","format":"","description":"replicas wanted","priority":0`) {
		t.Errorf("Table with the printer columns: %d %s", code, b)
	}

	// A definition that breaks the rules is refused, naming the field.
	for _, bad := range []struct{ body, field string }{
		{strings.Replace(widgetCRD, `"name":"widgets.example.com"`, `"name":"gadgets.example.com"`, 1), "metadata.name"},
		{strings.Replace(widgetCRD, `"storage":true`, `"storage":false`, 1), "spec.versions"},
		{strings.Replace(widgetCRD, `"type":"integer","minimum"`, `"minimum"`, 1), "spec.versions[0].schema.openAPIV3Schema.properties[spec].properties[replicas].type"},
		{strings.Replace(widgetCRD, `"scope":"Namespaced"`, `"scope":"Everywhere"`, 1), "spec.scope"},
		// Any case, otherwise a DNS label (as Kubernetes: "e2e-test-crd" is fine).
		{strings.Replace(widgetCRD, `"kind":"Widget"`, `"kind":"Wid_get"`, 1), "spec.names.kind"},
	} {
		body := strings.Replace(bad.body, `"name":"widgets.example.com"`, `"name":"other.example.com"`, 1)
		body = strings.Replace(body, `"plural":"widgets"`, `"plural":"other"`, 1)
		if bad.field == "metadata.name" {
			body = bad.body
		}
		code, _, b := c.do("POST", crds, "", body)
		if code != 422 || !strings.Contains(string(b), bad.field) {
			t.Errorf("a bad definition: %d %s; want 422 naming %s", code, b, bad.field)
		}
	}
	hyphenated := strings.NewReplacer(`"name":"widgets.example.com"`, `"name":"e2e-test-crds.example.com"`,
		`"plural":"widgets","singular":"widget","kind":"Widget","shortNames":["wd"]`, `"plural":"e2e-test-crds","singular":"e2e-test-crd","kind":"e2e-test-crd"`).Replace(widgetCRD)
	if code, _, b := c.do("POST", crds, "", hyphenated); code != 201 {
		t.Errorf("a kind with hyphens (Kubernetes takes any case of a DNS label): %d %s", code, b)
	}
	// A second definition that takes a name in use is not accepted.
	clash := strings.NewReplacer(`"name":"widgets.example.com"`, `"name":"gizmos.example.com"`, `"plural":"widgets","singular":"widget"`, `"plural":"gizmos","singular":"gizmo"`).Replace(widgetCRD)
	if code, _, b := c.do("POST", crds, "", clash); code != 201 {
		t.Fatalf("create a clashing definition: %d %s", code, b)
	}
	var last []byte
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline) && !strings.Contains(string(last), `"reason":"NameConflict"`); time.Sleep(50 * time.Millisecond) {
		_, _, last = c.do("GET", crds+"/gizmos.example.com", "", "")
	}
	if !strings.Contains(string(last), `"reason":"NameConflict"`) || !strings.Contains(string(last), `"type":"Established","status":"False"`) {
		t.Errorf("a definition whose names clash: %s", last)
	}
	if code, _, _ := c.do("GET", "/apis/example.com/v1/gizmos", "", ""); code != 404 {
		t.Errorf("a definition whose names clash is served: %d", code)
	}
	// A definition may not take a built-in kind's names in its group.
	builtin := strings.NewReplacer(`"name":"widgets.example.com"`, `"name":"ingresses.networking.k8s.io"`, `"group":"example.com"`, `"group":"networking.k8s.io"`,
		`"plural":"widgets","singular":"widget","kind":"Widget"`, `"plural":"ingresses","singular":"ingress","kind":"Ingress"`).Replace(widgetCRD)
	if code, _, b := c.do("POST", crds, "", builtin); code != 201 {
		t.Fatalf("create ingresses.networking.k8s.io: %d %s", code, b)
	}
	last = nil
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline) && !strings.Contains(string(last), `"reason":"NameConflict"`); time.Sleep(50 * time.Millisecond) {
		_, _, last = c.do("GET", crds+"/ingresses.networking.k8s.io", "", "")
	}
	if !strings.Contains(string(last), `is a built-in kind of group`) {
		t.Errorf("a definition of a built-in kind's names: %s", last)
	}
	if _, _, b := c.do("GET", "/apis/networking.k8s.io/v1", "", ""); strings.Count(string(b), `"name":"ingresses"`) != 1 {
		t.Errorf("discovery of networking.k8s.io/v1 lists ingresses more than once: %s", b)
	}
	c.do("DELETE", crds+"/ingresses.networking.k8s.io", "", "")

	// A namespace's deletion deletes its widgets.
	for _, body := range []string{`{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"team"}}`} {
		if code, _, b := c.do("POST", "/api/v1/namespaces", "", body); code != 201 {
			t.Fatalf("create namespace: %d %s", code, b)
		}
	}
	if code, _, b := c.do("POST", "/apis/example.com/v1/namespaces/team/widgets", "", w("doomed", `{"color":"red"}`)); code != 201 {
		t.Fatalf("create in team: %d %s", code, b)
	}
	c.do("DELETE", "/api/v1/namespaces/team", "", "")
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if code, _, _ := c.do("GET", "/api/v1/namespaces/team", "", ""); code == 404 {
			break
		}
		if time.Now().After(deadline) {
			_, _, b := c.do("GET", "/api/v1/namespaces/team", "", "")
			t.Fatalf("namespace team with a widget never went: %s", b)
		}
	}

	// Deleting the definition deletes every widget, then the definition.
	for _, name := range []string{"gizmos.example.com", "widgets.example.com"} {
		if code, _, b := c.do("DELETE", crds+"/"+name, "", ""); code != 200 {
			t.Fatalf("delete the definition: %d %s", code, b)
		}
		for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
			code, _, b := c.do("GET", crds+"/"+name, "", "")
			if code == 404 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the deleted definition is still there: %s", b)
			}
		}
	}
	if code, _, b := c.do("GET", widgets, "", ""); code != 404 {
		t.Errorf("widgets still served after their definition went: %d %s", code, b)
	}
	if code, _, b := c.do("POST", crds, "", widgetCRD); code != 201 {
		t.Fatalf("create the definition again: %d %s", code, b)
	}
	established("widgets.example.com")
	_, _, b = c.do("GET", widgets, "", "")
	if items, _ := decodeJSON(t, b)["items"].([]any); len(items) != 0 {
		t.Errorf("widgets of the deleted definition are back: %s", b)
	}
}

func mustMarshal(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

const scalerCRD = `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition",
 "metadata":{"name":"scalers.example.com"},
 "spec":{"group":"example.com","scope":"Namespaced","names":{"plural":"scalers","kind":"Scaler"},
  "versions":[{"name":"v1","served":true,"storage":true,
   "schema":{"openAPIV3Schema":{"type":"object","properties":{
    "spec":{"type":"object",
     "x-kubernetes-validations":[
      {"rule":"self.minReplicas <= self.maxReplicas","message":"minReplicas must not exceed maxReplicas"},
      {"rule":"self.maxReplicas < 100","messageExpression":"'maxReplicas ' + string(self.maxReplicas) + ' is too many'","reason":"FieldValueForbidden","fieldPath":".maxReplicas"}],
     "properties":{
      "minReplicas":{"type":"integer"},
      "maxReplicas":{"type":"integer"},
      "ratio":{"type":"number","x-kubernetes-validations":[{"rule":"self < 1.5"}]},
      "name":{"type":"string","x-kubernetes-validations":[{"rule":"self == oldSelf","message":"name is immutable"}]},
      "tags":{"type":"array","maxItems":10,"items":{"type":"string","maxLength":20},"x-kubernetes-validations":[{"rule":"self.all(t, t != 'forbidden')"}]}}}}}}}]}}`

// TestCustomResourceValidationRules (issue #36): CEL rules of a schema
// (x-kubernetes-validations) check objects — message, messageExpression,
// reason and fieldPath as written, a number field a double, a transition
// rule (oldSelf) only on updates — and a definition whose rule does not
// compile, or whose estimated cost exceeds the budget, is refused naming
// the rule and, for the cost, the estimate.
func TestCustomResourceValidationRules(t *testing.T) {
	s := testserver.New(t)
	c := newRESTClient(t, client.Config{}, s.Addr())
	const crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
	if code, _, b := c.do("POST", crds, "", scalerCRD); code != 201 {
		t.Fatalf("create the definition: %d %s", code, b)
	}
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if _, _, b := c.do("GET", crds+"/scalers.example.com", "", ""); strings.Contains(string(b), `"type":"Established","status":"True"`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("never Established")
		}
	}
	const scalers = "/apis/example.com/v1/namespaces/default/scalers"
	sc := func(spec string) string {
		return `{"apiVersion":"example.com/v1","kind":"Scaler","metadata":{"name":"s"},"spec":` + spec + `}`
	}
	for _, bad := range []struct{ spec, want string }{
		{`{"minReplicas":5,"maxReplicas":2}`, `spec: Invalid value: \"object\": minReplicas must not exceed maxReplicas`},
		{`{"minReplicas":1,"maxReplicas":200}`, `spec.maxReplicas: Forbidden: maxReplicas 200 is too many`},
		{`{"minReplicas":1,"maxReplicas":2,"ratio":2}`, `spec.ratio: Invalid value: \"number\": failed rule: self \u003c 1.5`},
		{`{"minReplicas":1,"maxReplicas":2,"tags":["a","forbidden"]}`, `spec.tags: Invalid value: \"array\": failed rule: self.all(t, t != 'forbidden')`},
	} {
		code, _, b := c.do("POST", scalers, "", sc(bad.spec))
		if code != 422 || !strings.Contains(string(b), bad.want) {
			t.Errorf("spec %s: %d %s\nwant 422 with %s", bad.spec, code, b, bad.want)
		}
	}
	code, _, b := c.do("POST", scalers, "", sc(`{"minReplicas":1,"maxReplicas":2,"ratio":1,"name":"first"}`))
	if code != 201 {
		t.Fatalf("a valid scaler (ratio 1 is a double to CEL; the transition rule does not run on create): %d %s", code, b)
	}
	obj := decodeJSON(t, b)
	obj["spec"].(map[string]any)["name"] = "second"
	code, _, b = c.do("PUT", scalers+"/s", "", string(mustMarshal(t, obj)))
	if code != 422 || !strings.Contains(string(b), "spec.name: Invalid value: \\\"string\\\": name is immutable") {
		t.Errorf("an update breaking a transition rule: %d %s", code, b)
	}
	obj["spec"].(map[string]any)["name"] = "first"
	obj["spec"].(map[string]any)["maxReplicas"] = 3
	if code, _, b := c.do("PUT", scalers+"/s", "", string(mustMarshal(t, obj))); code != 200 {
		t.Errorf("an update keeping the name: %d %s", code, b)
	}

	for _, bad := range []struct{ from, to, want string }{
		{`"rule":"self < 1.5"`, `"rule":"self <"`, `x-kubernetes-validations[0].rule: Invalid value: \"self \u003c\": compilation failed`},
		{`"rule":"self.all(t, t != 'forbidden')"`, `"rule":"'x'"`, `must evaluate to a bool`},
		// A quadratic rule over a list without maxItems: its estimate is
		// named with the budget.
		{`"maxItems":10,`, ``, ``},
	} {
		body := strings.NewReplacer(`scalers.example.com`, `other.example.com`, `"plural":"scalers"`, `"plural":"other"`, bad.from, bad.to).Replace(scalerCRD)
		if bad.want == "" {
			body = strings.Replace(body, `"rule":"self.all(t, t != 'forbidden')"`, `"rule":"self.all(x, self.all(y, x == y || x != y))"`, 1)
			bad.want = `estimated rule cost`
		}
		code, _, b := c.do("POST", crds, "", body)
		if code != 422 || !strings.Contains(string(b), bad.want) {
			t.Errorf("a definition with a bad rule: %d %s\nwant 422 with %s", code, b, bad.want)
		}
		if bad.want == "estimated rule cost" && !strings.Contains(string(b), "exceeds budget 10,000,000 by factor of") {
			t.Errorf("the refusal does not say the estimated cost against the budget: %s", b)
		}
	}
}

// TestCustomResourceDefaultsFromStorage (issue #36; the conformance test
// "custom resource defaulting for requests and from storage works"): a
// default added to the schema shows on objects written before it,
// whenever they are read — get, list, watch — without being written
// back (removed again, it is gone from them), and a new object stores it.
func TestCustomResourceDefaultsFromStorage(t *testing.T) {
	s := testserver.New(t)
	c := newRESTClient(t, client.Config{}, s.Addr())
	const crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
	crd := func(defaults string) string {
		return `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"notes.example.com"%s},` +
			`"spec":{"group":"example.com","scope":"Cluster","names":{"plural":"notes","kind":"Note"},"versions":[{"name":"v1","served":true,"storage":true,` +
			`"schema":{"openAPIV3Schema":{"type":"object","properties":` + defaults + `}}}]}}`
	}
	if code, _, b := c.do("POST", crds, "", fmt.Sprintf(crd(`{"a":{"type":"string"},"b":{"type":"string"},"n":{"type":"integer"}}`), "")); code != 201 {
		t.Fatalf("create the definition: %d %s", code, b)
	}
	const notes = "/apis/example.com/v1/notes"
	var first map[string]any
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		code, _, b := c.do("POST", notes, "", `{"apiVersion":"example.com/v1","kind":"Note","metadata":{"name":"old"},"n":9007199254740993}`)
		if code == 201 {
			first = decodeJSON(t, b)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("create a Note: %d %s", code, b)
		}
	}
	rv := first["metadata"].(map[string]any)["resourceVersion"]
	update := func(props string) {
		t.Helper()
		_, _, cur := c.do("GET", crds+"/notes.example.com", "", "")
		crv := decodeJSON(t, cur)["metadata"].(map[string]any)["resourceVersion"].(string)
		if code, _, b := c.do("PUT", crds+"/notes.example.com", "", fmt.Sprintf(crd(props), `,"resourceVersion":"`+crv+`"`)); code != 200 {
			t.Fatalf("update the definition: %d %s", code, b)
		}
	}
	get := func(name string) map[string]any {
		t.Helper()
		code, _, b := c.do("GET", notes+"/"+name, "", "")
		if code != 200 {
			t.Fatalf("get %s: %d %s", name, code, b)
		}
		return decodeJSON(t, b)
	}
	update(`{"a":{"type":"string","default":"A"},"b":{"type":"string"},"n":{"type":"integer"}}`)
	for deadline := time.Now().Add(20 * time.Second); get("old")["a"] != "A"; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the default never showed on a Note read after it was added: %v", get("old"))
		}
	}
	old := get("old")
	if got := old["metadata"].(map[string]any)["resourceVersion"]; got != rv {
		t.Errorf("reading with a default changed the resourceVersion: %v, stored %v", got, rv)
	}
	if _, _, b := c.do("GET", notes+"/old", "", ""); !strings.Contains(string(b), `"n":9007199254740993`) {
		t.Errorf("a large integer lost digits when the default was applied on read: %s", b)
	}
	if _, _, b := c.do("GET", notes, "", ""); !strings.Contains(string(b), `"a":"A"`) {
		t.Errorf("the list of Notes lacks the default: %s", b)
	}
	if _, _, b := c.do("GET", notes+"?watch=true&timeoutSeconds=1", "", ""); !strings.Contains(string(b), `"a":"A"`) {
		t.Errorf("the watch's initial events lack the default: %s", b)
	}
	if code, _, b := c.do("POST", notes, "", `{"apiVersion":"example.com/v1","kind":"Note","metadata":{"name":"new"}}`); code != 201 || decodeJSON(t, b)["a"] != "A" {
		t.Fatalf("create a Note with the default in the schema: %d %s", code, b)
	}

	// The default of a moves to b: "new" stored a, "old" never did.
	update(`{"a":{"type":"string"},"b":{"type":"string","default":"B"},"n":{"type":"integer"}}`)
	for deadline := time.Now().Add(20 * time.Second); get("new")["b"] != "B"; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("b's default never showed: %v", get("new"))
		}
	}
	if n := get("new"); n["a"] != "A" {
		t.Errorf("the Note created with a's default lost it: %v", n)
	}
	if o := get("old"); o["a"] != nil || o["b"] != "B" {
		t.Errorf("the Note written before any default: a=%v b=%v; want no a (defaults on read are not stored) and b=B", o["a"], o["b"])
	}
}

// TestCustomResourceStorageVersionMoves (issue #36; the conformance suite's
// "should mutate custom resource with different stored version"): objects
// stored at v1 are read, listed and patched at v2 once v2 becomes the
// storage version, each answered at the version asked for.
func TestCustomResourceStorageVersionMoves(t *testing.T) {
	s := testserver.New(t)
	c := newRESTClient(t, client.Config{}, s.Addr())
	const crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
	crd := func(storage, rv string) string {
		v := func(name string) string {
			return `{"name":"` + name + `","served":true,"storage":` + fmt.Sprint(name == storage) + `,"schema":{"openAPIV3Schema":{"type":"object","x-kubernetes-preserve-unknown-fields":true}}}`
		}
		return `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"movers.example.com"` + rv + `},` +
			`"spec":{"group":"example.com","scope":"Namespaced","names":{"plural":"movers","kind":"Mover"},"versions":[` + v("v1") + "," + v("v2") + `]}}`
	}
	if code, _, b := c.do("POST", crds, "", crd("v1", "")); code != 201 {
		t.Fatalf("create the definition: %d %s", code, b)
	}
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		code, _, b := c.do("POST", "/apis/example.com/v1/namespaces/default/movers", "", `{"apiVersion":"example.com/v1","kind":"Mover","metadata":{"name":"old"},"data":{"a":"1"}}`)
		if code == 201 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("create a Mover: %d %s", code, b)
		}
	}
	// A read-modify-write, retried on a conflict as clients do: the
	// definition's status (its conditions) may be written in between.
	for attempt := 0; ; attempt++ {
		_, _, cur := c.do("GET", crds+"/movers.example.com", "", "")
		rv := decodeJSON(t, cur)["metadata"].(map[string]any)["resourceVersion"].(string)
		code, _, b := c.do("PUT", crds+"/movers.example.com", "", crd("v2", `,"resourceVersion":"`+rv+`"`))
		if code == 200 {
			break
		}
		if code != 409 || attempt == 5 {
			t.Fatalf("make v2 the storage version: %d %s", code, b)
		}
	}
	var got map[string]any
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		_, _, b := c.do("GET", "/apis/example.com/v2/namespaces/default/movers/old", "", "")
		if got = decodeJSON(t, b); got["apiVersion"] == "example.com/v2" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the object stored at v1, read at v2: %s", b)
		}
	}
	if _, _, b := c.do("GET", "/apis/example.com/v1/namespaces/default/movers/old", "", ""); decodeJSON(t, b)["apiVersion"] != "example.com/v1" {
		t.Errorf("read at v1: %s", b)
	}
	if _, _, b := c.do("GET", "/apis/example.com/v2/namespaces/default/movers", "", ""); !strings.Contains(string(b), `"apiVersion":"example.com/v2","kind":"Mover"`) && !strings.Contains(string(b), `"apiVersion":"example.com/v2"`) {
		t.Errorf("list at v2: %s", b)
	}
	code, _, b := c.do("PATCH", "/apis/example.com/v2/namespaces/default/movers/old", "", `{"data":{"b":"2"}}`, "Content-Type", "application/merge-patch+json")
	if got := decodeJSON(t, b); code != 200 || got["apiVersion"] != "example.com/v2" || !strings.Contains(string(b), `"b":"2"`) {
		t.Errorf("patch at v2 of an object stored at v1: %d %s", code, b)
	}
}
