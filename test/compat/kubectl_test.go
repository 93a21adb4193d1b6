package compat

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kobune/kobune/ctl"
	"github.com/kobune/kobune/test/cluster"
)

// kubectlBin is the real kubectl, built once by TestMain.
var kubectlBin string

// kubernetesVersion is what the kubectl binary reports (the k8s.io
// modules' release in go.mod).
const kubernetesVersion = "v1.37.2"

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "kobune-compat-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	kubectlBin = filepath.Join(dir, "kubectl")
	ld := "-X k8s.io/client-go/pkg/version.gitVersion=" + kubernetesVersion + " -X k8s.io/component-base/version.gitVersion=" + kubernetesVersion +
		" -X k8s.io/client-go/pkg/version.gitMajor=1 -X k8s.io/client-go/pkg/version.gitMinor=37"
	fmt.Fprintln(os.Stderr, "compat: building kubectl from k8s.io/kubectl (a minute or two the first time)")
	build := exec.Command("go", "build", "-ldflags", ld, "-o", kubectlBin, "./kubectl")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "compat: building kubectl failed:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// session runs kubectl against one cluster, with a HOME of its own (so
// that discovery caches never cross tests).
type session struct {
	t          *testing.T
	c          *cluster.Cluster
	home       string
	kubeconfig string
	env        []string
}

func newSession(t *testing.T, nodes int) *session {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	c := cluster.Start(t, ctx, cluster.Options{Nodes: nodes})
	return &session{t: t, c: c, home: t.TempDir(), kubeconfig: c.Kubeconfig("admin")}
}

type result struct {
	code           int
	stdout, stderr string
}

func (s *session) run(stdin string, args ...string) result {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, kubectlBin, append([]string{"--kubeconfig", s.kubeconfig}, args...)...)
	cmd.Env = append([]string{"HOME=" + s.home, "PATH=" + os.Getenv("PATH")}, s.env...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		s.t.Fatalf("kubectl %s: %v", strings.Join(args, " "), err)
	}
	return result{code, out.String(), errOut.String()}
}

// ok runs kubectl and fails the test unless it exits 0 and prints every
// wanted string.
func (s *session) ok(stdin string, args ...string) string {
	s.t.Helper()
	return s.okWith(stdin, args)
}

