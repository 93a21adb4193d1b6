package apiserver_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kobune/kobune/apiserver/testserver"
	"github.com/kobune/kobune/client"
)

// conversionWebhook is a CustomResourceDefinition's conversion webhook
// over TLS, as the conformance suite's: v1 says hostPort "host:port", v2
// says host and port. Its mode makes it misbehave: "fail" answers a
// Failure, "rename" changes the object's name, "meta" adds a label and
// rewrites the generation, "extra" adds a field no schema names. It
// counts the objects of each review.
type conversionWebhook struct {
	*httptest.Server
	mu      sync.Mutex
	mode    string
	reviews []int
}

func newConversionWebhook(t *testing.T) *conversionWebhook {
	cw := &conversionWebhook{}
	cw.Server = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var review struct {
			APIVersion string `json:"apiVersion"`
			Request    struct {
				UID               string           `json:"uid"`
				DesiredAPIVersion string           `json:"desiredAPIVersion"`
				Objects           []map[string]any `json:"objects"`
			} `json:"request"`
		}
		if err := json.Unmarshal(b, &review); err != nil || review.APIVersion != "apiextensions.k8s.io/v1" {
			http.Error(w, fmt.Sprintf("not a v1 ConversionReview: %v %s", err, b), 400)
			return
		}
		cw.mu.Lock()
		mode := cw.mode
		cw.reviews = append(cw.reviews, len(review.Request.Objects))
		cw.mu.Unlock()
		result := map[string]any{"status": "Success"}
		var out []map[string]any
		for _, o := range review.Request.Objects {
			to := review.Request.DesiredAPIVersion
			switch {
			case strings.HasSuffix(to, "/v2"):
				if hp, ok := o["hostPort"].(string); ok {
					host, port, _ := strings.Cut(hp, ":")
					o["host"], o["port"] = host, port
					delete(o, "hostPort")
				}
			case strings.HasSuffix(to, "/v1"):
				if h, ok := o["host"].(string); ok {
					o["hostPort"] = h + ":" + fmt.Sprint(o["port"])
					delete(o, "host")
					delete(o, "port")
				}
			}
			o["apiVersion"] = to
			md := o["metadata"].(map[string]any)
			switch mode {
			case "rename":
				md["name"] = "other"
			case "meta":
				md["labels"] = map[string]any{"converted": "yes"}
				md["generation"] = 99
			case "extra":
				o["notInAnySchema"] = true
			}
			out = append(out, o)
		}
		if mode == "fail" {
			result = map[string]any{"status": "Failure", "message": "cannot convert today"}
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
			"response": map[string]any{"uid": review.Request.UID, "convertedObjects": out, "result": result}})
	}))
	t.Cleanup(cw.Close)
	return cw
}

func (cw *conversionWebhook) set(mode string) {
	cw.mu.Lock()
	defer cw.mu.Unlock()
	cw.mode = mode
}

// largestReview is the most objects one review carried.
func (cw *conversionWebhook) largestReview() int {
	cw.mu.Lock()
	defer cw.mu.Unlock()
	n := 0
	for _, c := range cw.reviews {
		n = max(n, c)
	}
	return n
}

