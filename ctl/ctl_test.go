package ctl_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/apiserver/testserver"
	"github.com/kobune/kobune/client"
	"github.com/kobune/kobune/ctl"
	"github.com/kobune/kobune/test/cluster"
)

type run struct {
	code           int
	stdout, stderr string
}

func kobectl(t *testing.T, s *testserver.Server, stdin string, args ...string) run {
	t.Helper()
	var out, errOut bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	switch {
	case s != nil && s.PKIDir != "":
		args = append([]string{"--kubeconfig", s.Kubeconfig("admin")}, args...)
	case s != nil:
		args = append([]string{"--server", s.Addr()}, args...)
	}
	code := ctl.RunContext(ctx, args, strings.NewReader(stdin), &out, &errOut)
	return run{code, out.String(), errOut.String()}
}

func revision(t *testing.T, s *testserver.Server) int64 {
	t.Helper()
	rev, err := s.Store().Revision(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return rev
}

const podTmpl = `apiVersion: v1
kind: Pod
metadata:
  name: %s
spec:
  containers:
%s`

func deployment(name, replicas, selector string, resources string) string {
	return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: %s
spec:
  replicas: %s
  selector:
    matchLabels: {app: %s}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: app
        image: kobune.local/labapp:1.0
%s`, name, replicas, selector, resources)
}

// TestMultiDocumentManifestAppliesWhatItCan: as kubectl, every document
// that can be applied is, each one that cannot is reported with its line,
// and the command fails.
func TestMultiDocumentManifestAppliesWhatItCan(t *testing.T) {
	s := testserver.New(t)
	in := `apiVersion: v1
kind: ConfigMap
metadata: {name: first}
---
apiVersion: example.com/v1
kind: Frobnicator
metadata: {name: x}
---
apiVersion: v1
kind: [
---
apiVersion: v1
kind: ConfigMap
metadata: {name: typo}
date: {a: b}
---
apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  selector: {app: web}
  ports: [{port: 80}]
`
	r := kobectl(t, s, in, "apply", "-f", "-")
	if r.code == 0 {
		t.Fatalf("exit 0 with three bad documents: %s", r.stdout)
	}
	for _, want := range []string{"configmap/first created", "service/web created"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, r.stdout)
		}
	}
	for _, want := range []string{`line 5: unknown kind "Frobnicator"`, "line 10: invalid YAML", `configmap/typo (- line 12): strict decoding error: unknown field "date"`} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
		}
	}
	if g := kobectl(t, s, "", "get", "configmap", "typo"); g.code == 0 {
		t.Error("the document with a typo was stored")
	}
	if g := kobectl(t, s, "", "get", "configmap", "first"); g.code != 0 {
		t.Errorf("the good document before the bad ones was not stored: %s", g.stderr)
	}

	// Issue #32: delete -f of the same file panicked on the kind it could
	// not decode; as kubectl, it deletes what it can and names the rest.
	d := kobectl(t, s, in, "delete", "-f", "-")
	if d.code == 0 || strings.Contains(d.stderr, "panic") {
		t.Fatalf("delete -f with undecodable documents: exit %d\n%s", d.code, d.stderr)
	}
	for _, want := range []string{`configmap "first" deleted`, `service "web" deleted`} {
		if !strings.Contains(d.stdout, want) {
			t.Errorf("delete stdout lacks %q:\n%s", want, d.stdout)
		}
	}
	for _, want := range []string{`line 5: unknown kind "Frobnicator"`, "line 10: invalid YAML", `configmaps "typo" not found`} {
		if !strings.Contains(d.stderr, want) {
			t.Errorf("delete stderr lacks %q:\n%s", want, d.stderr)
		}
	}
	if g := kobectl(t, s, "", "get", "configmap", "first"); g.code == 0 {
		t.Error("configmap first is still there after delete -f")
	}
}

// TestBadInputsChangeNothing: every bad input gets a clear error naming the
// field or the line, a non-zero exit status, and leaves etcd's revision
// exactly where it was.
func TestBadInputsChangeNothing(t *testing.T) {
	s := testserver.New(t)
	// Setup for the stale-resourceVersion case: a ConfigMap updated once.
	if r := kobectl(t, s, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cfg}\ndata: {a: '1'}\n", "apply", "-f", "-"); r.code != 0 {
		t.Fatal(r.stderr)
	}
	var live struct {
		Metadata struct{ ResourceVersion string } `json:"metadata"`
	}
	got := kobectl(t, s, "", "get", "configmap", "cfg", "-o", "json")
	if err := json.Unmarshal([]byte(got.stdout), &live); err != nil {
		t.Fatal(err)
	}
	if r := kobectl(t, s, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cfg}\ndata: {a: '2'}\n", "apply", "-f", "-"); r.code != 0 {
		t.Fatal(r.stderr)
	}
	stale := fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cfg, resourceVersion: %q}\ndata: {a: '3'}\n", live.Metadata.ResourceVersion)
	big := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: big}\ndata:\n  blob: " + strings.Repeat("x", 2<<20) + "\n"

	tests := []struct {
		name, verb, in, want string
	}{
		{"malformed yaml", "apply", "apiVersion: v1\nkind: Pod\nmetadata:\n  name: x\n   bad: indent\n", "line 5"},
		{"a typo in a field name", "apply", fmt.Sprintf(podTmpl, "p", "  - {name: app, image: i, imagePullPolcy: Always}\n"), `unknown field "spec.containers[0].imagePullPolcy"`},
		{"a field Kubernetes does not have", "create", fmt.Sprintf(podTmpl, "p", "  - {name: app, image: i}\n  foo: 1\n"), `unknown field "spec.foo"`},
		{"missing kind", "apply", "apiVersion: v1\nmetadata: {name: x}\n", "line 1: kind is required"},
		{"unknown kind", "apply", "apiVersion: v1\nkind: Frobnicator\nmetadata: {name: x}\n", `unknown kind "Frobnicator"`},
		{"uppercase name", "apply", fmt.Sprintf(podTmpl, "Web", "  - {name: app, image: i}\n"), `metadata.name: Invalid value: "Web"`},
		{"300-character name", "apply", fmt.Sprintf(podTmpl, strings.Repeat("a", 300), "  - {name: app, image: i}\n"), "metadata.name: Invalid value"},
		{"negative replicas", "apply", deployment("web", "-1", "web", ""), "spec.replicas: Invalid value: -1: must be greater than or equal to 0"},
		{"request above limit", "apply", fmt.Sprintf(podTmpl, "p", "  - name: app\n    image: i\n    resources:\n      requests: {cpu: '2'}\n      limits: {cpu: '1'}\n"),
			"spec.containers[0].resources.requests[cpu]: Invalid value: \"2\": must be less than or equal to cpu limit of 1"},
		{"duplicate container names", "apply", fmt.Sprintf(podTmpl, "p", "  - {name: app, image: i}\n  - {name: app, image: j}\n"), `spec.containers[1].name: Duplicate value: "app"`},
		{"port 0", "apply", fmt.Sprintf(podTmpl, "p", "  - name: app\n    image: i\n    ports: [{containerPort: 0}]\n"), "spec.containers[0].ports[0].containerPort: Invalid value: 0: must be between 1 and 65535"},
		{"object over the size limit", "create", big, "over the limit of 1.5 MiB"},
		{"stale resourceVersion", "replace", stale, "Conflict"},
		{"namespace that does not exist", "apply", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, namespace: nope}\n", `namespaces "nope" not found`},
		{"selector that does not match the template", "apply", deployment("web", "1", "api", ""), "spec.template.metadata.labels: Invalid value: \"app=web\": `selector` (app=api) does not match template `labels`"},
		{"strict rejects unsupported fields", "apply --strict", fmt.Sprintf(podTmpl, "p", "  - {name: app, image: i}\n  hostUsers: false\n"), "spec.hostUsers: not supported by kobune"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := revision(t, s)
			args := append(strings.Fields(tt.verb), "-f", "-")
			r := kobectl(t, s, tt.in, args...)
			if r.code == 0 {
				t.Fatalf("exit status 0, want an error; stdout: %s", r.stdout)
			}
			if !strings.Contains(r.stderr, tt.want) {
				t.Errorf("stderr does not contain %q:\n%s", tt.want, r.stderr)
			}
			if after := revision(t, s); after != before {
				t.Errorf("store revision moved from %d to %d: bad input changed stored state", before, after)
			}
		})
	}
}

func TestApplyGetDelete(t *testing.T) {
	s := testserver.New(t)
	manifest := deployment("web", "2", "web", "        stdinOnce: true\n")
	r := kobectl(t, s, manifest, "apply", "-f", "-")
	if r.code != 0 || r.stdout != "deployment.apps/web created\n" {
		t.Fatalf("first apply: %d %q %q", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stderr, "Warning: deployment.apps/web: spec.template.spec.containers[0].stdinOnce: not supported by kobune") {
		t.Errorf("no warning for the unsupported field: %q", r.stderr)
	}
	if r := kobectl(t, s, manifest, "apply", "-f", "-"); r.stdout != "deployment.apps/web unchanged\n" {
		t.Errorf("second apply: %q %q", r.stdout, r.stderr)
	}
	if r := kobectl(t, s, strings.Replace(manifest, "replicas: 2", "replicas: 4", 1), "apply", "-f", "-"); r.stdout != "deployment.apps/web configured\n" {
		t.Errorf("changed apply: %q %q", r.stdout, r.stderr)
	}
	r = kobectl(t, s, "", "get", "deployments")
	if lines := strings.Split(strings.TrimSpace(r.stdout), "\n"); len(lines) != 2 || !strings.HasPrefix(lines[0], "NAME   READY   UP-TO-DATE   AVAILABLE   AGE") || !strings.HasPrefix(lines[1], "web    0/4") {
		t.Errorf("get deployments:\n%s", r.stdout)
	}
	if r := kobectl(t, s, "", "create", "-f", "-"); r.code == 0 {
		t.Error("create without manifests should fail")
	}
	if r := kobectl(t, s, manifest, "create", "-f", "-"); r.code == 0 || !strings.Contains(r.stderr, "AlreadyExists") {
		t.Errorf("create of an existing object: %d %q", r.code, r.stderr)
	}
	for _, name := range []string{"a", "b"} {
		kobectl(t, s, fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: %s, labels: {tier: %s}}\n", name, name), "apply", "-f", "-")
	}
	r = kobectl(t, s, "", "get", "cm", "-l", "tier in (a)", "-o", "json")
	var list struct {
		Kind  string
		Items []struct{ Metadata struct{ Name string } }
	}
	if err := json.Unmarshal([]byte(r.stdout), &list); err != nil || list.Kind != "List" || len(list.Items) != 1 || list.Items[0].Metadata.Name != "a" {
		t.Errorf("get -l -o json: %v %s", err, r.stdout)
	}
	if r := kobectl(t, s, "", "get", "cm", "-o", "name", "-A"); r.stdout != "configmap/a\nconfigmap/b\n" {
		t.Errorf("get -o name: %q", r.stdout)
	}
	// --dry-run: server (the API server checks the delete, deletes nothing)
	// and client (nothing sent), as kubectl's.
	for mode, want := range map[string]string{"server": "configmap \"b\" deleted (server dry run)\n", "client": "configmap \"b\" deleted (dry run)\n"} {
		if r := kobectl(t, s, "", "delete", "cm", "-l", "tier=b", "--dry-run="+mode); r.stdout != want {
			t.Errorf("delete --dry-run=%s: %q %q; want %q", mode, r.stdout, r.stderr, want)
		}
		if r := kobectl(t, s, "", "get", "cm", "b", "-o", "jsonpath={.metadata.deletionTimestamp}"); r.code != 0 || r.stdout != "" {
			t.Errorf("after delete --dry-run=%s: %d %q %q; want b there, unmarked", mode, r.code, r.stdout, r.stderr)
		}
	}
	if r := kobectl(t, s, "", "delete", "cm", "-l", "tier=b"); r.stdout != "configmap \"b\" deleted\n" {
		t.Errorf("delete -l: %q %q", r.stdout, r.stderr)
	}
	if r := kobectl(t, s, "", "get", "cm", "b"); r.code == 0 || !strings.Contains(r.stderr, `configmaps "b" not found`) {
		t.Errorf("get deleted: %d %q", r.code, r.stderr)
	}
	if r := kobectl(t, s, "", "describe", "deploy/web"); r.code != 0 || !strings.Contains(r.stdout, "Name:") || !strings.Contains(r.stdout, "Events:") {
		t.Errorf("describe: %q %q", r.stdout, r.stderr)
	}
}

func TestServerFromConfigFile(t *testing.T) {
	s := testserver.New(t)
	home := t.TempDir()
	if err := os.MkdirAll(filepath.Join(home, ".kobune"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, ".kobune", "config"), []byte("server: "+s.Addr()+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("KOBUNE_SERVER", "")
	t.Setenv("HOME", home)
	var out, errOut bytes.Buffer
	if code := ctl.RunContext(context.Background(), []string{"version"}, nil, &out, &errOut); code != 0 || !strings.Contains(out.String(), s.Addr()) {
		t.Errorf("version via ~/.kobune/config: %d %q %q", code, out.String(), errOut.String())
	}
	t.Setenv("KOBUNE_SERVER", "127.0.0.1:1")
	out.Reset()
	errOut.Reset()
	if code := ctl.RunContext(context.Background(), []string{"get", "pods"}, nil, &out, &errOut); code == 0 || !strings.Contains(errOut.String(), "127.0.0.1:1") {
		t.Errorf("KOBUNE_SERVER should win over the config file: %d %q", code, errOut.String())
	}
}

func TestGetWatchPrintsChanges(t *testing.T) {
	s := testserver.New(t)
	kobectl(t, s, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: first}\n", "apply", "-f", "-")
	ctx, cancel := context.WithCancel(context.Background())
	var out, errOut syncBuffer
	done := make(chan int)
	go func() {
		done <- ctl.RunContext(ctx, []string{"--server", s.Addr(), "get", "configmaps", "-w"}, nil, &out, &errOut)
	}()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(out.String(), "first") && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	kobectl(t, s, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: second}\n", "apply", "-f", "-")
	for !strings.Contains(out.String(), "second") && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	if code := <-done; code != 0 {
		t.Errorf("get -w exit status %d: %s", code, errOut.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "NAME") || !strings.HasPrefix(lines[1], "first") || !strings.HasPrefix(lines[2], "second") {
		t.Errorf("get -w output:\n%s", out.String())
	}
}

// syncBuffer is a bytes.Buffer safe for one writer and one reader goroutine.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestDescribePodShowsSchedulingDecision: the decision the bind recorded is
// shown one node per line, not buried in the annotations.
func TestDescribePodShowsSchedulingDecision(t *testing.T) {
	s := testserver.New(t)
	if r := kobectl(t, s, fmt.Sprintf(podTmpl, "chosen", "  - {name: c, image: i}\n"), "apply", "-f", "-"); r.code != 0 {
		t.Fatalf("apply: %s", r.stderr)
	}
	record := "big: score 300 (LeastAllocated 75) <- chosen; small: rejected by NodeResourcesFit (Insufficient cpu)"
	if err := s.Client.Bind(context.Background(), "default", "chosen", "", "big", map[string]string{"scheduler.kobune.io/decision": record}); err != nil {
		t.Fatal(err)
	}
	r := kobectl(t, s, "", "describe", "pod", "chosen")
	want := "Scheduling Decision:\n  big: score 300 (LeastAllocated 75) <- chosen\n  small: rejected by NodeResourcesFit (Insufficient cpu)\n"
	if r.code != 0 || !strings.Contains(r.stdout, want) || !regexp.MustCompile(`(?m)^Node:\s+big/$`).MatchString(r.stdout) {
		t.Errorf("describe:\n%s%s", r.stdout, r.stderr)
	}
	if strings.Contains(r.stdout, "scheduler.kobune.io/decision=") {
		t.Errorf("the record is also listed among the annotations:\n%s", r.stdout)
	}
}

// Issue #10 defect 3: applying a partial Node manifest erased spec.podCIDR
// (set by node IPAM, not by the user), and node IPAM then gave the node
// another block. Apply is a three-way merge: fields the user never applied
// stay; fields the user applied and then removed go. Removing the whole
// spec the user once applied would remove podCIDR too, which a node's
// update validation refuses, as in Kubernetes.
func TestApplyKeepsFieldsOthersSet(t *testing.T) {
	s := testserver.New(t)
	ctx := context.Background()
	nodes := client.For[*core.Node](s.Client)
	n := &core.Node{ObjectMeta: meta.ObjectMeta{Name: "node-2"}}
	n.Spec.PodCIDR, n.Spec.PodCIDRs = "10.244.2.0/24", []string{"10.244.2.0/24"}
	if _, err := nodes.Create(ctx, n); err != nil {
		t.Fatal(err)
	}
	podCIDR := func() string {
		got, err := nodes.Get(ctx, "", "node-2")
		if err != nil {
			t.Fatal(err)
		}
		return got.Spec.PodCIDR
	}
	taint := "apiVersion: v1\nkind: Node\nmetadata: {name: node-2}\nspec:\n  taints: [{key: dedicated, value: gpu, effect: NoSchedule}]\n"
	if r := kobectl(t, s, taint, "apply", "-f", "-"); r.code != 0 || r.stdout != "node/node-2 configured\n" {
		t.Fatalf("apply a taint: %d %q %q", r.code, r.stdout, r.stderr)
	}
	if got := podCIDR(); got != "10.244.2.0/24" {
		t.Errorf("after applying a taint, podCIDR is %q", got)
	}
	// The taint goes, podCIDR stays.
	if r := kobectl(t, s, "apiVersion: v1\nkind: Node\nmetadata: {name: node-2}\nspec: {}\n", "apply", "-f", "-"); r.code != 0 || r.stdout != "node/node-2 configured\n" {
		t.Fatalf("apply without the taint: %d %q %q", r.code, r.stdout, r.stderr)
	}
	got, _ := nodes.Get(ctx, "", "node-2")
	if len(got.Spec.Taints) != 0 || got.Spec.PodCIDR != "10.244.2.0/24" || len(got.Spec.PodCIDRs) != 1 {
		t.Errorf("after applying spec: {}: taints %v, podCIDR %q %v", got.Spec.Taints, got.Spec.PodCIDR, got.Spec.PodCIDRs)
	}
	// Removing the spec the user applied would remove podCIDR: refused.
	kobectl(t, s, taint, "apply", "-f", "-")
	before := revision(t, s)
	r := kobectl(t, s, "apiVersion: v1\nkind: Node\nmetadata: {name: node-2}\n", "apply", "-f", "-")
	if r.code == 0 || !strings.Contains(r.stderr, "spec.podCIDR: Forbidden") {
		t.Errorf("apply without spec: %d %q %q, want spec.podCIDR: Forbidden", r.code, r.stdout, r.stderr)
	}
	if got := podCIDR(); got != "10.244.2.0/24" || revision(t, s) != before {
		t.Errorf("a refused apply changed the node: podCIDR %q, revision %d → %d", got, before, revision(t, s))
	}
	// And a direct update may not move it either.
	cur, _ := nodes.Get(ctx, "", "node-2")
	cur.Spec.PodCIDR, cur.Spec.PodCIDRs = "10.244.9.0/24", []string{"10.244.9.0/24"}
	if _, err := nodes.Update(ctx, cur); !client.IsInvalid(err) || !strings.Contains(err.Error(), "spec.podCIDR") {
		t.Errorf("update moving podCIDR: %v", err)
	}
}

// TestLabel: labels are set, refused over an existing value without
// --overwrite (nothing changes), changed with it, removed with KEY-; a bad
// key names the field.
func TestLabel(t *testing.T) {
	s := testserver.New(t)
	if r := kobectl(t, s, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cfg, labels: {tier: web}}\n", "apply", "-f", "-"); r.code != 0 {
		t.Fatal(r.stderr)
	}
	if r := kobectl(t, s, "", "label", "configmap", "cfg", "team=a"); r.code != 0 || r.stdout != "configmap/cfg labeled\n" {
		t.Errorf("label: %d %q %q", r.code, r.stdout, r.stderr)
	}
	if r := kobectl(t, s, "", "label", "configmap/cfg", "tier=db"); r.code == 0 || !strings.Contains(r.stderr, "'tier' already has a value (web), and --overwrite is false") {
		t.Errorf("without --overwrite: %d %q", r.code, r.stderr)
	}
	if r := kobectl(t, s, "", "label", "configmap", "cfg", "tier=db", "team-", "--overwrite"); r.code != 0 {
		t.Errorf("overwrite and remove: %q", r.stderr)
	}
	r := kobectl(t, s, "", "get", "configmap", "cfg", "-o", "json")
	if !strings.Contains(r.stdout, `"tier": "db"`) || strings.Contains(r.stdout, `"team"`) {
		t.Errorf("labels after: %s", r.stdout)
	}
	if r := kobectl(t, s, "", "label", "configmap", "cfg", "bad key=x"); r.code == 0 || !strings.Contains(r.stderr, "metadata.labels") {
		t.Errorf("a bad key: %d %q", r.code, r.stderr)
	}
}

// TestConfigCommands: kobectl config on a kubeconfig from pki init — view
// redacts the keys (and --raw shows them), set-context makes a context
// with a namespace that kobectl then uses, use-context switches,
// get-contexts marks the current one; an unknown context is refused and
// changes nothing.
func TestConfigCommands(t *testing.T) {
	dir := t.TempDir()
	if r := kobectl(t, nil, "", "pki", "init", "--dir", dir, "--apiserver-url", "https://127.0.0.1:6443"); r.code != 0 {
		t.Fatal(r.stderr)
	}
	kc := filepath.Join(dir, "admin.kubeconfig")
	r := kobectl(t, nil, "", "--kubeconfig", kc, "config", "view")
	if r.code != 0 || !strings.Contains(r.stdout, "client-key-data: REDACTED") || !strings.Contains(r.stdout, "certificate-authority-data: DATA+OMITTED") {
		t.Errorf("view: %s%s", r.stdout, r.stderr)
	}
	if r := kobectl(t, nil, "", "--kubeconfig", kc, "config", "view", "--raw"); strings.Contains(r.stdout, "REDACTED") {
		t.Error("view --raw redacted")
	}
	if r := kobectl(t, nil, "", "--kubeconfig", kc, "config", "set-context", "team-a", "--cluster", "kobune", "--user", "kubernetes-admin", "-n", "team-a"); r.code != 0 || r.stdout != "Context \"team-a\" created.\n" {
		t.Errorf("set-context: %q %q", r.stdout, r.stderr)
	}
	if r := kobectl(t, nil, "", "--kubeconfig", kc, "config", "use-context", "nope"); r.code == 0 || !strings.Contains(r.stderr, `no context exists with the name: "nope"`) {
		t.Errorf("use-context nope: %d %q", r.code, r.stderr)
	}
	if r := kobectl(t, nil, "", "--kubeconfig", kc, "config", "use-context", "team-a"); r.code != 0 {
		t.Errorf("use-context: %q", r.stderr)
	}
	r = kobectl(t, nil, "", "--kubeconfig", kc, "config", "get-contexts")
	if !strings.Contains(r.stdout, "*         team-a") || !strings.Contains(r.stdout, "team-a") {
		t.Errorf("get-contexts:\n%s", r.stdout)
	}
	if r := kobectl(t, nil, "", "--kubeconfig", kc, "config", "current-context"); r.stdout != "team-a\n" {
		t.Errorf("current-context: %q", r.stdout)
	}
	cfg, err := client.LoadKubeconfig(kc, "")
	if err != nil || cfg.Namespace != "team-a" || len(cfg.Cert) == 0 {
		t.Errorf("the kubeconfig after the changes: %+v %v", cfg.Namespace, err)
	}
	if fi, _ := os.Stat(kc); fi.Mode().Perm() != 0o600 {
		t.Errorf("the kubeconfig's mode after writing: %v", fi.Mode())
	}
}

// TestRBACCommands: kobectl makes ServiceAccounts and bindings, and prints
// them with kubectl's columns.
func TestRBACCommands(t *testing.T) {
	s := cluster.Start(t, context.Background(), cluster.Options{}).Server
	for _, args := range [][]string{{"create", "namespace", "team"}, {"create", "serviceaccount", "bot", "-n", "team"},
		{"create", "rolebinding", "bot-view", "--clusterrole", "view", "--serviceaccount", "team:bot", "--user", "alice", "-n", "team"}} {
		if r := kobectl(t, s, "", args...); r.code != 0 {
			t.Fatalf("kobectl %v: %s", args, r.stderr)
		}
	}
	if r := kobectl(t, s, "", "get", "rolebindings", "-n", "team", "-o", "wide"); !regexp.MustCompile(`(?m)^bot-view\s+ClusterRole/view\s+\S+\s+alice\s+team:bot`).MatchString(r.stdout) {
		t.Errorf("get rolebindings -o wide:\n%s%s", r.stdout, r.stderr)
	}
	if r := kobectl(t, s, "", "get", "sa", "-n", "team"); !regexp.MustCompile(`(?m)^bot\s+\d+s\n`).MatchString(r.stdout) {
		t.Errorf("get sa:\n%s%s", r.stdout, r.stderr)
	}
	if r := kobectl(t, s, "", "get", "clusterroles", "view"); !regexp.MustCompile(`(?m)^view\s+\d{4}-\d\d-\d\dT`).MatchString(r.stdout) {
		t.Errorf("get clusterroles view:\n%s%s", r.stdout, r.stderr)
	}
	r := kobectl(t, s, "", "create", "rolebinding", "bad", "-n", "team", "--clusterrole", "view", "--serviceaccount", "bot")
	if r.code == 0 || !strings.Contains(r.stderr, "NAMESPACE:NAME") {
		t.Errorf("--serviceaccount without a namespace: %d %q", r.code, r.stderr)
	}
	if r := kobectl(t, s, "", "create", "token", "bot", "-n", "team"); r.code != 0 || strings.Count(r.stdout, ".") != 2 {
		t.Errorf("create token: %d %q %q", r.code, r.stdout, r.stderr)
	}
}

// TestEventsWatchPrintsNewEvents: events -w prints the events there are,
// then each new one, until interrupted; --types filters both.
func TestEventsWatchPrintsNewEvents(t *testing.T) {
	s := testserver.New(t)
	events := client.For[*core.Event](s.Client)
	mk := func(name, typ, reason string) {
		t.Helper()
		now := meta.Now()
		if _, err := events.Create(context.Background(), &core.Event{ObjectMeta: meta.ObjectMeta{Name: name, Namespace: "default"},
			InvolvedObject: core.ObjectReference{Kind: "Pod", Name: "web-0", Namespace: "default"}, Reason: reason, Message: reason + " happened",
			Type: typ, LastTimestamp: now, FirstTimestamp: now, Count: 1}); err != nil {
			t.Fatal(err)
		}
	}
	mk("e1", "Warning", "BackOff")
	ctx, cancel := context.WithCancel(context.Background())
	var out, errOut syncBuffer
	done := make(chan int)
	go func() {
		done <- ctl.RunContext(ctx, []string{"--server", s.Addr(), "events", "-w", "--types", "Warning"}, nil, &out, &errOut)
	}()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(out.String(), "BackOff") && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	mk("e2", "Normal", "Pulled")
	mk("e3", "Warning", "Unhealthy")
	for !strings.Contains(out.String(), "Unhealthy") && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	if code := <-done; code != 0 {
		t.Errorf("events -w exit status %d: %s", code, errOut.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "LAST SEEN") || !strings.Contains(lines[1], "BackOff") || !strings.Contains(lines[2], "pod/web-0") || !strings.Contains(lines[2], "Unhealthy happened") {
		t.Errorf("events -w output (the Normal event filtered out):\n%s", out.String())
	}
}
