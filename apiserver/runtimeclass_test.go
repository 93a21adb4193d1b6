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

// TestPodsWithARuntimeClass: the RuntimeClass admission step refuses (403)
// a pod naming a missing class — also in a dry run, as the conformance
// suite asks —, copies a class's overhead into the pod and merges its
// scheduling, refuses a pod whose node selector contradicts it or that
// states an overhead of its own, and a pod of a class without overhead
// has none.
func TestPodsWithARuntimeClass(t *testing.T) {
	s := testserver.New(t)
	c := newRESTClient(t, client.Config{}, s.Addr())
	for _, rc := range []string{
		`{"apiVersion":"node.k8s.io/v1","kind":"RuntimeClass","metadata":{"name":"gvisor"},"handler":"runsc","overhead":{"podFixed":{"cpu":"10m","memory":"1Mi"}},` +
			`"scheduling":{"nodeSelector":{"sandbox":"yes"},"tolerations":[{"key":"sandbox","operator":"Exists"}]}}`,
		`{"apiVersion":"node.k8s.io/v1","kind":"RuntimeClass","metadata":{"name":"plain"},"handler":"runc"}`,
	} {
		if code, _, b := c.do("POST", "/apis/node.k8s.io/v1/runtimeclasses", "", rc); code != 201 {
			t.Fatalf("create a RuntimeClass: %d %s", code, b)
		}
	}
	pod := func(name, extra string) string {
		return `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"` + name + `"},"spec":{` + extra + `"containers":[{"name":"c","image":"i"}]}}`
	}
	const pods = "/api/v1/namespaces/default/pods"
	for _, bad := range []struct{ path, body, want string }{
		{pods, pod("missing", `"runtimeClassName":"nope",`), `pod rejected: RuntimeClass \"nope\" not found`},
		{pods + "?dryRun=All", pod("missing", `"runtimeClassName":"nope",`), `pod rejected: RuntimeClass \"nope\" not found`},
		{pods, pod("conflict", `"runtimeClassName":"gvisor","nodeSelector":{"sandbox":"no"},`), "conflict: runtimeClass.scheduling.nodeSelector[sandbox] = yes"},
		{pods, pod("own", `"overhead":{"cpu":"1"},`), "Pod Overhead set without corresponding RuntimeClass"},
	} {
		if code, _, b := c.do("POST", bad.path, "", bad.body); code != 403 || !strings.Contains(string(b), bad.want) {
			t.Errorf("%s: %d %s; want 403 saying %s", bad.body, code, b, bad.want)
		}
	}
	code, _, b := c.do("POST", pods, "", pod("sandboxed", `"runtimeClassName":"gvisor",`))
	if o := decodeJSON(t, b); code != 201 {
		t.Fatalf("a pod of class gvisor: %d %s", code, b)
	} else if spec := o["spec"].(map[string]any); spec["overhead"].(map[string]any)["cpu"] != "10m" || spec["nodeSelector"].(map[string]any)["sandbox"] != "yes" ||
		!strings.Contains(string(b), `{"key":"sandbox","operator":"Exists"}`) {
		t.Errorf("the class's overhead and scheduling in the pod: %s", b)
	}
	if code, _, b := c.do("POST", pods, "", pod("plain", `"runtimeClassName":"plain",`)); code != 201 || strings.Contains(string(b), `"overhead"`) {
		t.Errorf("a pod of a class without overhead: %d %s", code, b)
	}
}
