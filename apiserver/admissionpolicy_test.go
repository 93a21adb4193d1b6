package apiserver_test

import (
	"strings"
	"testing"
	"time"

	"github.com/kobune/kobune/apiserver/testserver"
	"github.com/kobune/kobune/client"
)

// TestValidatingAdmissionPolicies (issue #36): a policy's CEL validations,
// with its variables and a ConfigMap as parameters, refuse a Deployment
// in a namespace its binding selects (Deny, with the message the
// messageExpression makes), let it through elsewhere, refuse when the
// parameters are missing under parameterNotFoundAction Deny, and warn
// under a Warn binding; a policy whose expression does not compile is
// refused naming it.
func TestValidatingAdmissionPolicies(t *testing.T) {
	s := testserver.New(t)
	c := newRESTClient(t, client.Config{}, s.Addr())
	const api = "/apis/admissionregistration.k8s.io/v1/"
	for _, o := range []struct{ path, body string }{
		{"/api/v1/namespaces", `{"metadata":{"name":"team","labels":{"team":"yes"}}}`},
		{"/api/v1/namespaces/default/configmaps", `{"metadata":{"name":"limits"},"data":{"maxReplicas":"3"}}`},
		{api + "validatingadmissionpolicies", `{"metadata":{"name":"replicas-limit"},"spec":{
			"paramKind":{"apiVersion":"v1","kind":"ConfigMap"},
			"matchConstraints":{"resourceRules":[{"apiGroups":["apps"],"apiVersions":["v1"],"operations":["CREATE","UPDATE"],"resources":["deployments"]}]},
			"variables":[{"name":"replicas","expression":"object.spec.replicas"}],
			"validations":[{"expression":"variables.replicas <= int(params.data.maxReplicas)",
			  "messageExpression":"'replicas must be at most ' + params.data.maxReplicas"}]}}`},
		{api + "validatingadmissionpolicybindings", `{"metadata":{"name":"limit-in-team"},"spec":{"policyName":"replicas-limit",
			"paramRef":{"name":"limits","namespace":"default","parameterNotFoundAction":"Deny"},
			"matchResources":{"namespaceSelector":{"matchLabels":{"team":"yes"}}},
			"validationActions":["Deny"]}}`},
		{api + "validatingadmissionpolicies", `{"metadata":{"name":"no-tmp"},"spec":{
			"matchConstraints":{"resourceRules":[{"apiGroups":["apps"],"apiVersions":["v1"],"operations":["CREATE"],"resources":["deployments"]}]},
			"validations":[{"expression":"!object.metadata.name.startsWith('tmp-')","message":"temporary names are discouraged"}]}}`},
		{api + "validatingadmissionpolicybindings", `{"metadata":{"name":"no-tmp-warn"},"spec":{"policyName":"no-tmp","validationActions":["Warn"]}}`},
	} {
		if code, _, b := c.do("POST", o.path, "", o.body); code != 201 {
			t.Fatalf("create %s: %d %s", o.path, code, b)
		}
	}
	deploy := func(ns, name string, replicas string) (int, string, string) {
		code, h, b := c.do("POST", "/apis/apps/v1/namespaces/"+ns+"/deployments", "", `{"metadata":{"name":"`+name+`"},"spec":{"replicas":`+replicas+`,
			"selector":{"matchLabels":{"app":"x"}},"template":{"metadata":{"labels":{"app":"x"}},"spec":{"containers":[{"name":"x","image":"kobune.local/labapp:1.0"}]}}}}`)
		return code, h.Get("Warning"), string(b)
	}
	// The server reports the generation it applies in the policy's
	// status; the status subresource takes conditions, as Kubernetes'.
	var b []byte
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		_, _, b = c.do("GET", api+"validatingadmissionpolicies/no-tmp/status", "", "")
		if strings.Contains(string(b), `"observedGeneration":1`) || time.Now().After(deadline) {
			break
		}
	}
	if !strings.Contains(string(b), `"status":{"observedGeneration":1}`) {
		t.Errorf("the policy's status never says generation 1 is applied: %s", b)
	}
	if code, _, b := c.do("PATCH", api+"validatingadmissionpolicies/no-tmp/status", "", `{"status":{"conditions":[{"type":"Checked","status":"False","reason":"e2e","message":"m","lastTransitionTime":"2024-01-01T00:00:00Z"}]}}`,
		"Content-Type", "application/merge-patch+json"); code != 200 || !strings.Contains(string(b), `"type":"Checked"`) {
		t.Errorf("patch the policy's status: %d %s", code, b)
	}
	if _, _, b := c.do("GET", "/apis/admissionregistration.k8s.io/v1", "", ""); !strings.Contains(string(b), `"name":"validatingadmissionpolicies/status"`) {
		t.Errorf("discovery lacks validatingadmissionpolicies/status: %s", b)
	}
	// The policies are followed, not read per request: wait for the first.
	var code int
	var body string
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		code, _, body = deploy("team", "big", "5")
		if code != 201 || time.Now().After(deadline) {
			break
		}
		c.do("DELETE", "/apis/apps/v1/namespaces/team/deployments/big", "", "")
	}
	if code != 422 || !strings.Contains(body, `ValidatingAdmissionPolicy 'replicas-limit' with binding 'limit-in-team' denied request: replicas must be at most 3`) {
		t.Errorf("a Deployment over the limit in a selected namespace: %d %s", code, body)
	}
	if code, _, body := deploy("team", "small", "2"); code != 201 {
		t.Errorf("a Deployment within the limit: %d %s", code, body)
	}
	if code, _, body := deploy("default", "big", "5"); code != 201 {
		t.Errorf("a Deployment over the limit in a namespace the binding does not select: %d %s", code, body)
	}
	if code, warning, body := deploy("default", "tmp-x", "1"); code != 201 || !strings.Contains(warning, "Validation failed for ValidatingAdmissionPolicy 'no-tmp' with binding 'no-tmp-warn': temporary names are discouraged") {
		t.Errorf("a Warn binding: %d %q %s", code, warning, body)
	}
	c.do("DELETE", "/api/v1/namespaces/default/configmaps/limits", "", "")
	if code, _, body := deploy("team", "other", "1"); code != 400 || !strings.Contains(body, "no params found") {
		t.Errorf("missing parameters under parameterNotFoundAction Deny: %d %s", code, body)
	}
	code, _, b = c.do("POST", api+"validatingadmissionpolicies", "", `{"metadata":{"name":"broken"},"spec":{
		"matchConstraints":{"resourceRules":[{"apiGroups":[""],"apiVersions":["v1"],"operations":["CREATE"],"resources":["pods"]}]},
		"validations":[{"expression":"object.spec.containers.all(c,"}]}}`)
	if code != 422 || !strings.Contains(string(b), "spec.validations[0].expression") || !strings.Contains(string(b), "compilation failed") {
		t.Errorf("a policy that does not compile: %d %s", code, b)
	}
}
