package apiserver_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
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

// webhookServer is an admission webhook over TLS: /mutate labels the
// object, /deny refuses an object with a "forbidden" key or label
// "protected" (and warns), /slow answers after 3 s. It records what it
// was asked.
type webhookServer struct {
	*httptest.Server
	mu   sync.Mutex
	seen []map[string]any
}

func newWebhookServer(t *testing.T) *webhookServer {
	ws := &webhookServer{}
	ws.Server = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var review struct {
			APIVersion string         `json:"apiVersion"`
			Request    map[string]any `json:"request"`
		}
		if err := json.Unmarshal(b, &review); err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		if review.APIVersion != "admission.k8s.io/v1" { // as client-go's decoder in a real webhook
			http.Error(w, "no kind AdmissionReview is registered for version "+review.APIVersion, 400)
			return
		}
		req := review.Request
		req["_timeout"] = r.URL.Query().Get("timeout") // the deadline the server gives
		req["_path"] = r.URL.Path
		ws.mu.Lock()
		ws.seen = append(ws.seen, req)
		ws.mu.Unlock()
		resp := map[string]any{"uid": req["uid"], "allowed": true}
		obj, _ := req["object"].(map[string]any)
		old, _ := req["oldObject"].(map[string]any)
		switch r.URL.Path {
		case "/mutate":
			md, _ := obj["metadata"].(map[string]any)
			p := `[{"op":"add","path":"/metadata/labels","value":{"mutated":"yes"}}]`
			if _, ok := md["labels"]; ok {
				p = `[{"op":"add","path":"/metadata/labels/mutated","value":"yes"}]`
			}
			resp["patch"], resp["patchType"] = base64.StdEncoding.EncodeToString([]byte(p)), "JSONPatch"
		case "/deny":
			resp["warnings"] = []string{"careful: " + req["operation"].(string)}
			data, _ := obj["data"].(map[string]any)
			oldMeta, _ := old["metadata"].(map[string]any)
			oldLabels, _ := oldMeta["labels"].(map[string]any)
			if _, bad := data["forbidden"]; bad {
				resp["allowed"], resp["status"] = false, map[string]any{"code": 403, "message": "no forbidden keys"}
			}
			if req["operation"] == "DELETE" && oldLabels["protected"] == "yes" {
				resp["allowed"], resp["status"] = false, map[string]any{"message": "protected"}
			}
		case "/annotate":
			// Records how many labels it saw: a webhook after it that adds
			// a label makes it stale, which IfNeeded corrects.
			md, _ := obj["metadata"].(map[string]any)
			labels, _ := md["labels"].(map[string]any)
			p := fmt.Sprintf(`[{"op":"add","path":"/metadata/annotations","value":{"labels-seen":"%d"}}]`, len(labels))
			resp["patch"], resp["patchType"] = base64.StdEncoding.EncodeToString([]byte(p)), "JSONPatch"
		case "/mutate-spec":
			p := `[{"op":"add","path":"/spec/addedByWebhook","value":"x"},{"op":"add","path":"/spec/name","value":"hooked"}]`
			resp["patch"], resp["patchType"] = base64.StdEncoding.EncodeToString([]byte(p)), "JSONPatch"
		case "/add-init": // the conformance suite's pod mutator: an init container, no defaults
			p := `[{"op":"add","path":"/spec/initContainers","value":[{"name":"webhook-added-init-container","image":"kobune.local/pause"}]}]`
			resp["patch"], resp["patchType"] = base64.StdEncoding.EncodeToString([]byte(p)), "JSONPatch"
		case "/deny-attach": // the conformance suite's webhook: no input to container c1
			if req["subResource"] == "attach" && obj["stdin"] == true && obj["container"] == "c1" {
				resp["allowed"], resp["status"] = false, map[string]any{"message": fmt.Sprintf("attaching to pod '%s' is not allowed", req["name"])}
			}
		case "/slow/Fail", "/slow/Ignore":
			time.Sleep(3 * time.Second)
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": resp})
	}))
	t.Cleanup(ws.Close)
	return ws
}

func (ws *webhookServer) caBundle() string {
	return base64.StdEncoding.EncodeToString(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ws.Certificate().Raw}))
}

