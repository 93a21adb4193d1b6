package apiserver_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/kobune/kobune/apiserver/testserver"
	"github.com/kobune/kobune/client"
)

// TestCustomResourceOpenAPI (issue #36): a definition's served versions are
// published in /openapi/v2 and /openapi/v3 as kube-apiserver publishes them
// (what kubectl explain reads, and what the conformance suite's
// CustomResourcePublishOpenAPI tests compare): the version's schema as
// written, with apiVersion, kind and metadata added, the group, version
// and kind marked, named com.example.v1.Gadget, with the kind's paths; a
// version no longer served leaves the documents, and v2 answers 304 to
// its ETag until something changes.
func TestCustomResourceOpenAPI(t *testing.T) {
	s := testserver.New(t)
	c := newRESTClient(t, client.Config{}, s.Addr())
	const crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
	schema := `{"type":"object","description":"A gadget for testing","properties":{"spec":{"type":"object","description":"What the gadget should be",` +
		`"properties":{"size":{"type":"integer","description":"How big, in cm","minimum":1},"parts":{"type":"array","items":{"type":"object","required":["name"],"properties":{"name":{"type":"string"}}}}}}}}`
	version := func(name string, served, storage bool) string {
		return `{"name":"` + name + `","served":` + map[bool]string{true: "true", false: "false"}[served] + `,"storage":` + map[bool]string{true: "true", false: "false"}[storage] +
			`,"schema":{"openAPIV3Schema":` + schema + `}}`
	}
	crd := func(v2Served bool) string {
		return `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"gadgets.example.com"},` +
			`"spec":{"group":"example.com","scope":"Namespaced","names":{"plural":"gadgets","kind":"Gadget"},"versions":[` +
			version("v1", true, true) + "," + version("v2", v2Served, false) + `]}}`
	}
	if code, _, b := c.do("POST", crds, "", crd(true)); code != 201 {
		t.Fatalf("create the definition: %d %s", code, b)
	}
	v2 := func() (map[string]any, string) {
		code, h, b := c.do("GET", "/openapi/v2", "application/json", "")
		if code != 200 {
			t.Fatalf("GET /openapi/v2: %d %s", code, b)
		}
		return decodeJSON(t, b)["definitions"].(map[string]any), h.Get("Etag")
	}
	var defs map[string]any
	var etag string
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if defs, etag = v2(); defs["com.example.v2.Gadget"] != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("com.example.v2.Gadget never in /openapi/v2")
		}
	}
	def, _ := defs["com.example.v1.Gadget"].(map[string]any)
	if def == nil {
		t.Fatalf("no com.example.v1.Gadget in /openapi/v2")
	}
	// What the conformance test compares: the schema as written, once
	// apiVersion, kind, metadata and the extension are taken out.
	got := map[string]any{}
	for k, v := range def {
		got[k] = v
	}
	props := map[string]any{}
	for k, v := range def["properties"].(map[string]any) {
		props[k] = v
	}
	if props["metadata"].(map[string]any)["$ref"] != "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta" || props["kind"] == nil || props["apiVersion"] == nil {
		t.Errorf("apiVersion, kind, metadata of the definition: %v", props)
	}
	if defs["io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"] == nil {
		t.Error("ObjectMeta, which the definition refers to, is not in the document")
	}
	delete(props, "metadata")
	delete(props, "apiVersion")
	delete(props, "kind")
	got["properties"] = props
	gvk, _ := json.Marshal(got["x-kubernetes-group-version-kind"])
	if string(gvk) != `[{"group":"example.com","kind":"Gadget","version":"v1"}]` {
		t.Errorf("x-kubernetes-group-version-kind: %s", gvk)
	}
	delete(got, "x-kubernetes-group-version-kind")
	var want map[string]any
	_ = json.Unmarshal([]byte(schema), &want)
	if a, b := string(mustMarshal(t, got)), string(mustMarshal(t, want)); a != b {
		t.Errorf("the published schema differs from the definition's:\n got %s\nwant %s", a, b)
	}
	code, _, b := c.do("GET", "/openapi/v2", "application/json", "", "If-None-Match", etag)
	if code != 304 {
		t.Errorf("/openapi/v2 with its ETag: %d %.100s; want 304", code, b)
	}

	// v3: the group version is listed, its document has the schema and
	// the kind's paths (kubectl explain finds the kind by its extension).
	url := openAPIV3Index(t, c)["apis/example.com/v1"]
	if url == "" {
		t.Fatalf("/openapi/v3 does not list apis/example.com/v1")
	}
	code, _, b = c.do("GET", url, "", "")
	if code != 200 {
		t.Fatalf("GET %s: %d", url, code)
	}
	doc := decodeJSON(t, b)
	gadget, _ := doc["components"].(map[string]any)["schemas"].(map[string]any)["com.example.v1.Gadget"].(map[string]any)
	if gadget == nil || !strings.Contains(string(mustMarshal(t, gadget)), `"description":"How big, in cm"`) {
		t.Errorf("the v3 document of example.com/v1 lacks the Gadget schema: %.400s", b)
	}
	if _, ok := doc["paths"].(map[string]any)["/apis/example.com/v1/namespaces/{namespace}/gadgets/{name}"]; !ok {
		t.Errorf("the v3 document of example.com/v1 lacks the gadgets paths: %v", doc["paths"])
	}

	// v2 no longer served: out of both documents; the ETag changes.
	_, _, cur := c.do("GET", crds+"/gadgets.example.com", "", "")
	rv := decodeJSON(t, cur)["metadata"].(map[string]any)["resourceVersion"].(string)
	upd := strings.Replace(crd(false), `"name":"gadgets.example.com"`, `"name":"gadgets.example.com","resourceVersion":"`+rv+`"`, 1)
	if code, _, b := c.do("PUT", crds+"/gadgets.example.com", "", upd); code != 200 {
		t.Fatalf("stop serving v2: %d %s", code, b)
	}
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		defs, tag := v2()
		if defs["com.example.v2.Gadget"] == nil {
			if defs["com.example.v1.Gadget"] == nil {
				t.Error("com.example.v1.Gadget left /openapi/v2 with v2")
			}
			if tag == etag {
				t.Error("the ETag of /openapi/v2 did not change")
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("com.example.v2.Gadget still in /openapi/v2 20 s after v2 stopped being served")
		}
	}
	_, _, b = c.do("GET", "/openapi/v3", "", "")
	if strings.Contains(string(b), "apis/example.com/v2") {
		t.Errorf("/openapi/v3 still lists example.com/v2: %.300s", b)
	}

	// A kind whose schema keeps every unknown field at its root is just an
	// object in v2 (kubectl validates with v2 and would refuse the unknown
	// fields); nested ones lose their properties there. v3 keeps them.
	anything := `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"anythings.example.com"},` +
		`"spec":{"group":"example.com","scope":"Namespaced","names":{"plural":"anythings","kind":"Anything"},"versions":[{"name":"v1","served":true,"storage":true,` +
		`"schema":{"openAPIV3Schema":{"type":"object","x-kubernetes-preserve-unknown-fields":true}}}]}}`
	open := `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"opens.example.com"},` +
		`"spec":{"group":"example.com","scope":"Namespaced","names":{"plural":"opens","kind":"Open"},"versions":[{"name":"v1","served":true,"storage":true,` +
		`"schema":{"openAPIV3Schema":{"type":"object","properties":{"spec":{"type":"object","x-kubernetes-preserve-unknown-fields":true,"properties":{"a":{"type":"string"}}}}}}}]}}`
	for _, body := range []string{anything, open} {
		if code, _, b := c.do("POST", crds, "", body); code != 201 {
			t.Fatalf("create a definition: %d %s", code, b)
		}
	}
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if defs, _ = v2(); defs["com.example.v1.Anything"] != nil && defs["com.example.v1.Open"] != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("com.example.v1.Anything or Open never in /openapi/v2")
		}
	}
	if got := string(mustMarshal(t, defs["com.example.v1.Anything"])); got != `{"type":"object","x-kubernetes-group-version-kind":[{"group":"example.com","kind":"Anything","version":"v1"}]}` {
		t.Errorf("v2 definition of a kind that keeps unknown fields at its root: %s", got)
	}
	spec := defs["com.example.v1.Open"].(map[string]any)["properties"].(map[string]any)["spec"]
	if got := string(mustMarshal(t, spec)); got != `{"x-kubernetes-preserve-unknown-fields":true}` {
		t.Errorf("v2 schema of a field that keeps unknown fields: %s; want no type and no properties", got)
	}
}

// openAPIV3Index is /openapi/v3: each group version's document URL.
func openAPIV3Index(t *testing.T, c *restClient) map[string]string {
	t.Helper()
	code, _, b := c.do("GET", "/openapi/v3", "", "")
	var index struct {
		Paths map[string]struct {
			ServerRelativeURL string `json:"serverRelativeURL"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(b, &index); code != 200 || err != nil {
		t.Fatalf("/openapi/v3: %d %v %.300s", code, err, b)
	}
	out := map[string]string{}
	for gv, p := range index.Paths {
		out[gv] = p.ServerRelativeURL
	}
	return out
}
