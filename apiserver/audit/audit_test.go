package audit

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func policy(t *testing.T, yaml string) (*Policy, error) {
	t.Helper()
	p := filepath.Join(t.TempDir(), "policy.yaml")
	if err := os.WriteFile(p, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	return LoadPolicy(p)
}

// TestPolicyLevels: the first matching rule decides, by verb, group and
// resource (subresources too), namespace and user; Secrets never go above
// Metadata whatever the policy says.
func TestPolicyLevels(t *testing.T) {
	p, err := policy(t, `apiVersion: audit.k8s.io/v1
kind: Policy
rules:
- level: None
  verbs: [get, list, watch]
  resources: [{group: "", resources: [events]}]
- level: RequestResponse
  resources: [{group: "", resources: [secrets, pods/exec]}]
- level: Request
  resources: [{group: apps, resources: ["*"]}]
  namespaces: [prod]
- level: None
  users: [system:kube-scheduler]
- level: Metadata
`)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		r    Request
		want string
	}{
		{Request{Verb: "list", Resource: "events"}, LevelNone},
		{Request{Verb: "create", Resource: "events"}, LevelMetadata},
		{Request{Verb: "create", Resource: "secrets"}, LevelMetadata}, // capped
		{Request{Verb: "create", Resource: "pods", Subresource: "exec"}, LevelRequestResponse},
		{Request{Verb: "get", Resource: "pods"}, LevelMetadata},
		{Request{Verb: "update", Group: "apps", Resource: "deployments", Namespace: "prod"}, LevelRequest},
		{Request{Verb: "update", Group: "apps", Resource: "deployments", Namespace: "dev"}, LevelMetadata},
		{Request{Verb: "get", Resource: "pods", User: "system:kube-scheduler"}, LevelNone},
	} {
		if got := p.LevelFor(&c.r); got != c.want {
			t.Errorf("%+v: %s, want %s", c.r, got, c.want)
		}
	}
}

func TestBadPolicyNamesTheField(t *testing.T) {
	for yaml, want := range map[string]string{
		"apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Everything\n": `rules[0].level: Unsupported value "Everything"`,
		"apiVersion: audit.k8s.io/v1\nkind: Policy\nrules: []\n":                   "rules: at least one rule",
		"apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- levle: None\n":       `unknown field "levle"`,
		"apiVersion: v1\nkind: ConfigMap\n":                                        "want apiVersion audit.k8s.io/v1, kind Policy",
	} {
		if _, err := policy(t, yaml); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", yaml, err, want)
		}
	}
}

// TestLogRotates: past MaxBytes the log moves to .1 and a new one starts;
// every line is whole JSON.
func TestLogRotates(t *testing.T) {
	p, _ := policy(t, "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n")
	path := filepath.Join(t.TempDir(), "audit.log")
	l, err := Open(path, p, 2000)
	if err != nil {
		t.Fatal(err)
	}
	for range 20 {
		l.Record(&Request{Verb: "get", Resource: "pods", Namespace: "default", Name: "x", Version: "v1", Code: 200})
	}
	l.Close()
	for _, f := range []string{path, path + ".1"} {
		b, err := os.ReadFile(f)
		if err != nil || len(b) == 0 || len(b) > 2000 {
			t.Fatalf("%s: %d bytes, %v", f, len(b), err)
		}
		for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			if !strings.HasPrefix(line, `{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata"`) || !strings.HasSuffix(line, "}") {
				t.Errorf("%s: line %q", f, line)
			}
		}
	}
}