func (ws *webhookServer) asked(op, name string) map[string]any { return ws.askedAt("", op, name) }

// askedAt is the last review of op on name sent to path ("": any).
func (ws *webhookServer) askedAt(path, op, name string) map[string]any {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	for i := len(ws.seen) - 1; i >= 0; i-- {
		if ws.seen[i]["operation"] == op && ws.seen[i]["name"] == name && (path == "" || ws.seen[i]["_path"] == path) {
			return ws.seen[i]
		}
	}
	return nil
}

// TestAdmissionWebhooks (issue #36): the API server calls the webhooks
// of Mutating- and ValidatingWebhookConfigurations over TLS with the
// configured CA: a mutating webhook's JSON patch lands on the stored
// object, a validating one refuses with its code and message (creates,
// updates and deletes, with the old object), warnings reach the client;
// namespace selectors and CEL match conditions choose the requests; a
// webhook that answers after its timeout fails the request under
// failurePolicy Fail and is passed over under Ignore; a dry run says so;
// a configuration that breaks the rules is refused naming the field.
func TestAdmissionWebhooks(t *testing.T) {
	s := testserver.New(t)
	c := newRESTClient(t, client.Config{}, s.Addr())
	ws := newWebhookServer(t)
	hook := func(name, path, extra string) string {
		return `{"name":"` + name + `","clientConfig":{"url":"` + ws.URL + path + `","caBundle":"` + ws.caBundle() + `"},
		  "rules":[{"operations":["CREATE","UPDATE","DELETE"],"apiGroups":[""],"apiVersions":["v1"],"resources":["configmaps"]}],
		  "sideEffects":"None","admissionReviewVersions":["v1"]` + extra + `}`
	}
	const mutating = "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations"
	const validating = "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations"
	if code, _, b := c.do("POST", mutating, "", `{"metadata":{"name":"label"},"webhooks":[`+
		hook("label.example.com", "/mutate", `,"matchConditions":[{"name":"not-skipped","expression":"object.metadata.name != 'skip-me'"}]`)+`]}`); code != 201 {
		t.Fatalf("create the mutating configuration: %d %s", code, b)
	}
	if code, _, b := c.do("POST", validating, "", `{"metadata":{"name":"deny"},"webhooks":[`+
		hook("deny.example.com", "/deny", `,"namespaceSelector":{"matchLabels":{"webhooks":"on"}}`)+`]}`); code != 201 {
		t.Fatalf("create the validating configuration: %d %s", code, b)
	}
	for _, ns := range []string{`{"metadata":{"name":"on","labels":{"webhooks":"on"}}}`, `{"metadata":{"name":"off"}}`} {
		if code, _, b := c.do("POST", "/api/v1/namespaces", "", ns); code != 201 {
			t.Fatalf("namespace: %d %s", code, b)
		}
	}
	cm := func(name, data string) string {
		return `{"metadata":{"name":"` + name + `"},"data":` + data + `}`
	}
	// The configurations are followed, not read per request: wait until
	// the mutating webhook is called.
	var b []byte
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		var code int
		code, _, b = c.do("POST", "/api/v1/namespaces/off/configmaps", "", cm("probe", `{"a":"b"}`))
		if code != 201 {
			t.Fatalf("create a ConfigMap: %d %s", code, b)
		}
		if strings.Contains(string(b), `"mutated":"yes"`) {
			break
		}
		c.do("DELETE", "/api/v1/namespaces/off/configmaps/probe", "", "")
		if time.Now().After(deadline) {
			t.Fatalf("the mutating webhook was never called: %s", b)
		}
	}
	if got := ws.asked("CREATE", "probe"); got == nil || got["_timeout"] != "10s" {
		t.Errorf("the webhook's URL carries timeout=%v; want 10s (its default timeoutSeconds, as kube-apiserver sends it)", got["_timeout"])
	}
	code, _, b := c.do("POST", "/api/v1/namespaces/on/configmaps", "", cm("bad", `{"forbidden":"x"}`))
	if code != 403 || !strings.Contains(string(b), `admission webhook \"deny.example.com\" denied the request: no forbidden keys`) {
		t.Errorf("a refused create: %d %s", code, b)
	}
	if code, _, _ := c.do("GET", "/api/v1/namespaces/on/configmaps/bad", "", ""); code != 404 {
		t.Errorf("a refused ConfigMap was stored")
	}
	if code, _, b := c.do("POST", "/api/v1/namespaces/off/configmaps", "", cm("bad", `{"forbidden":"x"}`)); code != 201 {
		t.Errorf("the namespace selector does not select namespace off: %d %s", code, b)
	}
	if _, _, b := c.do("POST", "/api/v1/namespaces/off/configmaps", "", cm("skip-me", `{}`)); strings.Contains(string(b), "mutated") {
		t.Errorf("a match condition that is false still called the webhook: %s", b)
	}
	code, h, b := c.do("POST", "/api/v1/namespaces/on/configmaps", "", `{"metadata":{"name":"keep","labels":{"protected":"yes"}},"data":{"a":"b"}}`)
	if code != 201 || !strings.Contains(string(b), `"mutated":"yes"`) || !strings.Contains(string(b), `"protected":"yes"`) {
		t.Fatalf("create keep: %d %s", code, b)
	}
	if !strings.Contains(h.Get("Warning"), "careful: CREATE") {
		t.Errorf("the webhook's warning is not passed on: %q", h.Get("Warning"))
	}
	code, _, b = c.do("DELETE", "/api/v1/namespaces/on/configmaps/keep", "", "")
	if code != 400 || !strings.Contains(string(b), `denied the request: protected`) {
		t.Errorf("a refused delete: %d %s", code, b)
	}
	if r := ws.asked("DELETE", "keep"); r == nil || r["oldObject"] == nil || r["object"] != nil {
		t.Errorf("the delete's review: %v", r)
	}
	if r := ws.asked("CREATE", "keep"); r == nil || r["userInfo"].(map[string]any)["username"] == "" || r["resource"].(map[string]any)["resource"] != "configmaps" {
		t.Errorf("the create's review: %v", r)
	}
	if code, _, b := c.do("POST", "/api/v1/namespaces/on/configmaps?dryRun=All", "", cm("dry", `{}`)); code != 201 {
		t.Errorf("a dry run: %d %s", code, b)
	}
	if r := ws.asked("CREATE", "dry"); r == nil || r["dryRun"] != true {
		t.Errorf("the dry run's review: %v", r)
	}

	// reinvocationPolicy IfNeeded: "annotate" (configuration "a-annotate",
	// called before "label") sees no label; "label" then adds one, so
	// "annotate" is called again and sees it.
	annotate := `{"metadata":{"name":"a-annotate"},"webhooks":[` + strings.Replace(hook("annotate.example.com", "/annotate", `,"reinvocationPolicy":"IfNeeded","objectSelector":{"matchLabels":{"reinvoke":"yes"}}`), `"CREATE","UPDATE","DELETE"`, `"CREATE"`, 1) + `]}`
	if code, _, b := c.do("POST", mutating, "", annotate); code != 201 {
		t.Fatalf("create the annotating configuration: %d %s", code, b)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		c.do("DELETE", "/api/v1/namespaces/off/configmaps/again", "", "")
		_, _, b = c.do("POST", "/api/v1/namespaces/off/configmaps", "", `{"metadata":{"name":"again","labels":{"reinvoke":"yes"}}}`)
		if strings.Contains(string(b), "labels-seen") || time.Now().After(deadline) {
			break
		}
	}
	if !strings.Contains(string(b), `"labels-seen":"2"`) {
		t.Errorf("a webhook with reinvocationPolicy IfNeeded was not called again after a later webhook changed the object: %s", b)
	}

	// A webhook that answers late: Fail fails the request, Ignore passes.
	// Each policy's webhook has a path of its own: the request that counts
	// is the first that reached it (the configuration has reached the
	// server's cache), not one another webhook saw.
	for _, policy := range []string{"Fail", "Ignore"} {
		body := `{"metadata":{"name":"slow"},"webhooks":[` + hook("slow.example.com", "/slow/"+policy, `,"timeoutSeconds":1,"failurePolicy":"`+policy+`"`) + `]}`
		c.do("DELETE", validating+"/slow", "", "")
		if code, _, b := c.do("POST", validating, "", body); code != 201 {
			t.Fatalf("create the slow configuration: %d %s", code, b)
		}
		var code int
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
			c.do("DELETE", "/api/v1/namespaces/off/configmaps/late", "", "")
			code, _, b = c.do("POST", "/api/v1/namespaces/off/configmaps", "", cm("late", `{}`))
			if ws.askedAt("/slow/"+policy, "CREATE", "late") != nil || time.Now().After(deadline) {
				break
			}
		}
		switch {
		case policy == "Fail" && (code != 500 || !strings.Contains(string(b), `failed calling webhook \"slow.example.com\"`)):
			t.Errorf("a late webhook under Fail: %d %s", code, b)
		case policy == "Ignore" && code != 201:
			t.Errorf("a late webhook under Ignore: %d %s", code, b)
		}
		ws.mu.Lock()
		ws.seen = nil
		ws.mu.Unlock()
	}

	for _, bad := range []struct{ extra, field string }{
		{`,"timeoutSeconds":40`, "webhooks[0].timeoutSeconds"},
		{`,"failurePolicy":"Sometimes"`, "webhooks[0].failurePolicy"},
	} {
		body := `{"metadata":{"name":"broken"},"webhooks":[` + hook("broken.example.com", "/deny", bad.extra) + `]}`
		if code, _, b := c.do("POST", validating, "", body); code != 422 || !strings.Contains(string(b), bad.field) {
			t.Errorf("a bad configuration: %d %s; want 422 naming %s", code, b, bad.field)
		}
	}
	body := strings.Replace(`{"metadata":{"name":"broken"},"webhooks":[`+hook("broken.example.com", "/deny", "")+`]}`, `"sideEffects":"None"`, `"sideEffects":"Some"`, 1)
	if code, _, b := c.do("POST", validating, "", body); code != 422 || !strings.Contains(string(b), "webhooks[0].sideEffects") {
		t.Errorf("sideEffects Some: %d %s", code, b)
	}
	// A service path "" is no path (the conformance suite sends one), and
	// "x" is refused.
	svc := func(path string) string {
		return `{"metadata":{"name":"by-service"},"webhooks":[{"name":"svc.example.com","clientConfig":{"service":{"namespace":"default","name":"hooks","path":"` + path + `"}},` +
			`"rules":[{"operations":["CREATE"],"apiGroups":[""],"apiVersions":["v1"],"resources":["secrets"]}],"sideEffects":"None","admissionReviewVersions":["v1"]}]}`
	}
	if code, _, b := c.do("POST", validating, "", svc("x")); code != 422 || !strings.Contains(string(b), "webhooks[0].clientConfig.service.path") {
		t.Errorf("a service path without /: %d %s", code, b)
	}
	if code, _, b := c.do("POST", validating, "", svc("")); code != 201 {
		t.Errorf("a service path \"\": %d %s", code, b)
	}
}

