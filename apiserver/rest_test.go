package apiserver_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/api/policy"
	"github.com/kobune/kobune/apiserver"
	"github.com/kobune/kobune/apiserver/rest"
	"github.com/kobune/kobune/apiserver/testserver"
	"github.com/kobune/kobune/client"
	"github.com/kobune/kobune/proto/apipb"
)

// restClient talks to the REST API the way client-go does (HTTP/2 over
// TLS with the kubeconfig's certificate, or HTTP/1.1 in plaintext).
type restClient struct {
	t    *testing.T
	base string
	http *http.Client
}

func newRESTClient(t *testing.T, cfg client.Config, addr string) *restClient {
	t.Helper()
	if !strings.HasPrefix(cfg.Server, "https://") {
		return &restClient{t: t, base: "http://" + addr, http: &http.Client{Timeout: 30 * time.Second}}
	}
	tc, err := client.TLSConfig(cfg, addr)
	if err != nil {
		t.Fatal(err)
	}
	tc.NextProtos = []string{"h2", "http/1.1"}
	return &restClient{t: t, base: "https://" + addr, http: &http.Client{Timeout: 30 * time.Second,
		Transport: &http.Transport{TLSClientConfig: tc, ForceAttemptHTTP2: true}}}
}

func (c *restClient) do(method, path, accept string, body string, header ...string) (int, http.Header, []byte) {
	c.t.Helper()
	req, err := http.NewRequest(method, c.base+path, strings.NewReader(body))
	if err != nil {
		c.t.Fatal(err)
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := c.http.Do(req)
	if err != nil {
		c.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, b
}

func decodeJSON(t *testing.T, b []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("not JSON: %v: %s", err, b)
	}
	return m
}

// TestRESTServesKubernetesAPIBesideGRPC: on the one port, the REST API
// answers what kubectl asks (version, both discovery forms, verbs, Tables,
// Status errors, watch lines), while the gRPC client keeps working.
func TestRESTServesKubernetesAPIBesideGRPC(t *testing.T) {
	for _, secure := range []bool{false, true} {
		t.Run(map[bool]string{false: "plaintext", true: "tls"}[secure], func(t *testing.T) {
			var c *restClient
			var grpcClient *client.Client
			if secure {
				s := startSecured(t)
				c, grpcClient = newRESTClient(t, s.admin, s.Addr()), s.Client
			} else {
				s := testserver.New(t)
				c, grpcClient = newRESTClient(t, client.Config{}, s.Addr()), s.Client
			}
			testRESTVerbs(t, c, grpcClient)
		})
	}
}

func testRESTVerbs(t *testing.T, c *restClient, grpcClient *client.Client) {
	code, _, b := c.do("GET", "/version", "", "")
	if v := decodeJSON(t, b); code != 200 || v["major"] != "1" || !strings.Contains(v["gitVersion"].(string), "kobune") {
		t.Fatalf("/version: %d %s", code, b)
	}
	code, hdr, b := c.do("GET", "/apis", "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json", "")
	if code != 200 || !strings.Contains(hdr.Get("Content-Type"), "as=APIGroupDiscoveryList") || !bytes.Contains(b, []byte(`"resource":"deployments"`)) ||
		!bytes.Contains(b, []byte(`"subresource":"status"`)) {
		t.Fatalf("aggregated /apis: %d %s %.300s", code, hdr.Get("Content-Type"), b)
	}
	// events.k8s.io/v1 serves core Events in a group of its own: both
	// lists name that group (the conformance suite's discovery tests).
	if !bytes.Contains(b, []byte(`{"metadata":{"name":"events.k8s.io"},"versions":[{"version":"v1","resources":[{"resource":"events"`)) {
		t.Errorf("aggregated /apis has no events.k8s.io/v1 events: %s", b)
	}
	if _, _, b := c.do("GET", "/apis", "application/json", ""); !bytes.Contains(b, []byte(`"name":"events.k8s.io"`)) {
		t.Errorf("/apis lists no events.k8s.io group: %s", b)
	}
	// With a trailing slash too, as kube-apiserver serves them (the
	// conformance suite's discovery test asks for /apis/).
	for path, want := range map[string]string{"/apis/": `"kind":"APIGroupList"`, "/api/": `"kind":"APIVersions"`} {
		if code, _, b := c.do("GET", path, "application/json", ""); code != 200 || !bytes.Contains(b, []byte(want)) {
			t.Errorf("GET %s: %d %.200s", path, code, b)
		}
	}
	code, _, b = c.do("GET", "/api/v1", "application/json", "")
	if code != 200 || !bytes.Contains(b, []byte(`"name":"pods","singularName":"pod","namespaced":true,"kind":"Pod"`)) || !bytes.Contains(b, []byte(`"categories":["all"]`)) {
		t.Fatalf("/api/v1: %d %.400s", code, b)
	}

	cm := `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"demo","labels":{"app":"x"}},"data":{"a":"1"}}`
	code, _, b = c.do("POST", "/api/v1/namespaces/default/configmaps", "", cm)
	if code != 201 || decodeJSON(t, b)["metadata"].(map[string]any)["uid"] == "" {
		t.Fatalf("create: %d %s", code, b)
	}
	code, _, b = c.do("POST", "/api/v1/namespaces/default/configmaps", "", cm)
	if st := decodeJSON(t, b); code != 409 || st["kind"] != "Status" || st["reason"] != "AlreadyExists" || st["message"] != `configmaps "demo" already exists` {
		t.Fatalf("create again: %d %s", code, b)
	}
	// The gRPC API on the same port sees what REST wrote.
	if _, err := grpcClient.API.Get(context.Background(), &apipb.GetRequest{Resource: "configmaps", Namespace: "default", Name: "demo"}); err != nil {
		t.Fatalf("gRPC get of a REST-created object: %v", err)
	}
	code, _, b = c.do("GET", "/api/v1/namespaces/default/configmaps/demo", "", "")
	got := decodeJSON(t, b)
	if code != 200 || got["data"].(map[string]any)["a"] != "1" {
		t.Fatalf("get: %d %s", code, b)
	}
	code, _, b = c.do("GET", "/api/v1/namespaces/default/configmaps/nope", "", "")
	if st := decodeJSON(t, b); code != 404 || st["reason"] != "NotFound" || st["details"].(map[string]any)["kind"] != "configmaps" {
		t.Fatalf("get missing: %d %s", code, b)
	}
	code, _, b = c.do("GET", "/api/v1/configmaps?labelSelector=app%3Dx", "", "")
	list := decodeJSON(t, b)
	if code != 200 || list["kind"] != "ConfigMapList" || len(list["items"].([]any)) != 1 || list["metadata"].(map[string]any)["resourceVersion"] == "" {
		t.Fatalf("list: %d %s", code, b)
	}
	rv := list["metadata"].(map[string]any)["resourceVersion"].(string)
	code, _, b = c.do("GET", "/api/v1/namespaces/default/configmaps", "application/json;as=Table;v=v1;g=meta.k8s.io,application/json", "")
	tbl := decodeJSON(t, b)
	if code != 200 || tbl["kind"] != "Table" || !bytes.Contains(b, []byte(`"cells":["demo","1",`)) || !bytes.Contains(b, []byte(`"name":"Data"`)) {
		t.Fatalf("table: %d %s", code, b)
	}
	// Writes answer with a Table too when asked for one first; a review
	// has no Table form: 406 when nothing else is accepted, JSON when it is.
	code, _, b = c.do("POST", "/api/v1/namespaces/kube-system/configmaps", "application/json;as=Table;v=v1;g=meta.k8s.io",
		`{"metadata":{"name":"as-table"},"data":{"k":"v"}}`)
	if code != 201 || !bytes.Contains(b, []byte(`"kind":"Table"`)) || !bytes.Contains(b, []byte(`"cells":["as-table","1",`)) {
		t.Fatalf("create as Table: %d %s", code, b)
	}
	ssar := `{"apiVersion":"authorization.k8s.io/v1","kind":"SelfSubjectAccessReview","spec":{"nonResourceAttributes":{"path":"/","verb":"get"}}}`
	code, _, b = c.do("POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", "application/json;as=Table;v=v1;g=meta.k8s.io", ssar)
	if st := decodeJSON(t, b); code != 406 || st["reason"] != "NotAcceptable" {
		t.Fatalf("review as Table only: want 406, got %d %s", code, b)
	}
	code, _, b = c.do("POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", "application/json;as=Table;v=v1;g=meta.k8s.io,application/json", ssar)
	if code != 201 || !bytes.Contains(b, []byte(`"allowed":true`)) {
		t.Fatalf("review with a JSON fallback: %d %s (Kubernetes answers a review 201 Created)", code, b)
	}

	// A watch from the list's revision sees the update as one JSON line.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", c.base+"/api/v1/namespaces/default/configmaps?watch=true&resourceVersion="+rv, nil)
	resp, err := c.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	got["data"] = map[string]any{"a": "2"}
	upd, _ := json.Marshal(got)
	if code, _, b = c.do("PUT", "/api/v1/namespaces/default/configmaps/demo", "", string(upd)); code != 200 {
		t.Fatalf("update: %d %s", code, b)
	}
	line, err := bufio.NewReader(resp.Body).ReadBytes('\n')
	if err != nil || !bytes.HasPrefix(line, []byte(`{"type":"MODIFIED","object":{`)) || !bytes.Contains(line, []byte(`"a":"2"`)) {
		t.Fatalf("watch event: %v %s", err, line)
	}
	// The same update again carries a revision that is no longer current.
	if code, _, b = c.do("PUT", "/api/v1/namespaces/default/configmaps/demo", "", string(upd)); code != 409 || decodeJSON(t, b)["reason"] != "Conflict" {
		t.Fatalf("stale update: %d %s", code, b)
	}
	if code, _, b = c.do("PUT", "/api/v1/namespaces/default/configmaps/other", "", string(upd)); code != 400 {
		t.Fatalf("update with a name that is not the URL's: %d %s", code, b)
	}
	if code, _, b = c.do("POST", "/api/v1/namespaces/default/configmaps", "", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"Bad_Name"}}`); code != 422 || decodeJSON(t, b)["reason"] != "Invalid" ||
		!bytes.Contains(b, []byte(`"causes":[{"reason":"FieldValueInvalid","message":"Invalid value: \"Bad_Name\"`)) || !bytes.Contains(b, []byte(`"field":"metadata.name"`)) {
		t.Fatalf("invalid create (with the field's cause): %d %s", code, b)
	}
	if code, _, b = c.do("DELETE", "/api/v1/namespaces/default/configmaps/demo", "", `{"kind":"DeleteOptions","apiVersion":"v1","propagationPolicy":"Background"}`); code != 200 {
		t.Fatalf("delete: %d %s", code, b)
	}
	if code, _, _ = c.do("GET", "/api/v1/namespaces/default/configmaps/demo", "", ""); code != 404 {
		t.Fatalf("get after delete: %d", code)
	}
	if code, _, b = c.do("GET", "/apis/apps/v1/namespaces/default/widgets", "", ""); code != 404 {
		t.Fatalf("unknown resource: %d %s", code, b)
	}
	if code, _, b = c.do("GET", "/readyz", "", ""); code != 200 || string(b) != "ok\n" {
		t.Fatalf("/readyz: %d %q", code, b)
	}
}

// TestRESTAuthenticatesAndAuthorizesLikeGRPC: over TLS, a caller with no
// certificate is refused with a 401 Status, a user without rights gets a
// 403 naming the missing permission, both from the same code as gRPC.
func TestRESTAuthenticatesAndAuthorizesLikeGRPC(t *testing.T) {
	s := startSecured(t)
	anon := s.admin
	anon.Cert, anon.Key = nil, nil
	c := newRESTClient(t, anon, s.Addr())
	code, _, b := c.do("GET", "/api/v1/pods", "", "")
	if st := decodeJSON(t, b); code != 401 || st["reason"] != "Unauthorized" {
		t.Fatalf("anonymous list: %d %s", code, b)
	}
	// Health needs no credentials, as in Kubernetes.
	if code, _, b = c.do("GET", "/livez", "", ""); code != 200 {
		t.Fatalf("anonymous /livez: %d %s", code, b)
	}
	admin := newRESTClient(t, s.admin, s.Addr())
	code, _, b = admin.do("GET", "/api/v1/namespaces/default/pods", "", "", "Impersonate-User", "dev")
	if st := decodeJSON(t, b); code != 403 || st["reason"] != "Forbidden" || !strings.Contains(st["message"].(string), `User "dev" cannot list resource "pods"`) {
		t.Fatalf("impersonated list without rights: %d %s", code, b)
	}
	// A connection that never finishes its handshake does not stop others.
	idle, err := net.Dial("tcp", s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	if code, _, _ = admin.do("GET", "/api", "", ""); code != 200 {
		t.Fatalf("/api as admin: %d", code)
	}
}

// TestRESTAuthenticatesBeforeReadingTheBody (issue #35): a write from a
// caller the server refuses is refused before its body is read — YAML
// and protobuf bodies of anonymous callers were read and decoded first.
// Each body here is sent in part and never finished: the answer must come
// anyway. Without credentials the answer is a 401; with anonymous
// requests allowed (kobeadm's --anonymous-auth), RBAC's 403 for what
// system:anonymous may not do.
func TestRESTAuthenticatesBeforeReadingTheBody(t *testing.T) {
	unfinished := func(c *restClient, contentType string) (int, string) {
		t.Helper()
		pr, pw := io.Pipe()
		defer pw.Close()
		go func() {
			// The start of a body; the rest never comes.
			_, _ = pw.Write([]byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\ndata:\n  v: '" + strings.Repeat("x", 4096)))
		}()
		req, err := http.NewRequest("POST", c.base+"/api/v1/namespaces/default/configmaps", pr)
		if err != nil {
			t.Fatal(err)
		}
		req.ContentLength = 8 << 20
		req.Header.Set("Content-Type", contentType)
		cl := *c.http
		cl.Timeout = 10 * time.Second
		resp, err := cl.Do(req)
		if err != nil {
			t.Fatalf("%s body never finished: no answer: %v (the server waits for the body before it authenticates)", contentType, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	s := startSecured(t)
	anon := s.admin
	anon.Cert, anon.Key = nil, nil
	for _, ct := range []string{"application/yaml", "application/vnd.kubernetes.protobuf"} {
		if code, b := unfinished(newRESTClient(t, anon, s.Addr()), ct); code != 401 {
			t.Errorf("anonymous %s create: %d %s; want 401", ct, code, b)
		}
	}
	// Refused before the body is read, the requests are still counted in
	// the request metrics and (the 403s) written to the audit log, as
	// every other refusal is.
	metrics := func(addr string) string {
		resp, err := http.Get("http://" + addr + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	if m := metrics(s.MetricsAddr()); !strings.Contains(m, `kobune_apiserver_requests_total{code="Unauthenticated",resource="configmaps",verb="create"} 2`) {
		t.Errorf("the two 401s given before the body was read are not in the request metrics")
	}
	dir := t.TempDir()
	policy, logPath := filepath.Join(dir, "policy.yaml"), filepath.Join(dir, "audit.log")
	if err := os.WriteFile(policy, []byte("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	open := startSecured(t, func(c *apiserver.Config) {
		c.AnonymousAuth = true
		c.AuditPolicyFile, c.AuditLogPath = policy, logPath
	})
	anon = open.admin
	anon.Cert, anon.Key = nil, nil
	for _, ct := range []string{"application/yaml", "application/vnd.kubernetes.protobuf"} {
		if code, b := unfinished(newRESTClient(t, anon, open.Addr()), ct); code != 403 || !strings.Contains(b, `User \"system:anonymous\" cannot create resource \"configmaps\"`) {
			t.Errorf("anonymous %s create with anonymous requests allowed: %d %s; want 403", ct, code, b)
		}
	}
	if m := metrics(open.MetricsAddr()); !strings.Contains(m, `kobune_apiserver_requests_total{code="PermissionDenied",resource="configmaps",verb="create"} 2`) {
		t.Errorf("the two 403s given before the body was read are not in the request metrics")
	}
	until(t, "the 403s given before the body was read are in the audit log", func() bool {
		b, _ := os.ReadFile(logPath)
		n := 0
		for _, line := range strings.Split(string(b), "\n") {
			if strings.Contains(line, `"verb":"create"`) && strings.Contains(line, `"username":"system:anonymous"`) &&
				strings.Contains(line, `"resource":"configmaps"`) && strings.Contains(line, `"code":403`) {
				n++
			}
		}
		return n == 2
	})
	// An admin's write still goes through (authenticated once, before the body).
	admin := newRESTClient(t, open.admin, open.Addr())
	if code, _, b := admin.do("POST", "/api/v1/namespaces/default/configmaps", "", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: ok}\n", "Content-Type", "application/yaml"); code != 201 {
		t.Errorf("admin create: %d %s", code, b)
	}
}

// TestRESTFieldValidationTellsTyposFromUnsupported: under Strict (what
// kubectl sends) a typo is a 400 naming the field, as kube-apiserver
// answers; a Kubernetes field Kobune lacks is stored with a Warning header
// naming it; KobuneStrict refuses that too.
func TestRESTFieldValidationTellsTyposFromUnsupported(t *testing.T) {
	s := testserver.New(t)
	c := newRESTClient(t, client.Config{}, s.Addr())
	typo := `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"containers":[{"name":"c","image":"i","imagePullPolcy":"Always"}]}}`
	code, _, b := c.do("POST", "/api/v1/namespaces/default/pods?fieldValidation=Strict", "", typo)
	if st := decodeJSON(t, b); code != 400 || st["reason"] != "BadRequest" ||
		st["message"] != `Pod in version "v1" cannot be handled as a Pod: strict decoding error: unknown field "spec.containers[0].imagePullPolcy"` {
		t.Fatalf("typo under Strict: %d %s", code, b)
	}
	code, hdr, b := c.do("POST", "/api/v1/namespaces/default/pods?fieldValidation=Warn", "", strings.Replace(typo, `"name":"p"`, `"name":"w"`, 1))
	if code != 201 || !strings.Contains(hdr.Get("Warning"), `unknown field \"spec.containers[0].imagePullPolcy\"`) {
		t.Fatalf("typo under Warn: %d %q %s", code, hdr.Values("Warning"), b)
	}
	// A key twice in one object (Go keeps the last) is named too, after the
	// unknown fields, as Kubernetes' strict decoding names it.
	dup := `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d"},"spec":{"unknownField":1,"replicas":1,"replicas":2,` +
		`"selector":{"matchLabels":{"a":"b"}},"template":{"metadata":{"labels":{"a":"b"}},"spec":{"containers":[{"name":"c","image":"i"}]}}}}`
	code, _, b = c.do("POST", "/apis/apps/v1/namespaces/default/deployments?fieldValidation=Strict", "", dup)
	if code != 400 || !strings.Contains(string(b), `strict decoding error: unknown field \"spec.unknownField\", duplicate field \"spec.replicas\"`) {
		t.Fatalf("a duplicate field under Strict: %d %s", code, b)
	}
	code, hdr, b = c.do("POST", "/apis/apps/v1/namespaces/default/deployments?fieldValidation=Warn", "", strings.Replace(dup, `"unknownField":1,`, "", 1))
	if code != 201 || !strings.Contains(hdr.Get("Warning"), `duplicate field \"spec.replicas\"`) {
		t.Fatalf("a duplicate field under Warn: %d %q %s", code, hdr.Values("Warning"), b)
	}
	unsupported := `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"u"},"spec":{"os":{"name":"linux"},"containers":[{"name":"c","image":"i"}]}}`
	code, hdr, b = c.do("POST", "/api/v1/namespaces/default/pods?fieldValidation=Strict", "", unsupported)
	if code != 201 || !strings.Contains(hdr.Get("Warning"), "spec.os: not supported by kobune") {
		t.Fatalf("unsupported field under Strict: %d %q %s", code, hdr.Values("Warning"), b)
	}
	code, _, b = c.do("POST", "/api/v1/namespaces/default/pods?fieldValidation=KobuneStrict", "", strings.Replace(unsupported, `"name":"u"`, `"name":"v"`, 1))
	if code != 422 || !strings.Contains(string(b), "spec.os: Forbidden: not supported by kobune") ||
		!strings.Contains(string(b), `"causes":[{"reason":"FieldValueForbidden","message":"Forbidden: not supported by kobune (KobuneStrict field validation)","field":"spec.os"}]`) {
		t.Fatalf("unsupported field under KobuneStrict: %d %s", code, b)
	}
	// Fields Kobune's types keep (so that they round-trip) but do not act
	// on are named too, though the body decodes without an unknown field:
	// a globalDefault class would otherwise be stored and silently not be
	// the default.
	for _, kept := range []struct{ path, body, field string }{
		{"/apis/scheduling.k8s.io/v1/priorityclasses", `{"apiVersion":"scheduling.k8s.io/v1","kind":"PriorityClass","metadata":{"name":"NAME"},"value":10,"globalDefault":true}`, "globalDefault"},
		{"/api/v1/namespaces/default/pods", `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"NAME"},"spec":{"containers":[{"name":"c","image":"i","stdin":true}]}}`, "spec.containers[0].stdin"},
	} {
		code, hdr, b = c.do("POST", kept.path+"?fieldValidation=Strict", "", strings.Replace(kept.body, "NAME", "warned", 1))
		if code != 201 || !strings.Contains(hdr.Get("Warning"), kept.field+": not supported by kobune") {
			t.Errorf("%s under Strict: %d %q %s", kept.field, code, hdr.Values("Warning"), b)
		}
		code, _, b = c.do("POST", kept.path+"?fieldValidation=KobuneStrict", "", strings.Replace(kept.body, "NAME", "refused", 1))
		if code != 422 || !strings.Contains(string(b), kept.field+": Forbidden: not supported by kobune") {
			t.Errorf("%s under KobuneStrict: %d %s", kept.field, code, b)
		}
	}
}

// TestRESTPatchScaleProtobufAndOpenAPI: the three patch types, the scale
// subresource, a dry-run patch that stores nothing, a protobuf body as
// client-go's typed clients send it, and the OpenAPI documents kubectl
// reads to decide that the server validates fields itself.
func TestRESTPatchScaleProtobufAndOpenAPI(t *testing.T) {
	s := testserver.New(t)
	c := newRESTClient(t, client.Config{}, s.Addr())
	pb, err := os.ReadFile("../api/k8sapi/testdata/deployment.pb") // written by k8s.io/apimachinery's serializer
	if err != nil {
		t.Fatal(err)
	}
	if code, _, b := c.do("POST", "/api/v1/namespaces", "", `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"shop"}}`); code != 201 {
		t.Fatalf("namespace: %d %s", code, b)
	}
	code, _, b := c.do("POST", "/apis/apps/v1/namespaces/shop/deployments", "", string(pb), "Content-Type", "application/vnd.kubernetes.protobuf")
	if code != 201 || !bytes.Contains(b, []byte(`"maxSurge":"25%"`)) || !bytes.Contains(b, []byte(`"replicas":3`)) {
		t.Fatalf("protobuf create: %d %s", code, b)
	}
	path := "/apis/apps/v1/namespaces/shop/deployments/web"
	patches := []struct{ typ, body, want string }{
		{"application/merge-patch+json", `{"metadata":{"labels":{"team":"a"}}}`, `"team":"a"`},
		{"application/json-patch+json", `[{"op":"replace","path":"/spec/replicas","value":5}]`, `"replicas":5`},
		{"application/strategic-merge-patch+json", `{"spec":{"template":{"spec":{"containers":[{"name":"app","image":"labapp:2"}]}}}}`, `"image":"labapp:2","args":["-listen",":8080"]`},
	}
	for _, p := range patches {
		code, _, b = c.do("PATCH", path, "", p.body, "Content-Type", p.typ)
		if code != 200 || !strings.Contains(string(b), p.want) {
			t.Fatalf("%s: %d %s", p.typ, code, b)
		}
	}
	code, _, b = c.do("PATCH", path+"?dryRun=All", "", `{"spec":{"replicas":9}}`, "Content-Type", "application/merge-patch+json")
	if code != 200 || !strings.Contains(string(b), `"replicas":9`) {
		t.Fatalf("dry-run patch: %d %s", code, b)
	}
	code, _, b = c.do("GET", path+"/scale", "", "")
	if code != 200 || !strings.Contains(string(b), `"kind":"Scale"`) || !strings.Contains(string(b), `"spec":{"replicas":5}`) || !strings.Contains(string(b), `"selector":"app=web,tier in (a,b)"`) {
		t.Fatalf("scale after a dry-run patch: %d %s", code, b)
	}
	code, _, b = c.do("PATCH", path+"/scale", "", `{"spec":{"replicas":2}}`, "Content-Type", "application/merge-patch+json")
	if code != 200 || !strings.Contains(string(b), `"spec":{"replicas":2}`) {
		t.Fatalf("scale patch: %d %s", code, b)
	}
	code, _, b = c.do("PUT", path+"/scale", "", `{"apiVersion":"autoscaling/v1","kind":"Scale","metadata":{"name":"web","namespace":"shop","resourceVersion":"1"},"spec":{"replicas":7}}`)
	if code != 409 {
		t.Fatalf("scale with a stale resourceVersion: %d %s", code, b)
	}
	code, _, b = c.do("PATCH", path, "", `[{"op":"test","path":"/spec/replicas","value":99}]`, "Content-Type", "application/json-patch+json")
	if code != 422 || !strings.Contains(string(b), "test failed") {
		t.Fatalf("failing json patch: %d %s", code, b)
	}
	code, _, b = c.do("PATCH", path, "", `{"spec":{"replicas":1}}`, "Content-Type", "application/json")
	if code != 415 {
		t.Fatalf("patch without a patch type: %d %s", code, b)
	}

	apps := openAPIV3Index(t, c)["apis/apps/v1"]
	if apps == "" {
		t.Fatal("/openapi/v3 does not list apis/apps/v1")
	}
	code, _, b = c.do("GET", apps, "", "")
	if code != 200 || !bytes.Contains(b, []byte(`"x-kubernetes-group-version-kind":{"group":"apps","kind":"Deployment","version":"v1"}`)) ||
		!bytes.Contains(b, []byte(`{"in":"query","name":"fieldValidation"`)) || !bytes.Contains(b, []byte(`"x-kubernetes-patch-merge-key":"name"`)) {
		t.Fatalf("apps/v1 OpenAPI: %d %.500s", code, b)
	}
	if code, hdr, b := c.do("GET", "/openapi/v2", "application/com.github.proto-openapi.spec.v2@v1.0+protobuf", ""); code != 200 || !strings.Contains(hdr.Get("Content-Type"), "protobuf") || len(b) == 0 {
		t.Fatalf("/openapi/v2 in protobuf: %d %q %q", code, hdr.Get("Content-Type"), b)
	}
}

// TestRESTPaginationIsOneConsistentList: pages of a list (limit and
// continue) return every object exactly once, as of the first page's
// revision, even while objects are being created; a selector filters
// across pages; an expired continue token is a 410; resourceVersionMatch
// Exact reads an old revision.
func TestRESTPaginationIsOneConsistentList(t *testing.T) {
	s := testserver.New(t)
	c := newRESTClient(t, client.Config{}, s.Addr())
	mk := func(name, color string) {
		t.Helper()
		body := fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":%q,"labels":{"color":%q}}}`, name, color)
		if code, _, b := c.do("POST", "/api/v1/namespaces/default/configmaps", "", body); code != 201 {
			t.Fatalf("create %s: %d %s", name, code, b)
		}
	}
	for i := range 25 {
		mk(fmt.Sprintf("cm-%02d", i), []string{"red", "blue"}[i%2])
	}
	type list struct {
		Metadata struct {
			ResourceVersion, Continue string
			RemainingItemCount        *int `json:"remainingItemCount"`
		} `json:"metadata"`
		Items []struct {
			Metadata struct{ Name string } `json:"metadata"`
		} `json:"items"`
	}
	pages := func(query string, during func(int)) (names []string, rv string) {
		cont := ""
		for n := 0; ; n++ {
			url := "/api/v1/namespaces/default/configmaps?limit=4" + query
			if cont != "" {
				url += "&continue=" + cont
			}
			code, _, b := c.do("GET", url, "", "")
			var l list
			if err := json.Unmarshal(b, &l); code != 200 || err != nil {
				t.Fatalf("page %d: %d %s", n, code, b)
			}
			if len(l.Items) > 4 {
				t.Fatalf("page %d has %d items, limit 4", n, len(l.Items))
			}
			if n == 0 {
				rv = l.Metadata.ResourceVersion
			} else if l.Metadata.ResourceVersion != rv {
				t.Fatalf("page %d read revision %s, the first %s", n, l.Metadata.ResourceVersion, rv)
			}
			for _, it := range l.Items {
				names = append(names, it.Metadata.Name)
			}
			// remainingItemCount counts what the later pages hold, as
			// Kubernetes: with a continue only, without a selector only.
			switch rem := l.Metadata.RemainingItemCount; {
			case l.Metadata.Continue == "" || query != "":
				if rem != nil {
					t.Fatalf("page %d (%q): remainingItemCount %d, want none", n, query, *rem)
				}
			case rem == nil || *rem+len(names) != 25:
				t.Fatalf("page %d: remainingItemCount %v with %d items read, want them to make 25", n, rem, len(names))
			}
			if during != nil {
				during(n)
			}
			if cont = l.Metadata.Continue; cont == "" {
				return names, rv
			}
		}
	}
	created := 0
	names, rv := pages("", func(n int) { mk(fmt.Sprintf("new-%d", n), "red"); created++ })
	seen := map[string]int{}
	for _, n := range names {
		seen[n]++
	}
	if len(names) != 25 || len(seen) != 25 {
		t.Fatalf("paged list while creating: %d items, %d distinct, want the 25 of the first page's revision: %v", len(names), len(seen), names)
	}
	red, _ := pages("&labelSelector=color%3Dred", nil)
	if len(red) != 13+created { // the 13 red of the 25, and those made since
		t.Fatalf("red across pages: %d %v", len(red), red)
	}
	code, _, b := c.do("GET", "/api/v1/namespaces/default/configmaps?resourceVersion="+rv+"&resourceVersionMatch=Exact", "", "")
	var l list
	if json.Unmarshal(b, &l); code != 200 || len(l.Items) != 25 {
		t.Fatalf("Exact list at %s: %d, %d items", rv, code, len(l.Items))
	}
	code, _, b = c.do("GET", "/api/v1/namespaces/default/configmaps?limit=2", "", "")
	_ = json.Unmarshal(b, &l)
	mk("after", "red") // compaction keeps its own revision: move past the page's
	cur, _ := s.Store().Revision(context.Background())
	if err := s.Store().Compact(context.Background(), cur); err != nil {
		t.Fatal(err)
	}
	code, _, b = c.do("GET", "/api/v1/namespaces/default/configmaps?limit=2&continue="+l.Metadata.Continue, "", "")
	var expired struct {
		Reason   string
		Metadata struct{ Continue string }
	}
	if err := json.Unmarshal(b, &expired); err != nil || code != 410 || expired.Reason != "Expired" || expired.Metadata.Continue == "" {
		t.Fatalf("continue after compaction: %d %s, want 410 Expired with an inconsistent continue token", code, b)
	}
	// That token goes on from the same key at the newest revision.
	code, _, b = c.do("GET", "/api/v1/namespaces/default/configmaps?limit=2&continue="+expired.Metadata.Continue, "", "")
	var next list
	if err := json.Unmarshal(b, &next); err != nil || code != 200 || len(next.Items) != 2 || next.Items[0].Metadata.Name != "cm-02" ||
		next.Metadata.ResourceVersion == l.Metadata.ResourceVersion {
		t.Fatalf("continue with the inconsistent token: %d %s, want cm-02 and cm-03 at a newer revision than %s", code, b, l.Metadata.ResourceVersion)
	}
	if code, _, b = c.do("GET", "/api/v1/namespaces/default/configmaps?limit=2&continue=garbage", "", ""); code != 400 {
		t.Fatalf("bad continue: %d %s", code, b)
	}
}

// TestRESTPodLogsValidatesItsOptions: pods/log names a missing pod as
// Kubernetes does and refuses bad options, naming them, before it looks
// for the pod (the e2e tests and the lab's compat test read real logs).
func TestRESTPodLogsValidatesItsOptions(t *testing.T) {
	s := testserver.New(t)
	c := newRESTClient(t, client.Config{}, s.Addr())
	for _, q := range []string{"", "?timestamps=true&sinceSeconds=10", "?sinceTime=2026-12-03T10:00:00Z&follow=true"} {
		if code, _, b := c.do("GET", "/api/v1/namespaces/default/pods/nope/log"+q, "", ""); code != 404 || decodeJSON(t, b)["reason"] != "NotFound" {
			t.Fatalf("logs%s of a missing pod: %d %s", q, code, b)
		}
	}
	for q, want := range map[string]string{
		"tailLines=x":     "tailLines",
		"sinceSeconds=0":  "sinceSeconds: Invalid value",
		"sinceSeconds=-5": "sinceSeconds: Invalid value",
		"sinceTime=today": "sinceTime: Invalid value",
		"sinceSeconds=5&sinceTime=2026-12-03T10:00:00Z": "at most one of `sinceTime` or `sinceSeconds`",
	} {
		if code, _, b := c.do("GET", "/api/v1/namespaces/default/pods/nope/log?"+q, "", ""); code != 422 || !strings.Contains(string(b), want) {
			t.Errorf("logs?%s: %d %s; want 422 naming %q", q, code, b, want)
		}
	}
}

// TestRESTServerSideApply: an apply creates, owns what it applied
// (managedFields), conflicts with another manager's change to a field it
// sets — as kube-apiserver reports it, 409 — takes it with force, and
// removes what it no longer applies.
func TestRESTServerSideApply(t *testing.T) {
	s := testserver.New(t)
	c := newRESTClient(t, client.Config{}, s.Addr())
	cfg := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\n  labels: {team: a, tier: web}\ndata:\n  mode: fast\n  size: \"3\"\n"
	path := "/api/v1/namespaces/default/configmaps/app"
	apply := func(body, query string) (int, []byte) {
		code, _, b := c.do("PATCH", path+"?fieldManager=kubectl"+query, "", body, "Content-Type", "application/apply-patch+yaml")
		return code, b
	}
	if code, b := apply(cfg, ""); code != 200 && code != 201 || !strings.Contains(string(b), `"manager":"kubectl","operation":"Apply"`) {
		t.Fatalf("apply that creates: %d %s", code, b)
	}
	// Another writer changes a field the apply owns.
	code, _, b := c.do("PATCH", path+"?fieldManager=tuner", "", `{"data":{"size":"5"}}`, "Content-Type", "application/merge-patch+json")
	if code != 200 || !strings.Contains(string(b), `"manager":"tuner","operation":"Update"`) {
		t.Fatalf("merge patch by another manager: %d %s", code, b)
	}
	if code, b := apply(cfg, ""); code != 409 || !strings.Contains(string(b), `Apply failed with 1 conflict: conflict with \"tuner\" using v1: .data.size`) {
		t.Fatalf("apply over another manager's field: %d %s", code, b)
	}
	less := strings.Replace(cfg, ", tier: web", "", 1)
	code, b = apply(less, "&force=true")
	if code != 200 || !strings.Contains(string(b), `"size":"3"`) || strings.Contains(string(b), `"tier"`) || strings.Contains(string(b), `"manager":"tuner"`) {
		t.Fatalf("forced apply without the tier label: %d %s", code, b)
	}
	if code, _, b := c.do("PATCH", path, "", cfg, "Content-Type", "application/apply-patch+yaml"); code != 422 {
		t.Fatalf("apply without a fieldManager: %d %s", code, b)
	}
}

// TestRESTInvalidStatusNamesKindObjectAndCauses (issue #32): a 422 is the
// Status kube-apiserver's NewInvalid writes — details with the kind (Pod),
// the object's name (from the body on a create) and a cause per field —
// so kubectl prints the field and the reason instead of `The pods "" is
// invalid`; a body that cannot be read as the kind is a 400 BadRequest;
// a protobuf DeleteOptions body is read as JSON is.
func TestRESTInvalidStatusNamesKindObjectAndCauses(t *testing.T) {
	s := testserver.New(t)
	c := newRESTClient(t, client.Config{}, s.Addr())
	type cause struct{ Reason, Message, Field string }
	var st struct {
		Reason  string
		Code    int
		Message string
		Details struct {
			Name, Kind string
			Causes     []cause
		}
	}
	tests := []struct {
		method, path, body string
		code               int
		reason, kind, name string
		causes             []cause
	}{
		{"POST", "/api/v1/namespaces/default/pods", `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"noimage"},"spec":{"containers":[{"name":"c"}]}}`,
			422, "Invalid", "Pod", "noimage", []cause{{"FieldValueRequired", "Required value", "spec.containers[0].image"}}},
		{"POST", "/apis/apps/v1/namespaces/default/deployments", `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d"},"spec":{"selector":{"matchLabels":{"a":"b"}},"template":{"metadata":{"labels":{"a":"c"}},"spec":{"containers":[{"name":"c","image":"i"}]}}}}`,
			422, "Invalid", "Deployment", "d", nil},
		{"POST", "/api/v1/namespaces/default/pods", `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"cpu"},"spec":{"containers":[{"name":"c","image":"i","resources":{"limits":{"cpu":"lots"}}}]}}`,
			400, "BadRequest", "pods", "", nil},
	}
	for _, tt := range tests {
		code, _, b := c.do(tt.method, tt.path, "", tt.body)
		st.Details.Causes, st.Details.Name = nil, ""
		if err := json.Unmarshal(b, &st); err != nil {
			t.Fatal(err)
		}
		if code != tt.code || st.Reason != tt.reason || st.Details.Kind != tt.kind || st.Details.Name != tt.name {
			t.Errorf("%s %s: %d %s", tt.method, tt.path, code, b)
		}
		if tt.code == 422 && len(st.Details.Causes) == 0 {
			t.Errorf("%s %s: a 422 without causes: %s", tt.method, tt.path, b)
		}
		if tt.causes != nil && fmt.Sprint(st.Details.Causes) != fmt.Sprint(tt.causes) {
			t.Errorf("%s %s: causes %v, want %v", tt.method, tt.path, st.Details.Causes, tt.causes)
		}
	}
	// A protobuf DeleteOptions body (client-go's), with a precondition that holds.
	code, _, b := c.do("POST", "/api/v1/namespaces/default/configmaps", "", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm"}}`)
	if code != 201 {
		t.Fatalf("create: %d %s", code, b)
	}
	uid := decodeJSON(t, b)["metadata"].(map[string]any)["uid"].(string)
	code, _, b = c.do("DELETE", "/api/v1/namespaces/default/configmaps/cm", "", string(deleteOptionsProto(uid)), "Content-Type", "application/vnd.kubernetes.protobuf")
	if code != 200 {
		t.Errorf("DELETE with a protobuf DeleteOptions body: %d %s", code, b)
	}
}

// TestRESTDeleteOptions (issue #35): deletes take Kubernetes' options, a
// collection delete the same as a single one. A dry run (query or body)
// answers what the delete would do and deletes nothing — a collection dry
// run once deleted every ConfigMap of the namespace — an unknown dryRun
// value is refused with nothing deleted, and propagationPolicy and
// preconditions reach every object of a collection delete.
func TestRESTDeleteOptions(t *testing.T) {
	s := testserver.New(t)
	c := newRESTClient(t, client.Config{}, s.Addr())
	const cms = "/api/v1/namespaces/default/configmaps"
	uids := map[string]string{}
	for _, n := range []string{"a", "b"} {
		code, _, b := c.do("POST", cms, "", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"`+n+`","labels":{"name":"`+n+`"}}}`)
		if code != 201 {
			t.Fatalf("create %s: %d %s", n, code, b)
		}
		uids[n] = decodeJSON(t, b)["metadata"].(map[string]any)["uid"].(string)
	}
	stored := func(name string) map[string]any {
		t.Helper()
		code, _, b := c.do("GET", cms+"/"+name, "", "")
		if code == 404 {
			return nil
		}
		if code != 200 {
			t.Fatalf("get %s: %d %s", name, code, b)
		}
		return decodeJSON(t, b)["metadata"].(map[string]any)
	}
	bothUntouched := func(after string) {
		t.Helper()
		for _, n := range []string{"a", "b"} {
			if m := stored(n); m == nil || m["deletionTimestamp"] != nil || m["finalizers"] != nil {
				t.Errorf("configmap %s after %s: %v; want it there, unmarked", n, after, m)
			}
		}
	}

	for _, dry := range []struct{ query, body string }{
		{"?dryRun=All", ""},
		{"", `{"kind":"DeleteOptions","apiVersion":"v1","dryRun":["All"]}`},
		{"?dryRun=All&propagationPolicy=Orphan", ""},
	} {
		code, _, b := c.do("DELETE", cms+dry.query, "", dry.body)
		var list struct {
			Kind  string
			Items []struct{ Metadata map[string]any }
		}
		if err := json.Unmarshal(b, &list); err != nil || code != 200 || list.Kind != "ConfigMapList" || len(list.Items) != 2 {
			t.Errorf("collection delete, dry run %q%s: %d %s; want 200 and the 2 ConfigMaps it would delete", dry.query, dry.body, code, b)
		}
		if strings.Contains(dry.query, "Orphan") && len(list.Items) == 2 && fmt.Sprint(list.Items[0].Metadata["finalizers"]) != "[orphan]" {
			t.Errorf("dry-run orphan delete answered %v; want the orphan finalizer it would add", list.Items[0].Metadata)
		}
		bothUntouched(fmt.Sprintf("a dry-run collection delete %q%s", dry.query, dry.body))
	}
	for _, bad := range []struct{ query, body string }{
		{"?dryRun=Bogus", ""},
		{"", `{"kind":"DeleteOptions","apiVersion":"v1","dryRun":["Bogus"]}`},
		{"?propagationPolicy=Sideways", ""},
	} {
		code, _, b := c.do("DELETE", cms+bad.query, "", bad.body)
		if code != 422 || !strings.Contains(string(b), "Unsupported value") {
			t.Errorf("collection delete %q%s: %d %s; want 422 naming the unsupported value", bad.query, bad.body, code, b)
		}
		bothUntouched(fmt.Sprintf("a refused collection delete %q%s", bad.query, bad.body))
	}
	// A single dry-run delete answers the object as the delete would leave it.
	code, _, b := c.do("DELETE", cms+"/a?dryRun=All&propagationPolicy=Foreground", "", "")
	if m, _ := decodeJSON(t, b)["metadata"].(map[string]any); code != 200 || m["deletionTimestamp"] == nil || fmt.Sprint(m["finalizers"]) != "[foregroundDeletion]" {
		t.Errorf("single dry-run foreground delete: %d %s; want the object marked as the delete would", code, b)
	}
	if code, _, b = c.do("DELETE", cms+"/a?dryRun=Bogus", "", ""); code != 422 {
		t.Errorf("single delete with dryRun=Bogus: %d %s", code, b)
	}
	bothUntouched("single dry-run deletes")

	// Preconditions reach each object: a wrong uid deletes nothing, the
	// right one deletes the object it names.
	if code, _, b = c.do("DELETE", cms+"?labelSelector=name%3Da", "", string(deleteOptionsProto(uids["b"])), "Content-Type", "application/vnd.kubernetes.protobuf"); code != 409 {
		t.Errorf("collection delete with another object's uid as precondition: %d %s; want 409", code, b)
	}
	bothUntouched("a collection delete whose precondition failed")
	if code, _, b = c.do("DELETE", cms+"?labelSelector=name%3Da", "", string(deleteOptionsProto(uids["a"])), "Content-Type", "application/vnd.kubernetes.protobuf"); code != 200 || !strings.Contains(string(b), `"name":"a"`) {
		t.Errorf("collection delete with the object's uid as precondition: %d %s", code, b)
	}
	if stored("a") != nil {
		t.Errorf("configmap a is still there after a collection delete with its own uid as precondition")
	}
	// propagationPolicy reaches each object: Orphan leaves it marked with
	// the orphan finalizer for the garbage collector (none runs here).
	if code, _, b = c.do("DELETE", cms+"?propagationPolicy=Orphan", "", ""); code != 200 {
		t.Errorf("collection delete, Orphan: %d %s", code, b)
	}
	if m := stored("b"); m == nil || fmt.Sprint(m["finalizers"]) != "[orphan]" || m["deletionTimestamp"] == nil {
		t.Errorf("configmap b after an Orphan collection delete: %v; want it marked, with the orphan finalizer", m)
	}
}

// deleteOptionsProto is metav1.DeleteOptions{Preconditions: {UID: uid},
// PropagationPolicy: Background} in Kubernetes' protobuf envelope, as
// client-go writes it.
func deleteOptionsProto(uid string) []byte {
	str := func(num protowire.Number, s string) []byte {
		return protowire.AppendString(protowire.AppendTag(nil, num, protowire.BytesType), s)
	}
	msg := func(num protowire.Number, b []byte) []byte {
		return protowire.AppendBytes(protowire.AppendTag(nil, num, protowire.BytesType), b)
	}
	opts := append(msg(2, str(1, uid)), str(4, "Background")...) // preconditions{uid}, propagationPolicy
	typeMeta := append(str(1, "v1"), str(2, "DeleteOptions")...)
	return append([]byte("k8s\x00"), append(msg(1, typeMeta), msg(2, opts)...)...)
}

// TestRESTServesAutoscalingV1 (issue #32): HorizontalPodAutoscalers are
// served at autoscaling/v1 beside v2, as Kubernetes serves them: discovery
// lists both (v2 preferred), a v1 create stores the v2 object, reads in
// v1 show v1, a v1 patch and update work, and a typo in a v1 body is
// refused under Strict.
func TestRESTServesAutoscalingV1(t *testing.T) {
	s := testserver.New(t)
	c := newRESTClient(t, client.Config{}, s.Addr())
	code, _, b := c.do("GET", "/apis/autoscaling", "", "")
	if g := decodeJSON(t, b); code != 200 || fmt.Sprint(g["versions"]) != "[map[groupVersion:autoscaling/v2 version:v2] map[groupVersion:autoscaling/v1 version:v1]]" ||
		fmt.Sprint(g["preferredVersion"]) != "map[groupVersion:autoscaling/v2 version:v2]" {
		t.Errorf("/apis/autoscaling: %d %s", code, b)
	}
	if code, _, b = c.do("GET", "/apis/autoscaling/v1", "", ""); code != 200 || !strings.Contains(string(b), `"name":"horizontalpodautoscalers"`) {
		t.Errorf("/apis/autoscaling/v1: %d %s", code, b)
	}
	code, _, b = c.do("GET", "/apis", "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList", "")
	if code != 200 || !strings.Contains(string(b), `{"metadata":{"name":"autoscaling"},"versions":[{"version":"v2"`) || !strings.Contains(string(b), `{"version":"v1","resources":[{"resource":"horizontalpodautoscalers"`) {
		t.Errorf("aggregated discovery of autoscaling: %d %s", code, b)
	}

	v1 := `{"apiVersion":"autoscaling/v1","kind":"HorizontalPodAutoscaler","metadata":{"name":"web"},"spec":{"scaleTargetRef":{"apiVersion":"apps/v1","kind":"Deployment","name":"web"},"minReplicas":1,"maxReplicas":4,"targetCPUUtilizationPercentage":50}}`
	code, _, b = c.do("POST", "/apis/autoscaling/v1/namespaces/default/horizontalpodautoscalers?fieldValidation=Strict", "", v1)
	if code != 201 || !strings.Contains(string(b), `"apiVersion":"autoscaling/v1"`) || !strings.Contains(string(b), `"targetCPUUtilizationPercentage":50`) {
		t.Fatalf("POST autoscaling/v1: %d %s", code, b)
	}
	code, _, b = c.do("GET", "/apis/autoscaling/v2/namespaces/default/horizontalpodautoscalers/web", "", "")
	if code != 200 || !strings.Contains(string(b), `"metrics":[{"type":"Resource","resource":{"name":"cpu","target":{"type":"Utilization","averageUtilization":50}}}]`) {
		t.Errorf("GET autoscaling/v2 of the v1-made object: %d %s", code, b)
	}
	code, _, b = c.do("GET", "/apis/autoscaling/v1/namespaces/default/horizontalpodautoscalers/web", "application/json", "")
	if code != 200 || !strings.Contains(string(b), `"apiVersion":"autoscaling/v1"`) {
		t.Errorf("GET autoscaling/v1: %d %s", code, b)
	}
	code, _, b = c.do("GET", "/apis/autoscaling/v1/namespaces/default/horizontalpodautoscalers", "", "")
	if code != 200 || !strings.Contains(string(b), `"kind":"HorizontalPodAutoscalerList","apiVersion":"autoscaling/v1"`) || !strings.Contains(string(b), `"targetCPUUtilizationPercentage":50`) {
		t.Errorf("LIST autoscaling/v1: %d %s", code, b)
	}
	code, _, b = c.do("PATCH", "/apis/autoscaling/v1/namespaces/default/horizontalpodautoscalers/web", "", `{"spec":{"targetCPUUtilizationPercentage":70}}`, "Content-Type", "application/merge-patch+json")
	if code != 200 || !strings.Contains(string(b), `"targetCPUUtilizationPercentage":70`) {
		t.Errorf("PATCH autoscaling/v1: %d %s", code, b)
	}
	typo := strings.Replace(v1, `"maxReplicas"`, `"maxReplica"`, 1)
	code, _, b = c.do("POST", "/apis/autoscaling/v1/namespaces/default/horizontalpodautoscalers?fieldValidation=Strict", "", strings.Replace(typo, `"web"},"spec"`, `"typo"},"spec"`, 1))
	if code != 400 || !strings.Contains(string(b), `unknown field \"spec.maxReplica\"`) {
		t.Errorf("typo in a v1 body under Strict: %d %s", code, b)
	}
}

// TestRESTStatusCodesAsKubernetes (issue #35): the codes kube-apiserver
// answers with, so clients neither retry what cannot succeed nor give up
// on what can: a body over the limit is a 413 (it was a 429 with
// Retry-After, and kubectl retried it for 10 s), malformed JSON a 400 (it
// was a 422), a merge patch POSTed as a create a 415, a forged continue
// token a 400 and a revision from the future a 504 Timeout, as Kubernetes
// (both were a 503 with etcd's own text).
func TestRESTStatusCodesAsKubernetes(t *testing.T) {
	s := testserver.New(t)
	c := newRESTClient(t, client.Config{}, s.Addr())
	const cms = "/api/v1/namespaces/default/configmaps"
	big := `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"big"},"data":{"v":"` + strings.Repeat("x", 4<<20) + `"}}`
	tests := []struct {
		what, method, path, body, contentType string
		code                                  int
		reason                                string
	}{
		{"a body over the limit", "POST", cms, big, "", 413, "RequestEntityTooLarge"},
		{"malformed JSON", "POST", cms, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":`, "", 400, "BadRequest"},
		{"a merge patch POSTed", "POST", cms, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"mp"}}`, "application/merge-patch+json", 415, "UnsupportedMediaType"},
		{"a forged continue token", "GET", cms + "?limit=1&continue=Zm9yZ2Vk", "", "", 400, "BadRequest"},
		{"a future revision, Exact", "GET", cms + "?resourceVersion=999999999&resourceVersionMatch=Exact", "", "", 504, "Timeout"},
	}
	for _, tt := range tests {
		var h []string
		if tt.contentType != "" {
			h = []string{"Content-Type", tt.contentType}
		}
		code, hdr, b := c.do(tt.method, tt.path, "", tt.body, h...)
		var st struct{ Reason, Message string }
		_ = json.Unmarshal(b, &st)
		if code != tt.code || st.Reason != tt.reason {
			t.Errorf("%s: %d %s %.300s; want %d %s", tt.what, code, st.Reason, b, tt.code, tt.reason)
		}
		if tt.code != 504 && hdr.Get("Retry-After") != "" {
			t.Errorf("%s: Retry-After %q: a client would retry what cannot succeed", tt.what, hdr.Get("Retry-After"))
		}
		if strings.Contains(st.Message, "etcdserver") || strings.Contains(st.Message, "mvcc") {
			t.Errorf("%s: etcd's own words reach the client: %s", tt.what, st.Message)
		}
	}
	if code, _, b := c.do("GET", cms, "", ""); code != 200 || strings.Contains(string(b), `"name":"big"`) || strings.Contains(string(b), `"name":"mp"`) {
		t.Errorf("after the refused requests: %d %.300s; want nothing created", code, b)
	}
	// A 2.8 KB JSON patch whose copies double a value 18 times (it took
	// 1.5 GB, and 20 at once killed the server) is a 413, the object as it was.
	if code, _, b := c.do("POST", cms, "", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"p"},"data":{"v":"`+strings.Repeat("x", 1024)+`"}}`); code != 201 {
		t.Fatalf("create: %d %s", code, b)
	}
	var ops []string
	for i := 1; i <= 18; i++ {
		ops = append(ops, fmt.Sprintf(`{"op":"copy","from":"/data","path":"/data/c%d"}`, i))
	}
	code, _, b := c.do("PATCH", cms+"/p", "", "["+strings.Join(ops, ",")+"]", "Content-Type", "application/json-patch+json")
	if code != 413 || !strings.Contains(string(b), "RequestEntityTooLarge") {
		t.Errorf("doubling JSON patch: %d %.300s; want 413", code, b)
	}
	if code, _, b = c.do("GET", cms+"/p", "", ""); code != 200 || strings.Contains(string(b), `"c1"`) {
		t.Errorf("the ConfigMap after the refused patch: %d %.200s", code, b)
	}
}

// TestRESTSlowBodyIsCutOff (issue #35): a client that sends its body a
// byte at a time held a connection and a goroutine for as long as it
// liked; the body now has rest.BodyReadTimeout to arrive, then the
// answer is a 408 and the connection is closed.
func TestRESTSlowBodyIsCutOff(t *testing.T) {
	timeout := rest.BodyReadTimeout
	rest.BodyReadTimeout = time.Second
	t.Cleanup(func() { rest.BodyReadTimeout = timeout })
	s := testserver.New(t)
	c, err := net.Dial("tcp", s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	body := `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"slow"}}`
	if _, err := fmt.Fprintf(c, "POST /api/v1/namespaces/default/configmaps HTTP/1.1\r\nHost: kobune\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", len(body)); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	defer close(stop)
	go func() { // a byte every 200 ms: the body would take 13 s
		for i := 0; i < len(body); i++ {
			select {
			case <-stop:
				return
			case <-time.After(200 * time.Millisecond):
			}
			if _, err := c.Write([]byte{body[i]}); err != nil {
				return
			}
		}
	}()
	_ = c.SetReadDeadline(time.Now().Add(8 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("no answer to a slow body within 8 s: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestTimeout || !strings.Contains(string(b), "did not arrive within") {
		t.Errorf("slow body: %d %s; want 408", resp.StatusCode, b)
	}
	// A body sent at once still goes through.
	cl := newRESTClient(t, client.Config{}, s.Addr())
	if code, _, b := cl.do("POST", "/api/v1/namespaces/default/configmaps", "", body); code != 201 {
		t.Errorf("create at normal speed: %d %s", code, b)
	}
}

// TestRESTWatchBookmarksArrive (issue #35): a watch that allows bookmarks
// gets one every BookmarkInterval (docs/api.md promises them; informers
// resume from the newest revision they saw instead of an older one), and
// one without does not.
func TestRESTWatchBookmarksArrive(t *testing.T) {
	s, err := testserver.Start(t.TempDir(), testserver.StableAddr(), func(c *apiserver.Config) { c.BookmarkInterval = 300 * time.Millisecond })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	cl := newRESTClient(t, client.Config{}, s.Addr())
	code, _, b := cl.do("POST", "/api/v1/namespaces/default/configmaps", "", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"}}`)
	if code != 201 {
		t.Fatalf("create: %d %s", code, b)
	}
	rv := decodeJSON(t, b)["metadata"].(map[string]any)["resourceVersion"].(string)
	var newest string
	types := func(bookmarks bool) []string {
		code, _, b := cl.do("GET", fmt.Sprintf("/api/v1/namespaces/default/configmaps?watch=true&resourceVersion=%s&allowWatchBookmarks=%v&timeoutSeconds=2", rv, bookmarks), "", "")
		if code != 200 {
			t.Fatalf("watch: %d %s", code, b)
		}
		var out []string
		for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			var ev struct {
				Type   string
				Object struct {
					Metadata struct{ ResourceVersion string }
				}
			}
			if line == "" || json.Unmarshal([]byte(line), &ev) != nil {
				continue
			}
			if ev.Type == "BOOKMARK" {
				r, _ := strconv.Atoi(ev.Object.Metadata.ResourceVersion)
				start, _ := strconv.Atoi(rv)
				if r < start {
					t.Errorf("a bookmark at %d, before the watch's start %d", r, start)
				}
				newest = ev.Object.Metadata.ResourceVersion
			}
			out = append(out, ev.Type)
		}
		return out
	}
	// A write elsewhere (another namespace) moves etcd's revision on: the
	// watch's bookmarks follow it (etcd's progress notifications), so a
	// client resuming from its last bookmark replays nothing.
	go func() {
		time.Sleep(500 * time.Millisecond)
		cl.do("POST", "/api/v1/namespaces/kube-system/configmaps", "", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"elsewhere"}}`)
	}()
	if got := types(true); !slices.Contains(got, "BOOKMARK") {
		t.Errorf("2 s of a watch with allowWatchBookmarks and a 300 ms interval: events %v, no BOOKMARK", got)
	}
	if newest == rv {
		t.Errorf("the bookmarks stayed at the watch's start %s after a write elsewhere moved etcd's revision on", rv)
	}
	if got := types(false); slices.Contains(got, "BOOKMARK") {
		t.Errorf("a watch without allowWatchBookmarks got %v", got)
	}
}

// TestRESTEvictionRefusalNamesTheBudgetAsCause: an eviction a budget
// refuses is a 429 whose Status lists a cause of type DisruptionBudget
// (JSON "reason")
// (what kubectl drain and Kubernetes' tests look for), with the budget's
// state in its message.
func TestRESTEvictionRefusalNamesTheBudgetAsCause(t *testing.T) {
	s := testserver.New(t)
	ctx := context.Background()
	c := newRESTClient(t, client.Config{}, s.Addr())
	pods := client.For[*core.Pod](s.Client)
	p, err := pods.Create(ctx, &core.Pod{ObjectMeta: meta.ObjectMeta{Namespace: "default", Name: "web", Labels: map[string]string{"app": "web"}},
		Spec: core.PodSpec{Containers: []core.Container{{Name: "c", Image: "kobune.local/labapp:1.0"}}}})
	if err != nil {
		t.Fatal(err)
	}
	p.Status.Phase = core.PodRunning
	if _, err := pods.UpdateStatus(ctx, p); err != nil {
		t.Fatal(err)
	}
	one := meta.FromInt(1)
	if _, err := client.For[*policy.PodDisruptionBudget](s.Client).Create(ctx, &policy.PodDisruptionBudget{ObjectMeta: meta.ObjectMeta{Namespace: "default", Name: "web"},
		Spec: policy.PodDisruptionBudgetSpec{MinAvailable: &one, Selector: &meta.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}}); err != nil {
		t.Fatal(err)
	}
	code, _, b := c.do("POST", "/api/v1/namespaces/default/pods/web/eviction", "",
		`{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"web","namespace":"default"}}`)
	st := decodeJSON(t, b)
	causes, _ := st["details"].(map[string]any)["causes"].([]any)
	if code != 429 || len(causes) != 1 || causes[0].(map[string]any)["reason"] != "DisruptionBudget" ||
		!strings.Contains(fmt.Sprint(causes[0].(map[string]any)["message"]), "The disruption budget web is still being processed") {
		t.Fatalf("eviction under a budget not yet processed: %d %s; want 429 with a DisruptionBudget cause", code, b)
	}
	if got, err := pods.Get(ctx, "default", "web"); err != nil || got.DeletionTimestamp != nil {
		t.Errorf("the refused pod: %v %+v", err, got)
	}
}
