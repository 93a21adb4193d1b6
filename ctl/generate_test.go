package ctl_test

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/kobune/kobune/api/apps"
	"github.com/kobune/kobune/api/batch"
	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/scheduling"
	"github.com/kobune/kobune/client"
	"github.com/kobune/kobune/test/cluster"
)

// TestGeneratorsWaitEventsTaint: the commands that build objects from
// flags (create deployment|configmap|secret|service|job|priorityclass,
// run, expose)
// store what kubectl's would, print only with --dry-run=client and store
// nothing with --dry-run=server; wait follows conditions, JSONPath values
// and deletions and fails on its timeout; events lists an object's events
// oldest first; taint and annotate change nodes and metadata.
func TestGeneratorsWaitEventsTaint(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	s := cluster.Start(t, ctx, cluster.Options{Nodes: 1}).Server
	must := func(stdin string, args ...string) string {
		t.Helper()
		r := kobectl(t, s, stdin, args...)
		if r.code != 0 {
			t.Fatalf("kobectl %v: exit %d: %s", args, r.code, r.stderr)
		}
		return r.stdout
	}
	fails := func(want string, args ...string) {
		t.Helper()
		if r := kobectl(t, s, "", args...); r.code == 0 || !strings.Contains(r.stderr, want) {
			t.Errorf("kobectl %v: exit %d, stderr %q: want a failure saying %q", args, r.code, r.stderr, want)
		}
	}
	deps := client.For[*apps.Deployment](s.Client)

	// create deployment: printed only, then stored.
	out := must("", "create", "deployment", "web", "--image=kobune.local/labapp:1.0", "--replicas=2", "--port=8080", "--dry-run=client", "-o", "yaml")
	if !strings.Contains(out, "kind: Deployment") || !strings.Contains(out, "- containerPort: 8080") || !strings.Contains(out, "name: labapp") {
		t.Errorf("create deployment --dry-run=client -o yaml:\n%s", out)
	}
	if _, err := deps.Get(ctx, "default", "web"); !client.IsNotFound(err) {
		t.Fatalf("a client dry run stored the Deployment: %v", err)
	}
	if out := must("", "create", "deployment", "web", "--image=kobune.local/labapp:1.0", "--dry-run=server"); out != "deployment.apps/web created (server dry run)\n" {
		t.Errorf("server dry run: %q", out)
	}
	if _, err := deps.Get(ctx, "default", "web"); !client.IsNotFound(err) {
		t.Fatalf("a server dry run stored the Deployment: %v", err)
	}
	must("", "create", "deployment", "web", "--image=kobune.local/labapp:1.0", "--replicas=2", "--port=8080")
	d, err := deps.Get(ctx, "default", "web")
	if err != nil || *d.Spec.Replicas != 2 || d.Spec.Selector.MatchLabels["app"] != "web" || d.Spec.Template.Spec.Containers[0].Ports[0].ContainerPort != 8080 {
		t.Fatalf("create deployment stored %+v, %v", d, err)
	}

	// wait: the Deployment's pods Ready (simulated nodes run them at once).
	must("", "wait", "deployment/web", "--for=jsonpath={.status.readyReplicas}=2", "--timeout=60s")
	if out := must("", "wait", "pods", "-l", "app=web", "--for=condition=Ready", "--timeout=60s"); strings.Count(out, "condition met") != 2 {
		t.Errorf("wait -l app=web: %q", out)
	}
	must("", "wait", "deployment/web", "--for=condition=Available", "--timeout=60s")
	fails("timed out waiting for the condition on deployments/web", "wait", "deployment/web", "--for=jsonpath={.status.readyReplicas}=3", "--timeout=1s")
	fails(`--for "ready"`, "wait", "deployment/web", "--for=ready")
	// --for=create: an object that does not exist yet, made while waiting.
	waited := make(chan run, 1)
	go func() { waited <- kobectl(t, s, "", "wait", "configmap/later", "--for=create", "--timeout=60s") }()
	time.Sleep(500 * time.Millisecond)
	must("", "create", "configmap", "later", "--from-literal=a=b")
	if r := <-waited; r.code != 0 || r.stdout != "configmap/later condition met\n" {
		t.Errorf("wait --for=create: %+v", r)
	}
	if out := must("", "wait", "configmap/later", "--for=create"); out != "configmap/later condition met\n" {
		t.Errorf("wait --for=create of an existing object: %q", out)
	}
	fails("timed out waiting for the condition on configmaps/never", "wait", "configmap/never", "--for=create", "--timeout=1s")

	// expose: the Deployment's selector and its container port.
	must("", "expose", "deployment", "web", "--port=80", "--target-port=8080")
	svc, err := client.For[*core.Service](s.Client).Get(ctx, "default", "web")
	if err != nil || svc.Spec.Selector["app"] != "web" || svc.Spec.Ports[0].Port != 80 || svc.Spec.Ports[0].TargetPort.IntVal != 8080 {
		t.Fatalf("expose stored %+v, %v", svc, err)
	}
	must("", "expose", "pod/"+firstPodName(t, s, "app=web"), "--name=one", "--type=NodePort")
	if svc, err := client.For[*core.Service](s.Client).Get(ctx, "default", "one"); err != nil || svc.Spec.Type != "NodePort" || svc.Spec.Ports[0].Port != 8080 {
		t.Errorf("expose pod --type=NodePort (the container port): %+v %v", svc, err)
	}

	// configmap and secrets from literals and files.
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "index.html"), []byte("<h1>hi</h1>"), 0o644)
	os.WriteFile(filepath.Join(dir, "app.env"), []byte("# settings\nMODE=fast\nLEVEL=3\n"), 0o644)
	must("", "create", "configmap", "site", "--from-literal=color=blue", "--from-file="+filepath.Join(dir, "index.html"), "--from-env-file="+filepath.Join(dir, "app.env"))
	cm, err := client.For[*core.ConfigMap](s.Client).Get(ctx, "default", "site")
	if err != nil || cm.Data["color"] != "blue" || cm.Data["index.html"] != "<h1>hi</h1>" || cm.Data["MODE"] != "fast" || cm.Data["LEVEL"] != "3" {
		t.Errorf("create configmap: %+v %v", cm, err)
	}
	fails(`key "color" is given twice`, "create", "configmap", "twice", "--from-literal=color=a", "--from-literal=color=b")
	must("", "create", "secret", "generic", "pw", "--from-literal=password=hunter2")
	os.WriteFile(filepath.Join(dir, "tls.crt"), []byte("CERT"), 0o644)
	os.WriteFile(filepath.Join(dir, "tls.key"), []byte("KEY"), 0o644)
	must("", "create", "secret", "tls", "web-tls", "--cert="+filepath.Join(dir, "tls.crt"), "--key="+filepath.Join(dir, "tls.key"))
	if sec, err := client.For[*core.Secret](s.Client).Get(ctx, "default", "web-tls"); err != nil || sec.Type != "kubernetes.io/tls" || string(sec.Data["tls.key"]) != "KEY" {
		t.Errorf("create secret tls: %+v %v", sec, err)
	}
	must("", "create", "service", "clusterip", "db", "--tcp=5432:5432")
	must("", "create", "service", "nodeport", "np", "--tcp=80:8080", "--node-port=30081")
	if svc, err := client.For[*core.Service](s.Client).Get(ctx, "default", "np"); err != nil || svc.Spec.Ports[0].NodePort != 30081 || svc.Spec.Selector["app"] != "np" {
		t.Errorf("create service nodeport: %+v %v", svc, err)
	}

	// create priorityclass: the class a pod names by priorityClassName.
	must("", "create", "priorityclass", "high", "--value=1000", "--description=serving traffic")
	must("", "create", "pc", "polite", "--value=500", "--preemption-policy=Never")
	pcs := client.For[*scheduling.PriorityClass](s.Client)
	if pc, err := pcs.Get(ctx, "", "high"); err != nil || pc.Value != 1000 || pc.Description != "serving traffic" || *pc.PreemptionPolicy != "PreemptLowerPriority" {
		t.Errorf("create priorityclass high: %+v %v", pc, err)
	}
	if pc, err := pcs.Get(ctx, "", "polite"); err != nil || pc.Value != 500 || *pc.PreemptionPolicy != "Never" {
		t.Errorf("create priorityclass --preemption-policy=Never: %+v %v", pc, err)
	}
	fails("preemptionPolicy", "create", "priorityclass", "rude", "--value=1", "--preemption-policy=Always")
	fails("--global-default: not supported by kobune", "create", "priorityclass", "everyone", "--value=1", "--global-default")
	if _, err := pcs.Get(ctx, "", "everyone"); !client.IsNotFound(err) {
		t.Errorf("a refused priorityclass was stored: %v", err)
	}
	must("apiVersion: v1\nkind: Pod\nmetadata: {name: important}\nspec: {priorityClassName: high, containers: [{name: c, image: kobune.local/busybox:1.35}]}\n", "apply", "-f", "-")
	if pod, err := client.For[*core.Pod](s.Client).Get(ctx, "default", "important"); err != nil || pod.Spec.Priority == nil || *pod.Spec.Priority != 1000 {
		t.Errorf("a pod of class high: %+v %v", pod.Spec.Priority, err)
	}

	// run and create job; a Job from a CronJob's template.
	must("", "run", "once", "--image=kobune.local/busybox:1.35", "--restart=Never", "--env=A=1", "--command", "--", "sh", "-c", "echo hi")
	pod, err := client.For[*core.Pod](s.Client).Get(ctx, "default", "once")
	if err != nil || pod.Labels["run"] != "once" || pod.Spec.RestartPolicy != "Never" || strings.Join(pod.Spec.Containers[0].Command, " ") != "sh -c echo hi" || pod.Spec.Containers[0].Env[0].Value != "1" {
		t.Errorf("run: %+v %v", pod, err)
	}
	fails(`--restart "Sometimes"`, "run", "x", "--image=i", "--restart=Sometimes")
	must("", "run", "local", "--image=kobune.local/labapp:1.0", "--image-pull-policy=Never")
	if pod, err := client.For[*core.Pod](s.Client).Get(ctx, "default", "local"); err != nil || pod.Spec.Containers[0].ImagePullPolicy != core.PullNever {
		t.Errorf("run --image-pull-policy=Never: %+v %v", pod.Spec.Containers, err)
	}
	fails(`--image-pull-policy "Sometimes": use Always, IfNotPresent or Never`, "run", "x", "--image=i", "--image-pull-policy=Sometimes")
	must("", "create", "job", "hello", "--image=kobune.local/busybox:1.35", "--", "echo", "hello")
	must("apiVersion: batch/v1\nkind: CronJob\nmetadata: {name: nightly}\nspec:\n  schedule: '0 3 * * *'\n  jobTemplate:\n    spec:\n      template:\n        spec:\n          restartPolicy: Never\n          containers: [{name: c, image: kobune.local/busybox:1.35}]\n", "apply", "-f", "-")
	must("", "create", "job", "now", "--from=cronjob/nightly")
	if j, err := client.For[*batch.Job](s.Client).Get(ctx, "default", "now"); err != nil || j.Spec.Template.Spec.Containers[0].Name != "c" || j.Annotations["cronjob.kubernetes.io/instantiate"] != "manual" {
		t.Errorf("create job --from: %+v %v", j, err)
	}
	// A Job gets a selector generated from its uid, and its template the
	// labels that match it (as on Kubernetes); the selector then stays.
	j, err := client.For[*batch.Job](s.Client).Get(ctx, "default", "hello")
	if err != nil || j.Spec.Selector == nil || j.Spec.Selector.MatchLabels[batch.LabelControllerUID] != j.UID ||
		j.Spec.Template.Labels[batch.LabelControllerUID] != j.UID || j.Spec.Template.Labels[batch.LabelJobName] != "hello" ||
		j.Spec.Template.Labels["controller-uid"] != j.UID || j.Spec.Template.Labels["job-name"] != "hello" {
		t.Errorf("job hello: selector %+v, template labels %v (%v)", j.Spec.Selector, j.Spec.Template.Labels, err)
	}
	must("", "describe", "job", "hello")
	fails("spec.selector: Invalid value", "patch", "job", "hello", "--type=merge", "-p", `{"spec":{"selector":{"matchLabels":{"x":"y"}}}}`)

	// wait --for=delete, then events of the deleted pod's Deployment.
	name := firstPodName(t, s, "app=web")
	must("", "delete", "pod", name, "--wait=false")
	if out := must("", "wait", "pod/"+name, "--for=delete", "--timeout=60s"); out != "pod/"+name+" deleted\n" {
		t.Errorf("wait --for=delete: %q", out)
	}
	out = must("", "events", "--for", "deployment/web")
	if !regexp.MustCompile(`(?m)^LAST SEEN\s+TYPE\s+REASON\s+OBJECT\s+MESSAGE$`).MatchString(out) || !strings.Contains(out, "deployment/web") {
		t.Errorf("events --for deployment/web:\n%s", out)
	}

	// taint and annotate.
	must("", "taint", "nodes", "node-1", "dedicated=db:NoSchedule")
	fails("--overwrite is false", "taint", "nodes", "node-1", "dedicated=web:NoSchedule")
	fails(`unknown effect "Never"`, "taint", "nodes", "node-1", "x=y:Never")
	n, _ := client.For[*core.Node](s.Client).Get(ctx, "", "node-1")
	if len(n.Spec.Taints) != 1 || n.Spec.Taints[0].Value != "db" {
		t.Errorf("taint: %+v", n.Spec.Taints)
	}
	if out := must("", "taint", "nodes", "node-1", "dedicated-"); out != "node/node-1 untainted\n" {
		t.Errorf("untaint: %q", out)
	}
	must("", "annotate", "deploy/web", "note=hello")
	must("", "annotate", "deploy/web", "note-")
	if d, _ := deps.Get(ctx, "default", "web"); d.Annotations["note"] != "" {
		t.Errorf("annotate note-: %v", d.Annotations)
	}
}

func firstPodName(t *testing.T, s interface{ Kubeconfig(string) string }, sel string) string {
	t.Helper()
	c, err := client.Dial("", s.Kubeconfig("admin"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	pods, _, err := client.For[*core.Pod](c).List(context.Background(), "default", client.ListOptions{LabelSelector: sel})
	if err != nil || len(pods) == 0 {
		t.Fatalf("pods %s: %v", sel, err)
	}
	return pods[0].Name
}
