package apiserver_test

import (
	"strings"
	"testing"

	"github.com/kobune/kobune/apiserver/testserver"
	"github.com/kobune/kobune/client"
)

// TestReplicationControllerAPI (issue #36): ReplicationControllers are
// served in the core group with Kubernetes' defaults, validation, Table
// columns, the scale subresource (its selector from the equality
// selector) and discovery (short name rc, category all).
func TestReplicationControllerAPI(t *testing.T) {
	s := testserver.New(t)
	c := newRESTClient(t, client.Config{}, s.Addr())
	const base = "/api/v1/namespaces/default/replicationcontrollers"
	code, _, b := c.do("POST", base, "", `{"apiVersion":"v1","kind":"ReplicationController","metadata":{"name":"old"},
	  "spec":{"replicas":2,"template":{"metadata":{"labels":{"app":"old"}},"spec":{"containers":[{"name":"c","image":"kobune.local/labapp:1.0"}]}}}}`)
	if code != 201 || !strings.Contains(string(b), `"selector":{"app":"old"}`) || !strings.Contains(string(b), `"labels":{"app":"old"}`) {
		t.Fatalf("create: %d %s; want the selector and labels defaulted from the template", code, b)
	}
	for _, bad := range []struct{ body, field string }{
		{`{"metadata":{"name":"mismatch"},"spec":{"selector":{"app":"other"},"template":{"metadata":{"labels":{"app":"old"}},"spec":{"containers":[{"name":"c","image":"i"}]}}}}`, "spec.template.metadata.labels"},
		{`{"metadata":{"name":"notemplate"},"spec":{"selector":{"app":"x"}}}`, "spec.template"},
		{`{"metadata":{"name":"never"},"spec":{"template":{"metadata":{"labels":{"app":"n"}},"spec":{"restartPolicy":"Never","containers":[{"name":"c","image":"i"}]}}}}`, "spec.template.spec.restartPolicy"},
	} {
		if code, _, b := c.do("POST", base, "", bad.body); code != 422 || !strings.Contains(string(b), bad.field) {
			t.Errorf("an invalid ReplicationController: %d %s; want 422 naming %s", code, b, bad.field)
		}
	}
	code, _, b = c.do("GET", base, "application/json;as=Table;v=v1;g=meta.k8s.io", "")
	if code != 200 || !strings.Contains(string(b), `"name":"Desired"`) || !strings.Contains(string(b), `"cells":["old","2","0","0",`) {
		t.Errorf("table: %d %s", code, b)
	}
	code, _, b = c.do("GET", base+"/old/scale", "", "")
	if code != 200 || !strings.Contains(string(b), `"kind":"Scale"`) || !strings.Contains(string(b), `"spec":{"replicas":2}`) || !strings.Contains(string(b), `"selector":"app=old"`) {
		t.Errorf("scale: %d %s", code, b)
	}
	if code, _, b = c.do("PATCH", base+"/old/scale", "", `{"spec":{"replicas":5}}`, "Content-Type", "application/merge-patch+json"); code != 200 {
		t.Errorf("scale patch: %d %s", code, b)
	}
	if code, _, b = c.do("GET", base+"/old", "", ""); !strings.Contains(string(b), `"replicas":5`) {
		t.Errorf("after the scale patch: %d %s", code, b)
	}
	code, _, b = c.do("GET", "/api/v1", "", "")
	if code != 200 || !strings.Contains(string(b), `"name":"replicationcontrollers","singularName":"replicationcontroller","namespaced":true,"kind":"ReplicationController"`) ||
		!strings.Contains(string(b), `"shortNames":["rc"]`) || !strings.Contains(string(b), `"name":"replicationcontrollers/scale"`) {
		t.Errorf("discovery: %d %.2000s", code, b)
	}
}
