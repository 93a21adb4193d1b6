package apiserver_test

import (
	"strings"
	"testing"
	"time"

	"github.com/kobune/kobune/apiserver/testserver"
	"github.com/kobune/kobune/client"
)

// TestAPIServices (issue #36): as kube-aggregator registers them, every
// group version served — built-in and a definition's — has an
// APIService, Available because it is served here (Local), and the one
// of a deleted definition goes with it; an APIService naming a Service to
// proxy to (an aggregated API, which Kobune does not serve) or a name
// that is not version.group is refused naming the field; one a user
// makes for a group version nobody serves says it is not available.
func TestAPIServices(t *testing.T) {
	s := testserver.New(t)
	c := newRESTClient(t, client.Config{}, s.Addr())
	const base = "/apis/apiregistration.k8s.io/v1/apiservices"
	available := func(name string) string {
		_, _, b := c.do("GET", base+"/"+name, "", "")
		o := decodeJSON(t, b)
		st, _ := o["status"].(map[string]any)
		conds, _ := st["conditions"].([]any)
		for _, cd := range conds {
			if cd := cd.(map[string]any); cd["type"] == "Available" {
				return cd["status"].(string) + "/" + cd["reason"].(string)
			}
		}
		return ""
	}
	wait := func(what string, ok func() bool) {
		t.Helper()
		for deadline := time.Now().Add(30 * time.Second); !ok(); time.Sleep(100 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: never", what)
			}
		}
	}
	for _, name := range []string{"v1.", "v1.apps", "v1.node.k8s.io", "v1.apiregistration.k8s.io", "v2.autoscaling", "v1.authentication.k8s.io"} {
		wait(name+" Available/Local", func() bool { return available(name) == "True/Local" })
	}
	_, _, b := c.do("GET", base+"/v1.apps", "", "")
	if o := decodeJSON(t, b); o["spec"].(map[string]any)["group"] != "apps" || o["metadata"].(map[string]any)["labels"].(map[string]any)["kube-aggregator.kubernetes.io/automanaged"] != "onstart" {
		t.Errorf("v1.apps: %s", b)
	}
	if _, _, b := c.do("GET", base, "application/json;as=Table;v=v1;g=meta.k8s.io", ""); !strings.Contains(string(b), `"AVAILABLE"`) || !strings.Contains(string(b), `"Local"`) {
		t.Errorf("the Table of APIServices: %s", b)
	}

	// A definition's group version comes and goes with it.
	crd := `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"gadgets.example.com"},` +
		`"spec":{"group":"example.com","scope":"Namespaced","names":{"plural":"gadgets","kind":"Gadget"},` +
		`"versions":[{"name":"v1alpha1","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object"}}}]}}`
	if code, _, b := c.do("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", "", crd); code != 201 {
		t.Fatalf("create the definition: %d %s", code, b)
	}
	wait("v1alpha1.example.com registered", func() bool { return available("v1alpha1.example.com") == "True/Local" })
	if code, _, b := c.do("DELETE", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/gadgets.example.com", "", ""); code != 200 {
		t.Fatalf("delete the definition: %d %s", code, b)
	}
	wait("v1alpha1.example.com gone with its definition", func() bool {
		code, _, _ := c.do("GET", base+"/v1alpha1.example.com", "", "")
		return code == 404
	})

	for _, bad := range []struct{ body, field string }{
		{`{"apiVersion":"apiregistration.k8s.io/v1","kind":"APIService","metadata":{"name":"v1beta1.metrics.k8s.io"},"spec":{"group":"metrics.k8s.io","version":"v1beta1",` +
			`"groupPriorityMinimum":100,"versionPriority":100,"service":{"namespace":"kube-system","name":"metrics-server"}}}`, "spec.service"},
		{`{"apiVersion":"apiregistration.k8s.io/v1","kind":"APIService","metadata":{"name":"wrong"},"spec":{"group":"a.io","version":"v1","groupPriorityMinimum":100,"versionPriority":100}}`, "metadata.name"},
		{`{"apiVersion":"apiregistration.k8s.io/v1","kind":"APIService","metadata":{"name":"v1.a.io"},"spec":{"group":"a.io","version":"v1","groupPriorityMinimum":0,"versionPriority":100}}`, "spec.groupPriorityMinimum"},
	} {
		if code, _, b := c.do("POST", base, "", bad.body); code != 422 || !strings.Contains(string(b), bad.field) {
			t.Errorf("%s: want 422 naming %s, got %d %s", bad.body, bad.field, code, b)
		}
	}
	if code, _, b := c.do("POST", base, "", `{"apiVersion":"apiregistration.k8s.io/v1","kind":"APIService","metadata":{"name":"v9.nowhere.io"},`+
		`"spec":{"group":"nowhere.io","version":"v9","groupPriorityMinimum":100,"versionPriority":100}}`); code != 201 {
		t.Fatalf("a local APIService of a group version nobody serves: %d %s", code, b)
	}
	wait("v9.nowhere.io not available", func() bool { return available("v9.nowhere.io") == "False/ServiceNotFound" })
}