func (s *session) okWith(stdin string, args []string, want ...string) string {
	s.t.Helper()
	r := s.run(stdin, args...)
	if r.code != 0 {
		s.t.Fatalf("kubectl %s: exit %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), r.code, r.stdout, r.stderr)
	}
	for _, w := range want {
		if !strings.Contains(r.stdout, w) {
			s.t.Fatalf("kubectl %s: stdout lacks %q:\n%s", strings.Join(args, " "), w, r.stdout)
		}
	}
	return r.stdout
}

func (s *session) expect(args []string, want ...string) string {
	s.t.Helper()
	return s.okWith("", args, want...)
}

const manifest = `apiVersion: v1
kind: Namespace
metadata: {name: shop}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: web-config, namespace: shop}
data: {greeting: hello}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop, labels: {app: web}}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: app
        image: kobune.local/labapp:1.0
        ports: [{containerPort: 8080, name: http}]
---
apiVersion: v1
kind: Service
metadata: {name: web, namespace: shop}
spec:
  selector: {app: web}
  ports: [{port: 80, targetPort: http}]
`

// TestKubectlSession is a scripted session of the real kubectl against an
// in-process Kobune cluster (API server, scheduler, controllers, simulated
// nodes), each output checked as a user would read it.
func TestKubectlSession(t *testing.T) {
	s := newSession(t, 2)
	dir := t.TempDir()
	m := filepath.Join(dir, "shop.yaml")
	if err := os.WriteFile(m, []byte(manifest), 0o644); err != nil {
		t.Fatal(err)
	}

	s.expect([]string{"version"}, "Client Version: "+kubernetesVersion, "Server Version: v1.37.0+kobune")
	s.expect([]string{"api-resources"}, "deployments", "apps/v1", "Deployment", "configmaps", "cm")
	s.expect([]string{"apply", "-f", m}, "namespace/shop created", "configmap/web-config created", "deployment.apps/web created", "service/web created")
	s.expect([]string{"apply", "-f", m}, "namespace/shop unchanged", "configmap/web-config unchanged", "deployment.apps/web unchanged", "service/web unchanged")
	s.expect([]string{"rollout", "status", "deployment/web", "-n", "shop", "--timeout=60s"}, `deployment "web" successfully rolled out`)

	// get in each output form.
	if out := s.expect([]string{"get", "deploy", "-n", "shop"}, "NAME", "READY", "UP-TO-DATE", "AVAILABLE"); !regexp.MustCompile(`(?m)^web\s+2/2\s+2\s+2\s+`).MatchString(out) {
		t.Errorf("get deploy:\n%s", out)
	}
	s.expect([]string{"get", "deploy", "-n", "shop", "-o", "wide"}, "CONTAINERS", "kobune.local/labapp:1.0", "app=web")
	s.expect([]string{"get", "deploy", "web", "-n", "shop", "-o", "yaml"}, "kind: Deployment", "replicas: 2")
	var d struct {
		Spec struct{ Replicas int } `json:"spec"`
	}
	if err := json.Unmarshal([]byte(s.ok("", "get", "deploy", "web", "-n", "shop", "-o", "json")), &d); err != nil || d.Spec.Replicas != 2 {
		t.Errorf("get -o json: %v %+v", err, d)
	}
	if out := s.ok("", "get", "deploy", "web", "-n", "shop", "-o", "jsonpath={.spec.replicas}"); out != "2" {
		t.Errorf("jsonpath: %q", out)
	}
	if out := s.ok("", "get", "pods", "-n", "shop", "--no-headers"); strings.Count(out, "Running") != 2 {
		t.Errorf("get pods: want 2 Running:\n%s", out)
	}
	s.expect([]string{"get", "all", "-n", "shop"}, "pod/web-", "service/web", "deployment.apps/web", "replicaset.apps/web-")
	s.expect([]string{"describe", "deployment", "web", "-n", "shop"}, "Name:", "web", "Replicas:", "2 desired")

	// label, annotate and the three patch types.
	s.expect([]string{"label", "deploy", "web", "-n", "shop", "team=blue"}, "deployment.apps/web labeled")
	s.expect([]string{"get", "deploy", "-n", "shop", "-l", "team=blue", "-o", "name"}, "deployment.apps/web")
	s.expect([]string{"annotate", "cm", "web-config", "-n", "shop", "owner=dev"}, "configmap/web-config annotated")
	s.expect([]string{"patch", "cm", "web-config", "-n", "shop", "--type=merge", "-p", `{"data":{"extra":"1"}}`}, "configmap/web-config patched")
	s.expect([]string{"patch", "cm", "web-config", "-n", "shop", "--type=json", "-p", `[{"op":"add","path":"/data/json","value":"2"}]`}, "configmap/web-config patched")
	s.expect([]string{"patch", "deploy", "web", "-n", "shop", "-p", `{"spec":{"template":{"spec":{"containers":[{"name":"app","image":"kobune.local/labapp:2.0"}]}}}}`}, "deployment.apps/web patched")
	if out := s.ok("", "get", "cm", "web-config", "-n", "shop", "-o", "jsonpath={.data.greeting},{.data.extra},{.data.json}"); out != "hello,1,2" {
		t.Errorf("configmap after patches: %q", out)
	}
	s.expect([]string{"rollout", "status", "deployment/web", "-n", "shop", "--timeout=60s"}, "successfully rolled out")
	s.expect([]string{"rollout", "history", "deployment/web", "-n", "shop"}, "REVISION", "1 ", "2 ")
	s.expect([]string{"rollout", "undo", "deployment/web", "-n", "shop"}, "deployment.apps/web rolled back")
	s.expect([]string{"rollout", "status", "deployment/web", "-n", "shop", "--timeout=60s"}, "successfully rolled out")
	if out := s.ok("", "get", "deploy", "web", "-n", "shop", "-o", "jsonpath={.spec.template.spec.containers[0].image}"); out != "kobune.local/labapp:1.0" {
		t.Errorf("image after undo: %q", out)
	}
	// A StatefulSet's and a DaemonSet's history are their ControllerRevisions.
	sets := `apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db, namespace: shop}
spec:
  replicas: 2
  serviceName: db
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec: {containers: [{name: db, image: kobune.local/labapp:1.0}]}
---
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent, namespace: shop}
spec:
  selector: {matchLabels: {app: agent}}
  template:
    metadata: {labels: {app: agent}}
    spec: {containers: [{name: a, image: kobune.local/labapp:1.0}]}
`
	s.okWith(sets, []string{"apply", "-f", "-"}, "statefulset.apps/db created", "daemonset.apps/agent created")
	for _, target := range []string{"statefulset/db", "daemonset/agent"} {
		kind, name, _ := strings.Cut(target, "/")
		s.expect([]string{"rollout", "status", target, "-n", "shop", "--timeout=60s"}, "")
		s.expect([]string{"set", "image", target, "-n", "shop", "*=kobune.local/labapp:2.0"}, kind+".apps/"+name+" image updated")
		s.expect([]string{"rollout", "status", target, "-n", "shop", "--timeout=60s"}, "")
		if out := s.expect([]string{"rollout", "history", target, "-n", "shop"}, kind+".apps/"+name, "REVISION"); !regexp.MustCompile(`(?m)^1\s+<none>\n2\s+<none>`).MatchString(out) {
			t.Errorf("rollout history %s:\n%s", target, out)
		}
		s.expect([]string{"rollout", "history", target, "-n", "shop", "--revision=1"}, "with revision #1", "kobune.local/labapp:1.0")
		s.expect([]string{"rollout", "undo", target, "-n", "shop"}, kind+".apps/"+name+" rolled back")
		s.expect([]string{"rollout", "status", target, "-n", "shop", "--timeout=60s"}, "")
		if out := s.ok("", "get", target, "-n", "shop", "-o", "jsonpath={.spec.template.spec.containers[0].image}"); out != "kobune.local/labapp:1.0" {
			t.Errorf("%s image after undo: %q", target, out)
		}
	}
	s.expect([]string{"get", "controllerrevisions", "-n", "shop"}, "CONTROLLER", "statefulset.apps/db", "daemonset.apps/agent")
	// NetworkPolicy and Ingress are served, with no warning (both are
	// acted on: the agents enforce policies, kobune-ingress serves
	// Ingresses).
	np := "apiVersion: networking.k8s.io/v1\nkind: NetworkPolicy\nmetadata: {name: db, namespace: shop}\nspec:\n  podSelector: {matchLabels: {app: db}}\n  ingress: [{from: [{podSelector: {}}]}]\n"
	if r := s.run(np, "apply", "-f", "-"); r.code != 0 || !strings.Contains(r.stdout, "networkpolicy.networking.k8s.io/db created") || strings.Contains(r.stderr, "Warning") {
		t.Errorf("kubectl apply of a NetworkPolicy: %d %q %q", r.code, r.stdout, r.stderr)
	}
	ing := "apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata: {name: shop, namespace: shop}\nspec:\n  defaultBackend: {service: {name: web, port: {number: 80}}}\n"
	if r := s.run(ing, "apply", "-f", "-"); r.code != 0 || !strings.Contains(r.stdout, "ingress.networking.k8s.io/shop created") || strings.Contains(r.stderr, "Warning") {
		t.Errorf("kubectl apply of an Ingress: %d %q %q", r.code, r.stdout, r.stderr)
	}
	if out := s.ok("", "get", "netpol", "-n", "shop"); !regexp.MustCompile(`(?m)^NAME\s+POD-SELECTOR\s+AGE\ndb\s+app=db\s+`).MatchString(out) {
		t.Errorf("kubectl get netpol:\n%s", out)
	}
	s.expect([]string{"explain", "networkpolicy.spec.podSelector"}, "podSelector")
	// A Job's selector is generated from its uid (kubectl finds its pods by it).
	s.expect([]string{"create", "job", "once", "-n", "shop", "--image=kobune.local/busybox:1.35", "--", "true"}, "job.batch/once created")
	s.expect([]string{"describe", "job", "once", "-n", "shop"}, "Selector:", "batch.kubernetes.io/controller-uid=")

	// scale and wait.
	s.expect([]string{"scale", "deploy", "web", "-n", "shop", "--replicas=3"}, "deployment.apps/web scaled")
	s.expect([]string{"wait", "--for=jsonpath={.status.readyReplicas}=3", "deploy/web", "-n", "shop", "--timeout=60s"}, "deployment.apps/web condition met")
	s.expect([]string{"wait", "--for=condition=Available", "deploy/web", "-n", "shop", "--timeout=60s"}, "deployment.apps/web condition met")

	// edit with a scripted editor.
	editor := filepath.Join(dir, "editor.sh")
	if err := os.WriteFile(editor, []byte("#!/bin/sh\nsed -i 's/greeting: hello/greeting: edited/' \"$1\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	s.env = []string{"KUBE_EDITOR=" + editor}
	s.expect([]string{"edit", "cm", "web-config", "-n", "shop"}, "configmap/web-config edited")
	s.env = nil
	if out := s.ok("", "get", "cm", "web-config", "-n", "shop", "-o", "jsonpath={.data.greeting}"); out != "edited" {
		t.Errorf("after edit: %q", out)
	}

	// diff against a changed manifest: exit 1 with the change shown.
	changed := filepath.Join(dir, "changed.yaml")
	_ = os.WriteFile(changed, []byte(strings.Replace(manifest, "replicas: 2", "replicas: 5", 1)), 0o644)
	if r := s.run("", "diff", "-f", changed); r.code != 1 || !strings.Contains(r.stdout, "+  replicas: 5") || !strings.Contains(r.stdout, "-  replicas: 3") {
		t.Errorf("diff: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	s.expect([]string{"explain", "deployment.spec.replicas"}, "FIELD: replicas <integer>", "Number of desired pods")
	s.expect([]string{"explain", "pods.spec.containers"}, "FIELD: containers <[]Container>", "image", "<string>")
	// explain on a custom kind: its schema as its definition writes it;
	// a field it does not have is an error naming the field.
	s.okWith(`apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: gadgets.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {plural: gadgets, kind: Gadget}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        description: A gadget for testing
        properties:
          spec:
            type: object
            description: What the gadget should be
            properties:
              size: {type: integer, description: How big in cm}
`, []string{"apply", "-f", "-"}, "gadgets.example.com created")
	var explained string
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		r := s.run("", "explain", "gadgets.spec")
		if explained = r.stdout + r.stderr; r.code == 0 || time.Now().After(deadline) {
			break
		}
	}
	for _, want := range []string{"KIND:       Gadget", "FIELD: spec <Object>", "What the gadget should be", "size\t<integer>", "How big in cm"} {
		if !strings.Contains(explained, want) {
			t.Errorf("kubectl explain gadgets.spec: no %q in\n%s", want, explained)
		}
	}
	s.expect([]string{"explain", "gadgets.metadata"}, "Standard object's metadata", "creationTimestamp", "CreationTimestamp is a timestamp")
	if r := s.run("", "explain", "gadgets.spec.colour"); r.code == 0 || !strings.Contains(r.stderr, `field "colour" does not exist`) {
		t.Errorf("kubectl explain of a field the schema lacks: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}

	// authorization as kubectl asks about it.
	s.expect([]string{"auth", "can-i", "create", "deployments", "-n", "shop"}, "yes")
	s.expect([]string{"auth", "can-i", "--list", "-n", "shop"}, "Resources", "Non-Resource URLs", "*.*")
	s.expect([]string{"auth", "can-i", "--list", "-n", "shop", "--as", "nobody"}, "selfsubjectrulesreviews.authorization.k8s.io")
	if r := s.run("", "auth", "can-i", "create", "deployments", "-n", "shop", "--as", "nobody"); r.code == 0 || !strings.Contains(r.stdout, "no") {
		t.Errorf("can-i as nobody: %d %q %q", r.code, r.stdout, r.stderr)
	}
	s.expect([]string{"auth", "whoami"}, "kubernetes-admin")

	// Errors as Kubernetes prints them.
	if r := s.run("", "get", "deploy", "nope", "-n", "shop"); r.code == 0 || !strings.Contains(r.stderr, `Error from server (NotFound): deployments.apps "nope" not found`) {
		t.Errorf("get missing: %d %q", r.code, r.stderr)
	}

	// Server-side apply: create, a conflict with another manager's change,
	// and the conflict taken with --force-conflicts.
	ssa := filepath.Join(dir, "ssa.yaml")
	_ = os.WriteFile(ssa, []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: tuning, namespace: shop}\ndata: {size: \"3\"}\n"), 0o644)
	s.expect([]string{"apply", "--server-side", "-f", ssa}, "configmap/tuning serverside-applied")
	s.expect([]string{"patch", "cm", "tuning", "-n", "shop", "--type=merge", "-p", `{"data":{"size":"5"}}`}, "configmap/tuning patched")
	if r := s.run("", "apply", "--server-side", "-f", ssa); r.code == 0 || !strings.Contains(r.stderr, `conflict with "kubectl-patch"`) || !strings.Contains(r.stderr, ".data.size") {
		t.Errorf("server-side apply over another manager's field: exit %d\n%s", r.code, r.stderr)
	}
	s.expect([]string{"apply", "--server-side", "--force-conflicts", "-f", ssa}, "configmap/tuning serverside-applied")
	if out := s.ok("", "get", "cm", "tuning", "-n", "shop", "-o", "jsonpath={.data.size}"); out != "3" {
		t.Errorf("after a forced server-side apply: %q", out)
	}
	s.expect([]string{"get", "cm", "tuning", "-n", "shop", "-o", "yaml", "--show-managed-fields"}, "manager: kubectl", "operation: Apply")

	s.expect([]string{"delete", "deployment", "web", "-n", "shop"}, `deployment.apps "web" deleted`)
	// The namespace goes first in the file, and its contents with it (the
	// API server empties a namespace at once, sooner than Kubernetes'
	// namespace controller): what follows it may already be gone.
	s.expect([]string{"delete", "-f", m, "--ignore-not-found"}, `namespace "shop" deleted`)
	if r := s.run("", "get", "deploy", "web", "-n", "shop"); r.code == 0 {
		t.Errorf("deployment still there after delete: %s", r.stdout)
	}
}

// ageRe matches kubectl's AGE cells (5s, 3m12s, 2h, 4d), which two CLIs
// that read the clock a moment apart may print differently.
var ageRe = regexp.MustCompile(`\b\d+[smhd](\d+[smh])?\b`)

// TestKubectlAndKobectlPrintTheSameTables: both CLIs print one table for
// the same objects, from one definition of the columns (api/printers).
func TestKubectlAndKobectlPrintTheSameTables(t *testing.T) {
	s := newSession(t, 2)
	dir := t.TempDir()
	m := filepath.Join(dir, "shop.yaml")
	_ = os.WriteFile(m, []byte(manifest), 0o644)
	s.ok("", "apply", "-f", m)
	s.ok("", "rollout", "status", "deployment/web", "-n", "shop", "--timeout=60s")
	for _, args := range [][]string{
		{"get", "pods", "-A"}, {"get", "nodes"}, {"get", "deployments", "-A"}, {"get", "services", "-A"},
		{"get", "pods", "-n", "shop", "-o", "wide"}, {"get", "nodes", "-o", "wide"},
	} {
		want := ageRe.ReplaceAllString(s.ok("", args...), "AGE")
		var out, errOut bytes.Buffer
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		code := ctl.RunContext(ctx, append([]string{"--kubeconfig", s.kubeconfig}, args...), strings.NewReader(""), &out, &errOut)
		cancel()
		if code != 0 {
			t.Fatalf("kobectl %v: %d %s", args, code, errOut.String())
		}
		if got := ageRe.ReplaceAllString(out.String(), "AGE"); got != want {
			t.Errorf("%v: kobectl and kubectl differ:\nkobectl:\n%s\nkubectl:\n%s", args, got, want)
		}
	}
}

// TestKubectlGetWatch: kubectl get -w prints the table's header, the
// rows that exist and each change, from Table watch events.
func TestKubectlGetWatch(t *testing.T) {
	s := newSession(t, 0)
	s.ok("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: first}\ndata: {a: '1'}\n", "apply", "-f", "-")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, kubectlBin, "--kubeconfig", s.kubeconfig, "get", "configmaps", "-w")
	cmd.Env = []string{"HOME=" + s.home, "PATH=" + os.Getenv("PATH")}
	var out syncBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Second)
	s.ok("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: second}\ndata: {a: '1', b: '2'}\n", "apply", "-f", "-")
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) && !regexp.MustCompile(`(?m)^second\s+2\s+`).MatchString(out.String()) {
		time.Sleep(200 * time.Millisecond)
	}
	cancel()
	_ = cmd.Wait()
	got := out.String()
	if !regexp.MustCompile(`(?m)^NAME\s+DATA\s+AGE`).MatchString(got) || !regexp.MustCompile(`(?m)^first\s+1\s+`).MatchString(got) || !regexp.MustCompile(`(?m)^second\s+2\s+`).MatchString(got) {
		t.Fatalf("kubectl get -w:\n%s", got)
	}
}

// syncBuffer is a buffer a running process writes while the test reads.
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
