package ctl_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kobune/kobune/apiserver/testserver"
)

// TestGetOutputForms: -o jsonpath, custom-columns (inline and from a
// file), go-template, --sort-by, --show-labels, -L, --no-headers and
// get all print what kubectl prints for the same objects; a bad template
// is an error before anything is fetched.
func TestGetOutputForms(t *testing.T) {
	s := testserver.New(t)
	manifest := `apiVersion: v1
kind: ConfigMap
metadata: {name: zeta, labels: {app: web, tier: front}}
data: {a: "1", b: "2", c: "3"}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: alpha, labels: {app: db}}
data: {a: "1"}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: mid}
data: {a: "1", b: "2"}
`
	if r := kobectl(t, s, manifest, "apply", "-f", "-"); r.code != 0 {
		t.Fatalf("apply: %+v", r)
	}
	file := filepath.Join(t.TempDir(), "cols")
	if err := os.WriteFile(file, []byte("NAME          KEYS\n.metadata.name .data.a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"get", "cm", "-o", "jsonpath={.items[*].metadata.name}"}, "alpha mid zeta"},
		{[]string{"get", "cm", "zeta", "-o", "jsonpath={.data.b}"}, "2"},
		{[]string{"get", "cm", "-o", `jsonpath={range .items[?(@.metadata.labels.app)]}{.metadata.name}={.metadata.labels.app}{"\n"}{end}`}, "alpha=db\nzeta=web\n"},
		{[]string{"get", "cm", "-o", "custom-columns=NAME:.metadata.name,APP:.metadata.labels.app"}, "NAME    APP\nalpha   db\nmid     <none>\nzeta    web\n"},
		{[]string{"get", "cm", "-o", "custom-columns-file=" + file, "--no-headers"}, "alpha   1\nmid     1\nzeta    1\n"},
		{[]string{"get", "cm", "-o", `go-template={{range .items}}{{.metadata.name}};{{end}}`}, "alpha;mid;zeta;"},
		{[]string{"get", "cm", "-o", "name", "--sort-by", "{.metadata.labels.app}"}, "configmap/mid\nconfigmap/alpha\nconfigmap/zeta\n"},
		{[]string{"get", "cm", "-o", "custom-columns=N:.metadata.name", "--no-headers", "--sort-by=.metadata.name"}, "alpha\nmid\nzeta\n"},
		{[]string{"get", "cm", "zeta", "--show-labels", "-L", "tier"}, "NAME   DATA   AGE   TIER    LABELS\nzeta   3      "},
	}
	for _, tc := range tests {
		r := kobectl(t, s, "", tc.args...)
		if r.code != 0 || !strings.HasPrefix(r.stdout, tc.want) {
			t.Errorf("kobectl %s: exit %d\n%s%s\nwant %q", strings.Join(tc.args, " "), r.code, r.stdout, r.stderr, tc.want)
		}
	}
	if r := kobectl(t, s, "", "get", "cm", "zeta", "--show-labels"); !strings.Contains(r.stdout, "app=web,tier=front") {
		t.Errorf("--show-labels: %s", r.stdout)
	}
	for _, bad := range [][]string{{"-o", "jsonpath={.items[*]"}, {"-o", "yml"}, {"-o", "custom-columns=NAME"}, {"-o", "go-template={{.x"}} {
		r := kobectl(t, s, "", append([]string{"get", "cm"}, bad...)...)
		if r.code == 0 || r.stdout != "" {
			t.Errorf("kobectl get cm %s: exit %d, stdout %q: want an error and nothing printed", strings.Join(bad, " "), r.code, r.stdout)
		}
	}
	// get all: the workload kinds and services, each table named by kind
	// (ReplicationControllers among them, as in kubectl).
	rc := "apiVersion: v1\nkind: ReplicationController\nmetadata: {name: legacy, namespace: default}\n" +
		"spec:\n  replicas: 2\n  template:\n    metadata: {labels: {app: legacy}}\n    spec: {containers: [{name: app, image: kobune.local/labapp:1.0}]}\n"
	if r := kobectl(t, s, rc, "apply", "-f", "-"); r.code != 0 {
		t.Fatalf("apply a ReplicationController: %+v", r)
	}
	r := kobectl(t, s, "", "get", "all", "-A")
	if r.code != 0 || !strings.Contains(r.stdout, "service/kubernetes") || !strings.Contains(r.stdout, "replicationcontroller/legacy") {
		t.Errorf("get all -A: %+v", r)
	}
	r = kobectl(t, s, "", "describe", "rc", "legacy")
	if r.code != 0 || !strings.Contains(r.stdout, "Selector:") || !strings.Contains(r.stdout, "app=legacy") || !strings.Contains(r.stdout, "/ 2 desired") || !strings.Contains(r.stdout, "kobune.local/labapp:1.0") {
		t.Errorf("describe rc: %+v", r)
	}
}
