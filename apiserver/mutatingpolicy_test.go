package apiserver_test

import (
	"strings"
	"testing"
	"time"

	"github.com/kobune/kobune/apiserver/testserver"
	"github.com/kobune/kobune/client"
)

// TestMutatingAdmissionPolicies (issue #36): a MutatingAdmissionPolicy's
// bound mutations change the requests they select, as kube-apiserver's
// do: an apply configuration (Object{...}) merges into the object —
// maps merged, containers by name, scalars replaced — a JSONPatch list
// patches it, each mutation sees the one before; a policy whose
// expression fails fails the request (failurePolicy Fail) or is passed
// over (Ignore); an expression that does not compile, or a mutation
// without its expression, is refused naming the field.
func TestMutatingAdmissionPolicies(t *testing.T) {
	s := testserver.New(t)
	c := newRESTClient(t, client.Config{}, s.Addr())
	const (
		policies = "/apis/admissionregistration.k8s.io/v1/mutatingadmissionpolicies"
		bindings = "/apis/admissionregistration.k8s.io/v1/mutatingadmissionpolicybindings"
		deps     = "/apis/apps/v1/namespaces/default/deployments"
	)
	policy := func(name, failure, mutations string) string {
		return `{"apiVersion":"admissionregistration.k8s.io/v1","kind":"MutatingAdmissionPolicy","metadata":{"name":"` + name + `"},"spec":{` +
			`"matchConstraints":{"resourceRules":[{"apiGroups":["apps"],"apiVersions":["v1"],"operations":["CREATE"],"resources":["deployments"]}]},` +
			`"failurePolicy":"` + failure + `","reinvocationPolicy":"Never","mutations":` + mutations + `}}`
	}
	binding := func(name, policy string) string {
		return `{"apiVersion":"admissionregistration.k8s.io/v1","kind":"MutatingAdmissionPolicyBinding","metadata":{"name":"` + name + `"},"spec":{"policyName":"` + policy + `"}}`
	}
	for _, bad := range []struct{ body, field string }{
		{policy("bad", "Fail", `[{"patchType":"ApplyConfiguration","applyConfiguration":{"expression":"Object{spec: "}}]`), "spec.mutations[0].applyConfiguration.expression"},
		{policy("bad", "Fail", `[{"patchType":"ApplyConfiguration"}]`), "spec.mutations[0].applyConfiguration"},
		{policy("bad", "Fail", `[{"patchType":"Merge","applyConfiguration":{"expression":"Object{}"}}]`), "spec.mutations[0].patchType"},
	} {
		if code, _, b := c.do("POST", policies, "", bad.body); code != 422 || !strings.Contains(string(b), bad.field) {
			t.Errorf("%s: want 422 naming %s, got %d %s", bad.body, bad.field, code, b)
		}
	}
	mutations := `[{"patchType":"ApplyConfiguration","applyConfiguration":{"expression":` +
		`"Object{metadata: Object.metadata{annotations: {\"mutated-by\": \"policy\"}}, spec: Object.spec{replicas: 7, template: Object.spec.template{spec: Object.spec.template.spec{containers: [Object.spec.template.spec.containers{name: \"app\", image: \"kobune.local/labapp:2.0\"}]}}}}"}},` +
		`{"patchType":"JSONPatch","jsonPatch":{"expression":"[JSONPatch{op: \"add\", path: \"/metadata/labels/replicas-seen\", value: string(object.spec.replicas)}]"}}]`
	if code, _, b := c.do("POST", policies, "", policy("shape", "Fail", mutations)); code != 201 {
		t.Fatalf("create the policy: %d %s", code, b)
	}
	if code, _, b := c.do("POST", bindings, "", binding("shape", "shape")); code != 201 {
		t.Fatalf("create the binding: %d %s", code, b)
	}
	dep := func(name string) string {
		return `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"` + name + `","labels":{"app":"web"}},"spec":{"replicas":2,"selector":{"matchLabels":{"app":"web"}},` +
			`"template":{"metadata":{"labels":{"app":"web"}},"spec":{"containers":[{"name":"app","image":"kobune.local/labapp:1.0"},{"name":"side","image":"kobune.local/labapp:1.0"}]}}}}`
	}
	var got map[string]any
	for deadline, i := time.Now().Add(20*time.Second), 0; ; i++ {
		name := "web-" + string(rune('a'+i%26)) + time.Now().Format("150405.000")[7:]
		code, _, b := c.do("POST", deps, "", dep(name))
		if code != 201 {
			t.Fatalf("create a Deployment: %d %s", code, b)
		}
		if got = decodeJSON(t, b); got["metadata"].(map[string]any)["annotations"] != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the policy never mutated a Deployment: %s", b)
		}
		time.Sleep(100 * time.Millisecond)
	}
	md := got["metadata"].(map[string]any)
	spec := got["spec"].(map[string]any)
	containers := spec["template"].(map[string]any)["spec"].(map[string]any)["containers"].([]any)
	if md["annotations"].(map[string]any)["mutated-by"] != "policy" || spec["replicas"] != float64(7) || len(containers) != 2 ||
		containers[0].(map[string]any)["image"] != "kobune.local/labapp:2.0" || containers[1].(map[string]any)["image"] != "kobune.local/labapp:1.0" {
		t.Errorf("the apply configuration merged: annotations %v, replicas %v, containers %v", md["annotations"], spec["replicas"], containers)
	}
	if md["labels"].(map[string]any)["replicas-seen"] != "7" || md["labels"].(map[string]any)["app"] != "web" {
		t.Errorf("the JSON patch, after the apply configuration: labels %v", md["labels"])
	}

	// A mutation that fails: Fail refuses, Ignore passes over.
	if code, _, b := c.do("POST", policies, "", policy("broken", "Fail", `[{"patchType":"JSONPatch","jsonPatch":{"expression":"[JSONPatch{op: \"replace\", path: \"/spec/nothere/x\", value: 1}]"}}]`)); code != 201 {
		t.Fatalf("create the broken policy: %d %s", code, b)
	}
	if code, _, b := c.do("POST", bindings, "", binding("broken", "broken")); code != 201 {
		t.Fatalf("bind it: %d %s", code, b)
	}
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		code, _, b := c.do("POST", deps, "", dep("refused-"+time.Now().Format("150405.000")[7:]))
		if code == 400 && strings.Contains(string(b), "MutatingAdmissionPolicy 'broken' with binding 'broken' denied request") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a failing mutation under Fail: want 400 naming the policy, got %d %s", code, b)
		}
	}
	_, _, cur := c.do("GET", policies+"/broken", "", "")
	rv := decodeJSON(t, cur)["metadata"].(map[string]any)["resourceVersion"].(string)
	if code, _, b := c.do("PUT", policies+"/broken", "", strings.Replace(policy("broken", "Ignore", `[{"patchType":"JSONPatch","jsonPatch":{"expression":"[JSONPatch{op: \"replace\", path: \"/spec/nothere/x\", value: 1}]"}}]`),
		`"name":"broken"`, `"name":"broken","resourceVersion":"`+rv+`"`, 1)); code != 200 {
		t.Fatalf("make it Ignore: %d %s", code, b)
	}
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		code, _, b := c.do("POST", deps, "", dep("ignored-"+time.Now().Format("150405.000")[7:]))
		if code == 201 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a failing mutation under Ignore: want the create, got %d %s", code, b)
		}
	}
}

