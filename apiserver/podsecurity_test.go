package apiserver_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/kobune/kobune/apiserver/testserver"
	"github.com/kobune/kobune/ctl"
)

// TestPodSecurityAdmission: a namespace labelled enforce=restricted
// refuses a privileged pod with every failed check named, in Kubernetes'
// words, and stores nothing; a pod that meets the level is created; a
// Deployment whose template would fail is created with a warning (its pods
// are what enforce refuses); a bad label value is refused; an unlabelled
// namespace admits anything.
func TestPodSecurityAdmission(t *testing.T) {
	s := testserver.New(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	run := func(manifest string, args ...string) (string, string, int) {
		var out, errOut bytes.Buffer
		code := ctl.RunContext(ctx, append([]string{"--server", s.Addr()}, args...), strings.NewReader(manifest), &out, &errOut)
		return out.String(), errOut.String(), code
	}
	ns := "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: secure\n  labels:\n    pod-security.kubernetes.io/enforce: restricted\n    pod-security.kubernetes.io/warn: restricted\n"
	if out, errOut, code := run(ns, "apply", "-f", "-"); code != 0 {
		t.Fatalf("namespace: %s%s", out, errOut)
	}
	priv := `apiVersion: v1
kind: Pod
metadata: {name: priv, namespace: secure}
spec:
  containers:
  - name: app
    image: kobune.local/busybox:1.35
    securityContext: {privileged: true}
`
	_, errOut, code := run(priv, "apply", "-f", "-")
	want := `pods "priv" is forbidden: violates PodSecurity "restricted:latest": privileged (container "app" must not set securityContext.privileged=true), allowPrivilegeEscalation != false (container "app" must set securityContext.allowPrivilegeEscalation=false)`
	if code == 0 || !strings.Contains(errOut, want) {
		t.Errorf("privileged pod in a restricted namespace: exit %d: %s\nwant %s", code, errOut, want)
	}
	if out, _, _ := run("", "get", "pods", "-n", "secure"); strings.Contains(out, "priv") {
		t.Errorf("the refused pod was stored:\n%s", out)
	}
	ok := `apiVersion: v1
kind: Pod
metadata: {name: fine, namespace: secure}
spec:
  securityContext: {runAsNonRoot: true, runAsUser: 1000, seccompProfile: {type: RuntimeDefault}}
  containers:
  - name: app
    image: kobune.local/busybox:1.35
    securityContext: {allowPrivilegeEscalation: false, capabilities: {drop: [ALL]}}
`
	if out, errOut, code := run(ok, "apply", "-f", "-"); code != 0 || strings.Contains(errOut, "Warning") {
		t.Errorf("a restricted pod: exit %d: %s%s", code, out, errOut)
	}
	deploy := `apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: secure}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - {name: web, image: kobune.local/labapp:1.0}
`
	_, errOut, code = run(deploy, "apply", "-f", "-")
	if code != 0 || !strings.Contains(errOut, `Warning: deployment.apps/web: would violate PodSecurity "restricted:latest": allowPrivilegeEscalation != false`) {
		t.Errorf("a Deployment with a failing template: exit %d: %s", code, errOut)
	}
	bad := "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: typo\n  labels:\n    pod-security.kubernetes.io/enforce: restricetd\n"
	if _, errOut, code := run(bad, "apply", "-f", "-"); code == 0 || !strings.Contains(errOut, `metadata.labels[pod-security.kubernetes.io/enforce]: Unsupported value: "restricetd"`) {
		t.Errorf("a misspelled level: exit %d: %s", code, errOut)
	}
	if _, errOut, code := run(strings.ReplaceAll(priv, "secure", "default"), "apply", "-f", "-"); code != 0 {
		t.Errorf("a privileged pod in an unlabelled namespace: %s", errOut)
	}
	// Raising default's level warns about the pod already there, which stays.
	out, errOut, code := run("", "label", "namespace", "default", "pod-security.kubernetes.io/enforce=baseline")
	if code != 0 || !strings.Contains(errOut, `existing pods in namespace "default" violate the new PodSecurity enforce level "baseline:latest": priv`) {
		t.Errorf("raising the level: exit %d: %s%s", code, out, errOut)
	}
	if out, _, _ := run("", "get", "pod", "priv"); !strings.Contains(out, "priv") {
		t.Errorf("the existing pod after the level was raised: %s", out)
	}
}

// TestSystemObjectsCannotBeDeleted: the system namespaces and
// PriorityClasses survive a delete, with Kubernetes' refusal; an
// ordinary namespace goes.
func TestSystemObjectsCannotBeDeleted(t *testing.T) {
	s := testserver.New(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	run := func(args ...string) (string, int) {
		var out, errOut bytes.Buffer
		code := ctl.RunContext(ctx, append([]string{"--server", s.Addr()}, args...), strings.NewReader(""), &out, &errOut)
		return out.String() + errOut.String(), code
	}
	for _, c := range []struct{ args []string }{
		{[]string{"delete", "namespace", "kube-system"}},
		{[]string{"delete", "namespace", "default"}},
		{[]string{"delete", "priorityclass", "system-node-critical"}},
	} {
		out, code := run(c.args...)
		if code == 0 || !strings.Contains(out, "is forbidden") {
			t.Errorf("%v: exit %d: %s", c.args, code, out)
		}
		if out, code := run("get", c.args[1], c.args[2]); code != 0 || strings.Contains(out, "Terminating") {
			t.Errorf("after %v: exit %d: %s", c.args, code, out)
		}
	}
	if out, code := run("create", "namespace", "scratch"); code != 0 {
		t.Fatal(out)
	}
	if out, code := run("delete", "namespace", "scratch"); code != 0 {
		t.Errorf("deleting an ordinary namespace: %s", out)
	}
}