// TestCustomResourceConversionWebhook (issue #36): a definition whose
// versions differ in their fields converts them by its webhook, as
// kube-apiserver does: an object written at either version is stored at
// the storage version and read back at the one the URL names (get, list,
// watch, patch); after the storage version moves, a list mixes objects
// stored at both and answers all of them at the version asked, sending a
// list's objects in one review; a client writing through the gRPC door
// sends the version it was given and the server converts. A webhook that
// fails, renames the object or adds fields fails or is corrected as
// Kubernetes does: 500 naming the webhook, metadata other than labels and
// annotations restored, fields no schema names pruned. A definition whose
// webhook address is wrong is refused naming the field.
func TestCustomResourceConversionWebhook(t *testing.T) {
	s := testserver.New(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c := newRESTClient(t, client.Config{}, s.Addr())
	cw := newConversionWebhook(t)
	const crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
	crd := func(storage, rv, port string) string {
		props := map[string]string{"v1": `{"hostPort":{"type":"string"}}`, "v2": `{"host":{"type":"string"},"port":{"type":"string"}}`}
		v := func(name string) string {
			return `{"name":"` + name + `","served":true,"storage":` + fmt.Sprint(name == storage) + `,"schema":{"openAPIV3Schema":{"type":"object","properties":` + props[name] + `}}}`
		}
		cc := `{"url":"` + cw.URL + `/convert","caBundle":"` + (&webhookServer{Server: cw.Server}).caBundle() + `"}`
		if port != "" {
			cc = `{"service":{"namespace":"default","name":"converter","port":` + port + `}}`
		}
		return `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"endpoints.example.com"` + rv + `},` +
			`"spec":{"group":"example.com","scope":"Namespaced","names":{"plural":"endpoints","kind":"Endpoint"},"versions":[` + v("v1") + "," + v("v2") + `],` +
			`"conversion":{"strategy":"Webhook","webhook":{"conversionReviewVersions":["v1","v1beta1"],"clientConfig":` + cc + `}}}}`
	}
	code, _, b := c.do("POST", crds, "", crd("v1", "", "0"))
	if code != 422 || !strings.Contains(string(b), "spec.conversion.webhook.clientConfig.service.port") {
		t.Errorf("a service port 0: want 422 naming spec.conversion.webhook.clientConfig.service.port, got %d %s", code, b)
	}
	if code, _, b := c.do("POST", crds, "", crd("v1", "", "")); code != 201 {
		t.Fatalf("create the definition: %d %s", code, b)
	}
	const v1, v2 = "/apis/example.com/v1/namespaces/default/endpoints", "/apis/example.com/v2/namespaces/default/endpoints"
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		code, _, b := c.do("POST", v1, "", `{"apiVersion":"example.com/v1","kind":"Endpoint","metadata":{"name":"one"},"hostPort":"localhost:8080"}`)
		if code == 201 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("create an Endpoint at v1: %d %s", code, b)
		}
	}
	get := func(path string) map[string]any {
		t.Helper()
		code, _, b := c.do("GET", path, "", "")
		if code != 200 {
			t.Fatalf("GET %s: %d %s", path, code, b)
		}
		return decodeJSON(t, b)
	}
	if o := get(v2 + "/one"); o["apiVersion"] != "example.com/v2" || o["host"] != "localhost" || o["port"] != "8080" || o["hostPort"] != nil {
		t.Errorf("read at v2: want host localhost, port 8080, got %v", o)
	}
	if o := get(v1 + "/one"); o["hostPort"] != "localhost:8080" || o["host"] != nil {
		t.Errorf("read at v1: want hostPort localhost:8080, got %v", o)
	}
	// Written at v2, stored at v1 (the storage version), read at v1.
	if code, _, b := c.do("POST", v2, "", `{"apiVersion":"example.com/v2","kind":"Endpoint","metadata":{"name":"two"},"host":"example","port":"443"}`); code != 201 || decodeJSON(t, b)["host"] != "example" {
		t.Fatalf("create at v2: %d %s", code, b)
	}
	if o := get(v1 + "/two"); o["hostPort"] != "example:443" {
		t.Errorf("an object written at v2 read at v1: want hostPort example:443, got %v", o)
	}
	// A merge patch at v2 of an object stored at v1.
	if code, _, b := c.do("PATCH", v2+"/two", "", `{"port":"8443"}`, "Content-Type", "application/merge-patch+json"); code != 200 || decodeJSON(t, b)["port"] != "8443" {
		t.Errorf("merge patch at v2: %d %s", code, b)
	}
	if o := get(v1 + "/two"); o["hostPort"] != "example:8443" {
		t.Errorf("after the v2 patch, read at v1: want example:8443, got %v", o)
	}

	// The storage version moves to v2: "one" and "two" stay stored at v1.
	cur := get(crds + "/endpoints.example.com")
	rv := cur["metadata"].(map[string]any)["resourceVersion"].(string)
	if code, _, b := c.do("PUT", crds+"/endpoints.example.com", "", crd("v2", `,"resourceVersion":"`+rv+`"`, "")); code != 200 {
		t.Fatalf("make v2 the storage version: %d %s", code, b)
	}
	// Through the gRPC door: the client is told the server converts, and
	// sends the v1 object as it is written.
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		kinds, err := s.Client.Discover(ctx)
		if err != nil {
			t.Fatal(err)
		}
		docs, err := kinds.DecodeEach([]byte("apiVersion: example.com/v1\nkind: Endpoint\nmetadata:\n  name: three\nhostPort: grpc:9090\n"))
		if err != nil || len(docs) != 1 || docs[0].Err != nil {
			t.Fatalf("decode a v1 Endpoint: %v %v", err, docs)
		}
		if docs[0].Kind.APIVersion != "example.com/v2" {
			if time.Now().After(deadline) {
				t.Fatalf("discovery still says storage version %s", docs[0].Kind.APIVersion)
			}
			continue
		}
		if _, err := s.Client.Resource(docs[0].Kind).Create(ctx, "default", docs[0].JSON, client.WriteOptions{}); err != nil {
			t.Fatalf("create a v1 Endpoint through gRPC: %v", err)
		}
		stored, err := s.Client.Resource(docs[0].Kind).Get(ctx, "default", "three")
		if o := decodeJSON(t, stored); err != nil || o["apiVersion"] != "example.com/v2" || o["host"] != "grpc" || o["port"] != "9090" {
			t.Fatalf("the gRPC door answers the storage version v2: %v %s", err, stored)
		}
		break
	}
	list := func(path string) []any {
		t.Helper()
		return get(path)["items"].([]any)
	}
	for _, o := range list(v1) {
		if o := o.(map[string]any); o["apiVersion"] != "example.com/v1" || o["hostPort"] == nil || o["host"] != nil {
			t.Errorf("list at v1 of objects stored at v1 and v2: %v", o)
		}
	}
	items := list(v2)
	if len(items) != 3 {
		t.Fatalf("list at v2: want 3 items, got %v", items)
	}
	for _, o := range items {
		if o := o.(map[string]any); o["apiVersion"] != "example.com/v2" || o["host"] == nil || o["hostPort"] != nil {
			t.Errorf("list at v2 of objects stored at v1 and v2: %v", o)
		}
	}
	if n := cw.largestReview(); n < 2 {
		t.Errorf("a list's objects go to the webhook in one review: the largest review carried %d", n)
	}
	// A watch at v1 from the start: every object at v1.
	req, _ := http.NewRequestWithContext(ctx, "GET", "http://"+s.Addr()+v1+"?watch=1&resourceVersion=0", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(resp.Body)
	for i := 0; i < 3 && sc.Scan(); i++ {
		var ev struct {
			Type   string         `json:"type"`
			Object map[string]any `json:"object"`
		}
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil || ev.Object["apiVersion"] != "example.com/v1" || ev.Object["hostPort"] == nil {
			t.Errorf("watch at v1: %s", sc.Bytes())
		}
	}
	resp.Body.Close()

	// A webhook that fails: the read fails with its message, nothing changes.
	cw.set("fail")
	code, _, b = c.do("GET", v1+"/three", "", "")
	if code != 500 || !strings.Contains(string(b), "conversion webhook for example.com/v2, Kind=Endpoint failed: cannot convert today") {
		t.Errorf("a failing webhook: want 500 naming it and its message, got %d %s", code, b)
	}
	if code, _, b := c.do("GET", v1, "", ""); code != 500 {
		t.Errorf("a list through a failing webhook: want 500, got %d %s", code, b)
	}
	if code, _, b := c.do("POST", v1, "", `{"apiVersion":"example.com/v1","kind":"Endpoint","metadata":{"name":"four"},"hostPort":"a:1"}`); code != 500 {
		t.Errorf("a create through a failing webhook: want 500, got %d %s", code, b)
	}
	cw.set("rename")
	if code, _, b := c.do("GET", v1+"/three", "", ""); code != 500 || !strings.Contains(string(b), "must have the same name") {
		t.Errorf("a webhook that renames: want 500 naming the name, got %d %s", code, b)
	}
	cw.set("meta")
	o := get(v1 + "/three")
	md := o["metadata"].(map[string]any)
	if labels, _ := md["labels"].(map[string]any); labels["converted"] != "yes" || md["generation"] == float64(99) {
		t.Errorf("a webhook's labels are kept, its other metadata is not: %v", md)
	}
	cw.set("extra")
	if o := get(v1 + "/three"); o["notInAnySchema"] != nil || o["hostPort"] != "grpc:9090" {
		t.Errorf("what the webhook adds outside the schema is pruned: %v", o)
	}
	cw.set("")
	if code, _, b := c.do("GET", v2+"/four", "", ""); code != 404 {
		t.Errorf("the create that failed stored nothing: %d %s", code, b)
	}
}

