package ctl_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/kobune/kobune/apiserver/testserver"
)

// TestPatchCordonAndServerSideApply: kobectl patch with each patch type,
// cordon/uncordon through spec.unschedulable, and apply --server-side
// with its conflict and --force-conflicts.
func TestPatchCordonAndServerSideApply(t *testing.T) {
	s := testserver.New(t)
	must := func(stdin string, args ...string) string {
		t.Helper()
		r := kobectl(t, s, stdin, args...)
		if r.code != 0 {
			t.Fatalf("kobectl %v: %d %s", args, r.code, r.stderr)
		}
		return r.stdout
	}
	must("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {a: '1'}\n", "apply", "-f", "-")
	if out := must("", "patch", "configmap", "c", "-p", `{"data":{"b":"2"}}`); out != "configmap/c patched\n" {
		t.Errorf("patch: %q", out)
	}
	must("", "patch", "configmap/c", "--type", "json", "-p", `[{"op":"remove","path":"/data/a"}]`)
	must("", "patch", "configmap/c", "--type", "merge", "-p", `data: {c: "3"}`)
	if out := must("", "get", "configmap", "c", "-o", "yaml"); !strings.Contains(out, "b: \"2\"") || !strings.Contains(out, "c: \"3\"") || strings.Contains(out, "a: \"1\"") {
		t.Errorf("after three patches:\n%s", out)
	}
	if r := kobectl(t, s, "", "patch", "configmap", "c", "--type", "json", "-p", `[{"op":"test","path":"/data/b","value":"9"}]`); r.code == 0 || !strings.Contains(r.stderr, "test failed") {
		t.Errorf("failing json patch: %d %q", r.code, r.stderr)
	}

	must("apiVersion: v1\nkind: Node\nmetadata: {name: n1}\n", "apply", "-f", "-")
	if out := must("", "cordon", "n1"); out != "node/n1 cordoned\n" {
		t.Errorf("cordon: %q", out)
	}
	if out := must("", "get", "nodes"); !strings.Contains(out, "SchedulingDisabled") {
		t.Errorf("a cordoned node:\n%s", out)
	}
	must("", "uncordon", "n1")
	if out := must("", "get", "node", "n1", "-o", "yaml"); strings.Contains(out, "unschedulable") {
		t.Errorf("uncordoned:\n%s", out)
	}

	cfg := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: ssa}\ndata: {size: '3'}\n"
	if out := must(cfg, "apply", "--server-side", "-f", "-"); out != "configmap/ssa serverside-applied\n" {
		t.Errorf("server-side apply: %q", out)
	}
	must("", "patch", "configmap", "ssa", "-p", `{"data":{"size":"5"}}`)
	if r := kobectl(t, s, cfg, "apply", "--server-side", "-f", "-"); r.code == 0 || !strings.Contains(r.stderr, `conflict with "kobectl-patch"`) || !strings.Contains(r.stderr, "--force-conflicts") {
		t.Errorf("server-side apply over another manager's field: %d %q", r.code, r.stderr)
	}
	must(cfg, "apply", "--server-side", "--force-conflicts", "-f", "-")
	if out := must("", "get", "configmap", "ssa", "-o", "yaml"); !strings.Contains(out, "size: \"3\"") || strings.Contains(out, "managedFields") {
		t.Errorf("after a forced server-side apply (managed fields hidden):\n%s", out)
	}
	if out := must("", "get", "configmap", "ssa", "-o", "yaml", "--show-managed-fields"); !strings.Contains(out, "manager: kobectl") {
		t.Errorf("--show-managed-fields:\n%s", out)
	}
}

// TestExplainShowsWhatKobuneServes: kobectl explain reads the schemas the
// API server serves, so a field Kobune lacks is absent and a typo named.
func TestExplainShowsWhatKobuneServes(t *testing.T) {
	r := kobectl(t, nil, "", "explain", "deployment.spec.template.spec.containers")
	if r.code != 0 || !strings.Contains(r.stdout, "FIELD: containers <[]Container>") || !strings.Contains(r.stdout, "  image\t<string>") {
		t.Fatalf("explain containers: %d %s %s", r.code, r.stdout, r.stderr)
	}
	if r := kobectl(t, nil, "", "explain", "pods.spec"); strings.Contains(r.stdout, "  os\t") {
		t.Errorf("explain pods.spec lists os, which Kobune does not serve:\n%s", r.stdout)
	}
	// Kubernetes' own descriptions, for the field and for each field listed.
	if r := kobectl(t, nil, "", "explain", "pods.spec.nodeName"); !strings.Contains(r.stdout, "DESCRIPTION:\n    NodeName indicates in which node this pod is scheduled") {
		t.Errorf("explain pods.spec.nodeName has no description:\n%s", r.stdout)
	}
	if r := kobectl(t, nil, "", "explain", "deployment.spec"); !regexp.MustCompile(`(?m)^  replicas\t<integer>\n    Number of desired pods`).MatchString(r.stdout) {
		t.Errorf("explain deployment.spec lists fields without descriptions:\n%s", r.stdout)
	}
	if r := kobectl(t, nil, "", "explain", "deployment.spec.replicaz"); r.code == 0 || !strings.Contains(r.stderr, `field "replicaz" does not exist in DeploymentSpec`) {
		t.Errorf("explain a typo: %d %q", r.code, r.stderr)
	}
}
