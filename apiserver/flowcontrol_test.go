package apiserver_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/kobune/kobune/api/rbac"
	"github.com/kobune/kobune/client"
)

// TestPriorityAndFairness (issue #35): API Priority and Fairness as a
// user of kube-apiserver meets it. The cluster starts with Kubernetes'
// FlowSchemas and PriorityLevelConfigurations; every response names the
// schema and level that classified it (X-Kubernetes-PF-* headers); a
// schema and level an administrator adds take effect at once — here one
// that gives a user no seat, so that the user's requests are refused with
// 429 and Retry-After while another user and the administrator are
// served, and the user's watches too, which hold seats while they send
// their initial events — and deleting the schema gives the user back
// the defaults.
// Invalid objects are refused naming the field.
func TestPriorityAndFairness(t *testing.T) {
	s := startSecured(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, u := range []string{"viewer", "other"} {
		if _, err := client.For[*rbac.RoleBinding](s.Client).Create(ctx, binding("default", u, "ClusterRole", "view", userSubject(u))); err != nil {
			t.Fatal(err)
		}
	}
	admin := newRESTClient(t, s.admin, s.Addr())
	viewer := newRESTClient(t, s.configAs(t, "viewer"), s.Addr())
	other := newRESTClient(t, s.configAs(t, "other"), s.Addr())
	const base = "/apis/flowcontrol.apiserver.k8s.io/v1/"

	uids := func(resource string) map[string]string {
		code, _, b := admin.do("GET", base+resource, "", "")
		if code != 200 {
			t.Fatalf("list %s: %d %s", resource, code, b)
		}
		out := map[string]string{}
		for _, it := range decodeJSON(t, b)["items"].([]any) {
			m := it.(map[string]any)["metadata"].(map[string]any)
			out[m["name"].(string)] = m["uid"].(string)
		}
		return out
	}
	schemas, levels := uids("flowschemas"), uids("prioritylevelconfigurations")
	for _, name := range []string{"exempt", "probes", "system-leader-election", "endpoint-controller", "workload-leader-election", "system-node-high",
		"system-nodes", "kube-controller-manager", "kube-scheduler", "kube-system-service-accounts", "service-accounts", "global-default", "catch-all"} {
		if schemas[name] == "" {
			t.Errorf("FlowSchema %s missing: have %v", name, schemas)
		}
	}
	for _, name := range []string{"exempt", "system", "node-high", "leader-election", "workload-high", "workload-low", "global-default", "catch-all"} {
		if levels[name] == "" {
			t.Errorf("PriorityLevelConfiguration %s missing: have %v", name, levels)
		}
	}

	// kubectl get flowschemas: the columns kube-apiserver's Table has.
	code, _, tb := admin.do("GET", base+"flowschemas", "application/json;as=Table;v=v1;g=meta.k8s.io,application/json", "")
	if code != 200 || !strings.Contains(string(tb), "PRIORITYLEVEL") || !strings.Contains(string(tb), `"global-default"`) {
		t.Errorf("flow schemas as a Table: %d %.300s", code, tb)
	}

	// The view binding reaches the authorizer through its watch.
	get := func(c *restClient) (int, map[string][]string, string) {
		code, h, b := c.do("GET", "/api/v1/namespaces/default/configmaps", "", "")
		return code, h, string(b)
	}
	until(t, "the viewer's binding takes effect", func() bool { code, _, _ := get(viewer); return code == 200 })
	code, h, _ := get(viewer)
	if fs, pl := first(h, "X-Kubernetes-Pf-Flowschema-Uid"), first(h, "X-Kubernetes-Pf-Prioritylevel-Uid"); code != 200 || fs != schemas["global-default"] || pl != levels["global-default"] {
		t.Fatalf("viewer's list: %d, flow schema UID %q priority level UID %q; want 200 and global-default's %q %q", code, fs, pl, schemas["global-default"], levels["global-default"])
	}
	_, h, _ = get(admin)
	if fs := first(h, "X-Kubernetes-Pf-Flowschema-Uid"); fs != schemas["exempt"] {
		t.Fatalf("admin's list classified as %q, want the exempt schema %q", fs, schemas["exempt"])
	}

	// A level with no seat of its own and no borrowing, that rejects.
	if code, _, b := admin.do("POST", base+"prioritylevelconfigurations", "", `{"apiVersion":"flowcontrol.apiserver.k8s.io/v1","kind":"PriorityLevelConfiguration",
		"metadata":{"name":"starved"},"spec":{"type":"Limited","limited":{"nominalConcurrencyShares":0,"borrowingLimitPercent":0,"limitResponse":{"type":"Reject"}}}}`); code != 201 {
		t.Fatalf("create level: %d %s", code, b)
	}
	if code, _, b := admin.do("POST", base+"flowschemas", "", `{"apiVersion":"flowcontrol.apiserver.k8s.io/v1","kind":"FlowSchema",
		"metadata":{"name":"starve-viewer"},"spec":{"priorityLevelConfiguration":{"name":"starved"},"matchingPrecedence":500,
		"distinguisherMethod":{"type":"ByUser"},"rules":[{"subjects":[{"kind":"User","user":{"name":"viewer"}}],
		"resourceRules":[{"verbs":["*"],"apiGroups":["*"],"resources":["*"],"clusterScope":true,"namespaces":["*"]}]}]}}`); code != 201 {
		t.Fatalf("create schema: %d %s", code, b)
	}
	until(t, "the viewer's requests are refused by the new level", func() bool { code, _, _ := get(viewer); return code == 429 })
	code, h, body := get(viewer)
	if code != 429 || first(h, "Retry-After") == "" || !strings.Contains(body, `priority level \"starved\"`) {
		t.Fatalf("viewer under a level without seats: %d Retry-After %q %s; want 429 with Retry-After naming the level", code, first(h, "Retry-After"), body)
	}
	if fs := first(h, "X-Kubernetes-Pf-Flowschema-Uid"); fs == "" || fs == schemas["global-default"] {
		t.Fatalf("the refusal names flow schema %q, want starve-viewer's UID", fs)
	}
	// A watch holds seats while it sends its initial events: refused too.
	if code, _, b := viewer.do("GET", "/api/v1/namespaces/default/configmaps?watch=true&timeoutSeconds=1", "", ""); code != 429 {
		t.Fatalf("viewer's watch under a level without seats: %d %s; want 429", code, b)
	}
	if code, _, b := get(other); code != 200 {
		t.Fatalf("another user while the viewer is starved: %d %s", code, b)
	}
	if code, _, b := get(admin); code != 200 {
		t.Fatalf("the administrator while the viewer is starved: %d %s", code, b)
	}
	if code, _, b := admin.do("DELETE", base+"flowschemas/starve-viewer", "", ""); code != 200 {
		t.Fatalf("delete schema: %d %s", code, b)
	}
	until(t, "the viewer is served again once the schema is gone", func() bool { code, _, _ := get(viewer); return code == 200 })

	// The mandatory objects stay: without catch-all, a request no schema
	// matched would run unlimited.
	for _, path := range []string{"flowschemas/catch-all", "flowschemas/exempt", "prioritylevelconfigurations/catch-all", "prioritylevelconfigurations/exempt"} {
		if code, _, b := admin.do("DELETE", base+path, "", ""); code != 403 || !strings.Contains(string(b), "mandatory") {
			t.Errorf("delete %s: %d %s; want 403 naming it mandatory", path, code, b)
		}
	}
	if code, _, b := admin.do("DELETE", base+"flowschemas?labelSelector=", "", ""); code != 200 && code != 403 {
		t.Errorf("collection delete of flow schemas: %d %s", code, b)
	}
	if uids("flowschemas")["catch-all"] == "" || uids("prioritylevelconfigurations")["exempt"] == "" {
		t.Error("a collection delete removed a mandatory object")
	}

	// Bad objects: a clear error naming the field, nothing stored.
	for _, c := range []struct{ resource, body, field string }{
		{"flowschemas", `{"apiVersion":"flowcontrol.apiserver.k8s.io/v1","kind":"FlowSchema","metadata":{"name":"bad"},"spec":{"priorityLevelConfiguration":{"name":"x"},"distinguisherMethod":{"type":"ByBanana"}}}`, "spec.distinguisherMethod.type"},
		{"flowschemas", `{"apiVersion":"flowcontrol.apiserver.k8s.io/v1","kind":"FlowSchema","metadata":{"name":"bad"},"spec":{"priorityLevelConfiguration":{"name":"x"},"matchingPrecedence":20000}}`, "spec.matchingPrecedence"},
		{"prioritylevelconfigurations", `{"apiVersion":"flowcontrol.apiserver.k8s.io/v1","kind":"PriorityLevelConfiguration","metadata":{"name":"bad"},"spec":{"type":"Limited","limited":{"limitResponse":{"type":"Queue","queuing":{"queues":4,"handSize":8}}}}}`, "spec.limited.limitResponse.queuing.handSize"},
		{"prioritylevelconfigurations", `{"apiVersion":"flowcontrol.apiserver.k8s.io/v1","kind":"PriorityLevelConfiguration","metadata":{"name":"bad"},"spec":{"type":"Exempt"}}`, "spec.type"},
	} {
		code, _, b := admin.do("POST", base+c.resource, "", c.body)
		if code != 422 || !strings.Contains(string(b), c.field) {
			t.Errorf("create %s: %d %s; want 422 naming %s", c.resource, code, b, c.field)
		}
		if code, _, _ := admin.do("GET", base+c.resource+"/bad", "", ""); code != 404 {
			t.Errorf("a refused %s was stored (GET: %d)", c.resource, code)
		}
	}
}

func first(h map[string][]string, key string) string {
	if v := h[key]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// until retries cond until it holds, as eventually does for errors.
func until(t *testing.T, what string, cond func() bool) {
	t.Helper()
	eventually(t, what, func() error {
		if !cond() {
			return errors.New("not yet")
		}
		return nil
	})
}