// TestFieldSelectorsAtEachVersion: with a conversion webhook, each
// version selects by its own selectableFields, read from the object
// converted to it — lists, watches (an object that stops matching is
// DELETED) and deletecollection — and a field only another version has is
// refused naming it (the conformance suite's CustomResourceFieldSelectors).
func TestFieldSelectorsAtEachVersion(t *testing.T) {
	s := testserver.New(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c := newRESTClient(t, client.Config{}, s.Addr())
	cw := newConversionWebhook(t)
	crd := `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"endpoints.example.com"},` +
		`"spec":{"group":"example.com","scope":"Namespaced","names":{"plural":"endpoints","kind":"Endpoint"},"versions":[` +
		`{"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object","properties":{"hostPort":{"type":"string"}}}},"selectableFields":[{"jsonPath":".hostPort"}]},` +
		`{"name":"v2","served":true,"storage":false,"schema":{"openAPIV3Schema":{"type":"object","properties":{"host":{"type":"string"},"port":{"type":"string"}}}},"selectableFields":[{"jsonPath":".host"},{"jsonPath":".port"}]}],` +
		`"conversion":{"strategy":"Webhook","webhook":{"conversionReviewVersions":["v1"],"clientConfig":{"url":"` + cw.URL + `/convert","caBundle":"` + (&webhookServer{Server: cw.Server}).caBundle() + `"}}}}}`
	if code, _, b := c.do("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", "", crd); code != 201 {
		t.Fatalf("create the definition: %d %s", code, b)
	}
	const v1, v2 = "/apis/example.com/v1/namespaces/default/endpoints", "/apis/example.com/v2/namespaces/default/endpoints"
	create := func(name, host, port string) {
		body := `{"apiVersion":"example.com/v2","kind":"Endpoint","metadata":{"name":"` + name + `"},"host":"` + host + `","port":"` + port + `"}`
		for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			code, _, b := c.do("POST", v2, "", body)
			if code == 201 {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("create %s: %d %s", name, code, b)
			}
		}
	}
	create("a", "host1", "80")
	create("d", "host1", "9")
	names := func(path string) string {
		t.Helper()
		code, _, b := c.do("GET", path, "", "")
		if code != 200 {
			t.Fatalf("GET %s: %d %s", path, code, b)
		}
		var out []string
		for _, it := range decodeJSON(t, b)["items"].([]any) {
			out = append(out, it.(map[string]any)["metadata"].(map[string]any)["name"].(string))
		}
		return strings.Join(out, ",")
	}
	_, _, lb := c.do("GET", v2, "", "")
	rv := decodeJSON(t, lb)["metadata"].(map[string]any)["resourceVersion"].(string)
	req, _ := http.NewRequestWithContext(ctx, "GET", "http://"+s.Addr()+v2+"?watch=1&fieldSelector=host%3Dhost1&resourceVersion="+rv, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	events := make(chan string, 16)
	go func() {
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			var ev struct {
				Type   string         `json:"type"`
				Object map[string]any `json:"object"`
			}
			if json.Unmarshal(sc.Bytes(), &ev) == nil {
				events <- ev.Type + " " + ev.Object["metadata"].(map[string]any)["name"].(string)
			}
		}
	}()
	create("b", "host1", "8080")
	create("c", "host2", "80")
	if got := names(v2 + "?fieldSelector=host%3Dhost1"); got != "a,b,d" {
		t.Errorf("v2 host=host1: %q, want a,b,d", got)
	}
	if got := names(v2 + "?fieldSelector=host%3Dhost1,port%3D80"); got != "a" {
		t.Errorf("v2 host=host1,port=80: %q, want a", got)
	}
	if got := names(v1 + "?fieldSelector=hostPort%3Dhost1:8080"); got != "b" {
		t.Errorf("v1 hostPort=host1:8080: %q, want b", got)
	}
	if code, _, b := c.do("GET", v2+"?fieldSelector=hostPort%3Dx", "", ""); code != 400 || !strings.Contains(string(b), "field label not supported: hostPort") {
		t.Errorf("a v1 field at v2: want 400 naming it, got %d %s", code, b)
	}
	// b stops matching, a is deleted by a selected deletecollection.
	if code, _, b := c.do("PATCH", v2+"/b", "", `{"host":"host2"}`, "Content-Type", "application/merge-patch+json"); code != 200 {
		t.Fatalf("move b to host2: %d %s", code, b)
	}
	// d matched before the watch began: its change is judged by what it was.
	if code, _, b := c.do("PATCH", v2+"/d", "", `{"host":"host3"}`, "Content-Type", "application/merge-patch+json"); code != 200 {
		t.Fatalf("move d to host3: %d %s", code, b)
	}
	if code, _, b := c.do("DELETE", v2+"?fieldSelector=host%3Dhost1,port%3D80", "", ""); code != 200 {
		t.Fatalf("deletecollection host=host1,port=80: %d %s", code, b)
	}
	if got := names(v2); got != "b,c,d" {
		t.Errorf("after the deletecollection: %q, want b,c,d", got)
	}
	want := []string{"ADDED b", "DELETED b", "DELETED d", "DELETED a"}
	for _, w := range want {
		select {
		case got := <-events:
			if got != w {
				t.Errorf("watch host=host1: got %q, want %q (in order %v)", got, w, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("watch host=host1: no %q", w)
		}
	}
}
