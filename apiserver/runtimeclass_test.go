package apiserver_test

import (
	"strings"
	"testing"

	"github.com/kobune/kobune/apiserver/testserver"
	"github.com/kobune/kobune/client"
)

// TestRuntimeClasses (issue #36): node.k8s.io/v1 RuntimeClasses are
// served as kube-apiserver serves them — discovery lists them, a create,
// read, list (a Table with HANDLER) and delete work, and a bad handler, an
// unknown overhead resource or a changed handler are refused naming the
// field.
func TestRuntimeClasses(t *testing.T) {
	s := testserver.New(t)
	c := newRESTClient(t, client.Config{}, s.Addr())
	const base = "/apis/node.k8s.io/v1/runtimeclasses"
	if _, _, b := c.do("GET", "/apis/node.k8s.io/v1", "", ""); !strings.Contains(string(b), `"name":"runtimeclasses"`) {
		t.Errorf("discovery of node.k8s.io/v1 lists no runtimeclasses: %s", b)
	}
	rc := `{"apiVersion":"node.k8s.io/v1","kind":"RuntimeClass","metadata":{"name":"gvisor"},"handler":"runsc",` +
		`"overhead":{"podFixed":{"cpu":"250m","memory":"120Mi"}},"scheduling":{"nodeSelector":{"sandbox":"yes"},"tolerations":[{"key":"sandbox","operator":"Exists"}]}}`
	if code, _, b := c.do("POST", base, "", rc); code != 201 {
		t.Fatalf("create a RuntimeClass: %d %s", code, b)
	}
	_, _, b := c.do("GET", base+"/gvisor", "", "")
	if o := decodeJSON(t, b); o["handler"] != "runsc" || o["overhead"].(map[string]any)["podFixed"].(map[string]any)["memory"] != "120Mi" {
		t.Errorf("read back: %s", b)
	}
	if _, _, b := c.do("GET", base, "application/json;as=Table;v=v1;g=meta.k8s.io", ""); !strings.Contains(string(b), `"HANDLER"`) || !strings.Contains(string(b), `"runsc"`) {
		t.Errorf("the Table has no HANDLER runsc: %s", b)
	}
	for _, bad := range []struct{ body, field string }{
		{`{"apiVersion":"node.k8s.io/v1","kind":"RuntimeClass","metadata":{"name":"bad"},"handler":"Not_A_Label"}`, "handler"},
		{`{"apiVersion":"node.k8s.io/v1","kind":"RuntimeClass","metadata":{"name":"bad"}}`, "handler"},
		{`{"apiVersion":"node.k8s.io/v1","kind":"RuntimeClass","metadata":{"name":"bad"},"handler":"runc","overhead":{"podFixed":{"pods":"1"}}}`, "overhead.podFixed[pods]"},
		{`{"apiVersion":"node.k8s.io/v1","kind":"RuntimeClass","metadata":{"name":"bad"},"handler":"runc","scheduling":{"tolerations":[{"key":"a","operator":"Exists","value":"x"}]}}`, "scheduling.tolerations[0].value"},
	} {
		if code, _, b := c.do("POST", base, "", bad.body); code != 422 || !strings.Contains(string(b), bad.field) {
			t.Errorf("%s: want 422 naming %s, got %d %s", bad.body, bad.field, code, b)
		}
	}
	if code, _, b := c.do("PATCH", base+"/gvisor", "", `{"handler":"kata"}`, "Content-Type", "application/merge-patch+json"); code != 422 || !strings.Contains(string(b), "handler") {
		t.Errorf("changing the handler: want 422 naming handler, got %d %s", code, b)
	}
	if code, _, b := c.do("DELETE", base+"/gvisor", "", ""); code != 200 {
		t.Errorf("delete: %d %s", code, b)
	}
	if code, _, _ := c.do("GET", base+"/gvisor", "", ""); code != 404 {
		t.Errorf("after delete: %d", code)
	}
}