// TestWebhookPatchOfACustomResourceIsPruned (issue #36; the conformance
// suite's "should mutate custom resource with pruning"): what a mutating
// webhook adds to a custom resource that its schema does not name is
// pruned; what it names stays.
func TestWebhookPatchOfACustomResourceIsPruned(t *testing.T) {
	s := testserver.New(t)
	c := newRESTClient(t, client.Config{}, s.Addr())
	ws := newWebhookServer(t)
	if code, _, b := c.do("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", "", widgetCRD); code != 201 {
		t.Fatalf("create the definition: %d %s", code, b)
	}
	hook := `{"metadata":{"name":"spec"},"webhooks":[{"name":"spec.example.com","clientConfig":{"url":"` + ws.URL + `/mutate-spec","caBundle":"` + ws.caBundle() + `"},` +
		`"rules":[{"operations":["CREATE"],"apiGroups":["example.com"],"apiVersions":["v1"],"resources":["widgets"]}],"sideEffects":"None","admissionReviewVersions":["v1"]}]}`
	if code, _, b := c.do("POST", "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations", "", hook); code != 201 {
		t.Fatalf("create the configuration: %d %s", code, b)
	}
	for i, deadline := 0, time.Now().Add(20*time.Second); ; i++ {
		name := fmt.Sprintf("w%d", i)
		code, _, b := c.do("POST", "/apis/example.com/v1/namespaces/default/widgets", "", `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"`+name+`"},"spec":{"color":"red"}}`)
		if code == 201 && strings.Contains(string(b), `"name":"hooked"`) {
			if strings.Contains(string(b), "addedByWebhook") {
				t.Errorf("a field the schema does not name, added by a webhook, was kept: %s", b)
			}
			if _, _, b := c.do("GET", "/apis/example.com/v1/namespaces/default/widgets/"+name, "", ""); strings.Contains(string(b), "addedByWebhook") {
				t.Errorf("stored with the field the schema does not name: %s", b)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the mutating webhook never changed a widget: %d %s", code, b)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestWebhooksJudgeConnectRequests (issue #36; the conformance suite's
// "should be able to deny attaching pod"): attach, exec and port-forward
// reach the admission webhooks as CONNECT requests on their options
// (PodAttachOptions ...), through both doors, before the pod is looked at
// and before Kobune's own refusal of stdin, so that the webhook's denial is
// what the client reads.
func TestWebhooksJudgeConnectRequests(t *testing.T) {
	s := testserver.New(t)
	c := newRESTClient(t, client.Config{}, s.Addr())
	ws := newWebhookServer(t)
	config := `{"metadata":{"name":"deny-attach"},"webhooks":[{"name":"deny-attach.example.com","clientConfig":{"url":"` + ws.URL + `/deny-attach","caBundle":"` + ws.caBundle() + `"},
	  "rules":[{"operations":["CONNECT"],"apiGroups":[""],"apiVersions":["v1"],"resources":["pods/attach","pods/exec","pods/portforward"]}],
	  "sideEffects":"None","admissionReviewVersions":["v1"]}]}`
	if code, _, b := c.do("POST", "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations", "", config); code != 201 {
		t.Fatalf("create the configuration: %d %s", code, b)
	}
	if code, _, b := c.do("POST", "/api/v1/namespaces/default/pods", "", `{"metadata":{"name":"target"},"spec":{"containers":[{"name":"c1","image":"kobune.local/pause"}]}}`); code != 201 {
		t.Fatalf("create the pod: %d %s", code, b)
	}
	const attach = "/api/v1/namespaces/default/pods/target/attach?stdin=true&stdout=true&container="
	var code int
	var b []byte
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if code, _, b = c.do("POST", attach+"c1", "", ""); strings.Contains(string(b), "not allowed") || time.Now().After(deadline) {
			break
		}
	}
	if code != 400 || !strings.Contains(string(b), `admission webhook \"deny-attach.example.com\" denied the request: attaching to pod 'target' is not allowed`) {
		t.Fatalf("an attach the webhook denies: %d %s", code, b)
	}
	r := ws.asked("CONNECT", "target")
	kind, _ := r["kind"].(map[string]any)
	obj, _ := r["object"].(map[string]any)
	if r == nil || kind["kind"] != "PodAttachOptions" || r["subResource"] != "attach" || r["namespace"] != "default" || obj["kind"] != "PodAttachOptions" || obj["stdout"] != true {
		t.Errorf("the attach's review: %v", r)
	}
	// Allowed by the webhook: Kobune's own refusal of input comes next.
	if code, _, b = c.do("POST", attach+"c2", "", ""); code != 400 || !strings.Contains(string(b), "without stdin or a terminal") {
		t.Errorf("an attach with stdin the webhook allows: %d %s, want Kobune's refusal of stdin", code, b)
	}
	if code, _, b = c.do("POST", "/api/v1/namespaces/default/pods/target/exec?command=ls&command=-l&stdout=true", "", ""); !strings.Contains(string(b), "not scheduled") {
		t.Errorf("an exec the webhook allows: %d %s, want it to reach the pod (not scheduled yet)", code, b)
	}
	if r := ws.asked("CONNECT", "target"); r["subResource"] != "exec" || fmt.Sprint(r["object"].(map[string]any)["command"]) != "[ls -l]" {
		t.Errorf("the exec's review: %v", r)
	}
	// The gRPC door asks the same webhooks.
	rd, err := s.Client.Attach(context.Background(), "default", "target", "c1", true, false)
	if err == nil {
		_, err = io.ReadAll(rd)
	}
	if err == nil || !strings.Contains(err.Error(), "attaching to pod 'target' is not allowed") {
		t.Errorf("a gRPC attach the webhook denies: %v", err)
	}
}

// TestWebhookAdditionsAreDefaulted (issue #36; the conformance suite's
// "should mutate pod and apply defaults after mutation"): what a mutating
// webhook adds to a pod gets the pod's defaults, as kube-apiserver decodes
// a webhook's patch with defaulting.
func TestWebhookAdditionsAreDefaulted(t *testing.T) {
	s := testserver.New(t)
	c := newRESTClient(t, client.Config{}, s.Addr())
	ws := newWebhookServer(t)
	config := `{"metadata":{"name":"add-init"},"webhooks":[{"name":"add-init.example.com","clientConfig":{"url":"` + ws.URL + `/add-init","caBundle":"` + ws.caBundle() + `"},
	  "rules":[{"operations":["CREATE"],"apiGroups":[""],"apiVersions":["v1"],"resources":["pods"]}],"sideEffects":"None","admissionReviewVersions":["v1"]}]}`
	if code, _, b := c.do("POST", "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations", "", config); code != 201 {
		t.Fatalf("create the configuration: %d %s", code, b)
	}
	var b []byte
	for deadline, i := time.Now().Add(10*time.Second), 0; ; i++ {
		_, _, b = c.do("POST", "/api/v1/namespaces/default/pods", "", fmt.Sprintf(`{"metadata":{"name":"p%d"},"spec":{"containers":[{"name":"c","image":"kobune.local/pause"}]}}`, i))
		if strings.Contains(string(b), "webhook-added-init-container") || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if !strings.Contains(string(b), `{"name":"webhook-added-init-container","image":"kobune.local/pause","terminationMessagePath":"/dev/termination-log","terminationMessagePolicy":"File","imagePullPolicy":"Always"}`) {
		t.Errorf("the webhook's init container lacks the defaults: %s", b)
	}
}

// TestWebhookReviewVersionIsTheWebhooks: the AdmissionReview is sent in
// the version the webhook takes (admission.k8s.io/v1), whatever the
// version of the object's kind (autoscaling/v2 here: it was sent as
// admission.k8s.io/v2 once, and the suite's webhook refused it).
func TestWebhookReviewVersionIsTheWebhooks(t *testing.T) {
	s := testserver.New(t)
	c := newRESTClient(t, client.Config{}, s.Addr())
	ws := newWebhookServer(t)
	config := `{"metadata":{"name":"hpa"},"webhooks":[{"name":"hpa.example.com","clientConfig":{"url":"` + ws.URL + `/mutate","caBundle":"` + ws.caBundle() + `"},
	  "rules":[{"operations":["CREATE"],"apiGroups":["autoscaling"],"apiVersions":["*"],"resources":["horizontalpodautoscalers"]}],"sideEffects":"None","admissionReviewVersions":["v1"]}]}`
	if code, _, b := c.do("POST", "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations", "", config); code != 201 {
		t.Fatalf("create the configuration: %d %s", code, b)
	}
	var code int
	var b []byte
	for deadline, i := time.Now().Add(10*time.Second), 0; ; i++ {
		code, _, b = c.do("POST", "/apis/autoscaling/v2/namespaces/default/horizontalpodautoscalers", "", fmt.Sprintf(`{"apiVersion":"autoscaling/v2","kind":"HorizontalPodAutoscaler","metadata":{"name":"h%d"},`+
			`"spec":{"scaleTargetRef":{"apiVersion":"apps/v1","kind":"Deployment","name":"web"},"maxReplicas":3}}`, i))
		if code != 201 || strings.Contains(string(b), `"mutated":"yes"`) || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if code != 201 || !strings.Contains(string(b), `"mutated":"yes"`) {
		t.Errorf("an HPA through a mutating webhook: %d %s", code, b)
	}
}
