package compat

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

var (
	helmOnce sync.Once
	helmBin  string
	helmErr  error
)

// buildHelm builds the real Helm CLI (./helm) once per test binary.
func buildHelm(t *testing.T) string {
	t.Helper()
	helmOnce.Do(func() {
		dir, err := os.MkdirTemp("", "kobune-helm-")
		if err != nil {
			helmErr = err
			return
		}
		helmBin = filepath.Join(dir, "helm")
		t.Log("building helm from helm.sh/helm/v4 (a minute or two the first time)")
		out, err := exec.Command("go", "build", "-o", helmBin, "./helm").CombinedOutput()
		if err != nil {
			helmErr = err
			helmBin = string(out)
		}
	})
	if helmErr != nil {
		t.Fatalf("build helm: %v\n%s", helmErr, helmBin)
	}
	return helmBin
}

// The chart: a CRD (crds/), a custom resource of it, a ServiceAccount
// with a Role and RoleBinding, a ConfigMap, a Deployment whose replicas
// and image tag are values, a Service, and hooks (a pre-install ConfigMap
// that must exist before the release's objects, a post-upgrade one).
var shopChart = map[string]string{
	"Chart.yaml":  "apiVersion: v2\nname: shop\nversion: 0.1.0\nappVersion: \"1.0\"\n",
	"values.yaml": "replicas: 2\ntag: \"1.0\"\n",
	"crds/gadgets.yaml": `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: gadgets.shop.example.com}
spec:
  group: shop.example.com
  scope: Namespaced
  names: {plural: gadgets, singular: gadget, kind: Gadget}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              size: {type: integer}
`,
	"templates/gadget.yaml": `apiVersion: shop.example.com/v1
kind: Gadget
metadata: {name: {{ .Release.Name }}-gadget}
spec: {size: {{ .Values.replicas }}}
`,
	"templates/rbac.yaml": `apiVersion: v1
kind: ServiceAccount
metadata: {name: {{ .Release.Name }}}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: {{ .Release.Name }}-reader}
rules:
- {apiGroups: [""], resources: [configmaps], verbs: [get, list, watch]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: {{ .Release.Name }}-reader}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: {{ .Release.Name }}-reader}
subjects:
- {kind: ServiceAccount, name: {{ .Release.Name }}, namespace: {{ .Release.Namespace }}}
`,
	"templates/app.yaml": `apiVersion: v1
kind: ConfigMap
metadata: {name: {{ .Release.Name }}-config}
data: {tag: "{{ .Values.tag }}"}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: {{ .Release.Name }}-web, labels: {app: web}}
spec:
  replicas: {{ .Values.replicas }}
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      serviceAccountName: {{ .Release.Name }}
      containers:
      - name: app
        image: kobune.local/labapp:{{ .Values.tag }}
        ports: [{containerPort: 8080, name: http}]
---
apiVersion: v1
kind: Service
metadata: {name: {{ .Release.Name }}-web}
spec:
  selector: {app: web}
  ports: [{port: 80, targetPort: http}]
`,
	"templates/hooks.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-preinstall
  annotations: {"helm.sh/hook": pre-install, "helm.sh/hook-weight": "-5"}
data: {ran: "yes"}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-postupgrade
  annotations: {"helm.sh/hook": post-upgrade, "helm.sh/hook-delete-policy": before-hook-creation}
data: {revision: "{{ .Release.Revision }}"}
`,
}

// TestHelmLifecycle (issue #36): the real Helm CLI installs a chart with a
// CRD, a custom resource, RBAC, a Deployment, a Service and hooks into
// Kobune (--wait: until the Deployment is available), upgrades it with new
// values (its post-upgrade hook runs), rolls it back, shows its history,
// and uninstalls it, leaving the CRD as Helm does.
func TestHelmLifecycle(t *testing.T) {
	helm := buildHelm(t)
	s := newSession(t, 1)
	chart := t.TempDir()
	for name, text := range shopChart {
		p := filepath.Join(chart, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	run := func(args ...string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, helm, append([]string{"--kubeconfig", s.kubeconfig, "-n", "shop"}, args...)...)
		cmd.Env = []string{"HOME=" + s.home, "PATH=" + os.Getenv("PATH"), "HELM_CACHE_HOME=" + filepath.Join(s.home, "cache"),
			"HELM_CONFIG_HOME=" + filepath.Join(s.home, "config"), "HELM_DATA_HOME=" + filepath.Join(s.home, "data")}
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Run(); err != nil {
			t.Fatalf("helm %s: %v\n%s", strings.Join(args, " "), err, out.String())
		}
		return out.String()
	}
	get := func(args ...string) string {
		t.Helper()
		return strings.TrimSpace(s.ok("", append([]string{"-n", "shop", "get"}, args...)...))
	}

	out := run("install", "shop", chart, "--create-namespace", "--wait", "--timeout", "90s")
	if !strings.Contains(out, "STATUS: deployed") || !strings.Contains(out, "REVISION: 1") {
		t.Errorf("helm install:\n%s", out)
	}
	if r := get("deployment", "shop-web", "-o", "jsonpath={.spec.replicas}/{.status.availableReplicas}"); r != "2/2" {
		t.Errorf("the Deployment after install: replicas/available %s, want 2/2", r)
	}
	if size := get("gadget", "shop-gadget", "-o", "jsonpath={.spec.size}"); size != "2" {
		t.Errorf("the chart's custom resource: spec.size %q, want 2", size)
	}
	get("service", "shop-web")
	get("rolebinding", "shop-reader")
	if ran := get("configmap", "shop-preinstall", "-o", "jsonpath={.data.ran}"); ran != "yes" {
		t.Errorf("the pre-install hook: %q", ran)
	}
	if sec := get("secrets", "-l", "owner=helm,name=shop", "-o", "name"); sec != "secret/sh.helm.release.v1.shop.v1" {
		t.Errorf("the release's record: %q, want secret/sh.helm.release.v1.shop.v1", sec)
	}

	out = run("upgrade", "shop", chart, "--set", "replicas=3", "--set", "tag=2.0", "--wait", "--timeout", "90s")
	if !strings.Contains(out, "REVISION: 2") {
		t.Errorf("helm upgrade:\n%s", out)
	}
	if r := get("deployment", "shop-web", "-o", "jsonpath={.spec.replicas} {.spec.template.spec.containers[0].image}"); r != "3 kobune.local/labapp:2.0" {
		t.Errorf("the Deployment after upgrade: %q, want 3 replicas of labapp:2.0", r)
	}
	if rev := get("configmap", "shop-postupgrade", "-o", "jsonpath={.data.revision}"); rev != "2" {
		t.Errorf("the post-upgrade hook: revision %q, want 2", rev)
	}
	if size := get("gadget", "shop-gadget", "-o", "jsonpath={.spec.size}"); size != "3" {
		t.Errorf("the custom resource after upgrade: spec.size %q, want 3", size)
	}

	run("rollback", "shop", "1", "--wait", "--timeout", "90s")
	if r := get("deployment", "shop-web", "-o", "jsonpath={.spec.replicas} {.spec.template.spec.containers[0].image}"); r != "2 kobune.local/labapp:1.0" {
		t.Errorf("the Deployment after rollback: %q, want 2 replicas of labapp:1.0", r)
	}
	if tag := get("configmap", "shop-config", "-o", "jsonpath={.data.tag}"); tag != "1.0" {
		t.Errorf("the ConfigMap after rollback: tag %q, want 1.0", tag)
	}
	hist := run("history", "shop")
	for _, want := range []string{"1 ", "2 ", "3 ", "Rollback to 1", "deployed", "superseded"} {
		if !strings.Contains(hist, want) {
			t.Errorf("helm history lacks %q:\n%s", want, hist)
		}
	}

	run("uninstall", "shop", "--wait", "--timeout", "90s")
	for _, obj := range []string{"deployment/shop-web", "service/shop-web", "configmap/shop-config", "gadget/shop-gadget", "rolebinding/shop-reader", "serviceaccount/shop", "secret/sh.helm.release.v1.shop.v1"} {
		if r := s.run("", "-n", "shop", "get", obj); r.code == 0 || !strings.Contains(r.stderr, "NotFound") {
			t.Errorf("after uninstall, %s: exit %d %s%s", obj, r.code, r.stdout, r.stderr)
		}
	}
	if r := s.run("", "get", "crd", "gadgets.shop.example.com"); r.code != 0 {
		t.Errorf("the CRD went with the release (Helm keeps CRDs): %s", r.stderr)
	}
}
