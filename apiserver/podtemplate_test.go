package apiserver_test

import (
	"strings"
	"testing"

	"github.com/kobune/kobune/apiserver/testserver"
	"github.com/kobune/kobune/client"
)

// TestPodTemplates (issue #36): core/v1 PodTemplates as Kubernetes'
// conformance tests drive them: created, listed by label, patched, read,
// replaced, printed as kubectl's Table, deleted as a collection by label;
// a template without a container is refused naming the field and not
// stored; the template's pod spec is defaulted as a workload's is.
func TestPodTemplates(t *testing.T) {
	s := testserver.New(t)
	c := newRESTClient(t, client.Config{}, s.Addr())
	const base = "/api/v1/namespaces/default/podtemplates"
	for _, name := range []string{"one", "two"} {
		body := `{"apiVersion":"v1","kind":"PodTemplate","metadata":{"name":"` + name + `","labels":{"podtemplate-set":"true"}},
			"template":{"metadata":{"labels":{"app":"web"}},"spec":{"containers":[{"name":"token-test","image":"kobune.local/labapp:1.0"}]}}}`
		if code, _, b := c.do("POST", base, "", body); code != 201 {
			t.Fatalf("create %s: %d %s", name, code, b)
		}
	}
	code, _, b := c.do("GET", base+"?labelSelector=podtemplate-set%3Dtrue", "", "")
	if items, _ := decodeJSON(t, b)["items"].([]any); code != 200 || len(items) != 2 {
		t.Fatalf("list by label: %d %s", code, b)
	}
	code, _, b = c.do("PATCH", base+"/one", "", `{"metadata":{"labels":{"podtemplate":"patched"}}}`, "Content-Type", "application/merge-patch+json")
	if code != 200 || !strings.Contains(string(b), `"podtemplate":"patched"`) {
		t.Fatalf("patch: %d %s", code, b)
	}
	code, _, b = c.do("GET", base+"/one", "", "")
	got := decodeJSON(t, b)
	spec := got["template"].(map[string]any)["spec"].(map[string]any)
	if code != 200 || spec["restartPolicy"] != "Always" || spec["dnsPolicy"] != "ClusterFirst" {
		t.Fatalf("get: %d, the template's pod spec not defaulted: %s", code, b)
	}
	code, _, b = c.do("GET", base, "application/json;as=Table;v=v1;g=meta.k8s.io,application/json", "")
	if code != 200 || !strings.Contains(string(b), `"POD LABELS"`) || !strings.Contains(string(b), `"kobune.local/labapp:1.0"`) || !strings.Contains(string(b), `"app=web"`) {
		t.Errorf("the Table of pod templates: %d %.600s", code, b)
	}
	code, _, b = c.do("POST", base, "", `{"apiVersion":"v1","kind":"PodTemplate","metadata":{"name":"empty"},"template":{"spec":{"containers":[]}}}`)
	if code != 422 || !strings.Contains(string(b), "template.spec.containers") {
		t.Errorf("a template without a container: %d %s; want 422 naming template.spec.containers", code, b)
	}
	if code, _, _ := c.do("GET", base+"/empty", "", ""); code != 404 {
		t.Errorf("a refused pod template was stored (GET: %d)", code)
	}
	if code, _, b := c.do("DELETE", base+"?labelSelector=podtemplate-set%3Dtrue", "", ""); code != 200 {
		t.Fatalf("delete the collection: %d %s", code, b)
	}
	code, _, b = c.do("GET", base, "", "")
	if items, _ := decodeJSON(t, b)["items"].([]any); code != 200 || len(items) != 0 {
		t.Errorf("after the collection delete: %d %s", code, b)
	}
}