// TestMutatingAdmissionPolicyReinvocation: a policy with
// reinvocationPolicy IfNeeded runs once more after a mutating webhook
// changed the object, and sees the webhook's change; one with Never does
// not.
func TestMutatingAdmissionPolicyReinvocation(t *testing.T) {
	s := testserver.New(t)
	c := newRESTClient(t, client.Config{}, s.Addr())
	ws := newWebhookServer(t)
	config := `{"metadata":{"name":"label"},"webhooks":[{"name":"label.example.com","clientConfig":{"url":"` + ws.URL + `/mutate","caBundle":"` + ws.caBundle() + `"},
	  "rules":[{"operations":["CREATE"],"apiGroups":[""],"apiVersions":["v1"],"resources":["configmaps"]}],"sideEffects":"None","admissionReviewVersions":["v1"]}]}`
	if code, _, b := c.do("POST", "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations", "", config); code != 201 {
		t.Fatalf("create the webhook configuration: %d %s", code, b)
	}
	// Each policy copies the webhook's label into an annotation of its own.
	for _, reinvoke := range []string{"IfNeeded", "Never"} {
		name := strings.ToLower(reinvoke)
		p := `{"apiVersion":"admissionregistration.k8s.io/v1","kind":"MutatingAdmissionPolicy","metadata":{"name":"` + name + `"},"spec":{` +
			`"matchConstraints":{"resourceRules":[{"apiGroups":[""],"apiVersions":["v1"],"operations":["CREATE"],"resources":["configmaps"]}]},` +
			`"failurePolicy":"Fail","reinvocationPolicy":"` + reinvoke + `","mutations":[{"patchType":"ApplyConfiguration","applyConfiguration":{"expression":` +
			`"has(object.metadata.labels) && 'mutated' in object.metadata.labels ? Object{metadata: Object.metadata{annotations: {'seen-by-` + name + `': object.metadata.labels['mutated']}}} : Object{}"}}]}}`
		if code, _, b := c.do("POST", "/apis/admissionregistration.k8s.io/v1/mutatingadmissionpolicies", "", p); code != 201 {
			t.Fatalf("create policy %s: %d %s", name, code, b)
		}
		if code, _, b := c.do("POST", "/apis/admissionregistration.k8s.io/v1/mutatingadmissionpolicybindings", "",
			`{"metadata":{"name":"`+name+`"},"spec":{"policyName":"`+name+`"}}`); code != 201 {
			t.Fatalf("bind policy %s: %d %s", name, code, b)
		}
	}
	var md map[string]any
	for deadline, i := time.Now().Add(20*time.Second), 0; ; i++ {
		_, _, b := c.do("POST", "/api/v1/namespaces/default/configmaps", "", `{"metadata":{"name":"cm`+strings.Repeat("x", i%5)+time.Now().Format("150405.000")[7:]+`"}}`)
		md = decodeJSON(t, b)["metadata"].(map[string]any)
		if ann, _ := md["annotations"].(map[string]any); ann["seen-by-ifneeded"] != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the IfNeeded policy never saw the webhook's label: %v", md)
		}
		time.Sleep(100 * time.Millisecond)
	}
	ann := md["annotations"].(map[string]any)
	if ann["seen-by-ifneeded"] != "yes" || ann["seen-by-never"] != nil {
		t.Errorf("IfNeeded runs again after the webhook, Never does not: annotations %v", ann)
	}
}
