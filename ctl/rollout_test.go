package ctl_test

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/kobune/kobune/api/apps"
	"github.com/kobune/kobune/client"
	"github.com/kobune/kobune/test/cluster"
)

const webDeployment = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 2
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - {name: app, image: "kobune.local/labapp:1.0"}
`

// TestRolloutCommands drives a Deployment through kobectl on an
// in-process cluster: rollout status waits with progress, set image rolls
// out revision 2, history lists both, undo goes back to revision 1's
// template (as revision 3), scale, pause/resume and restart.
func TestRolloutCommands(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s := cluster.Start(t, ctx, cluster.Options{Nodes: 2}).Server
	must := func(stdin string, args ...string) string {
		t.Helper()
		r := kobectl(t, s, stdin, args...)
		if r.code != 0 {
			t.Fatalf("kobectl %v: exit %d: %s", args, r.code, r.stderr)
		}
		return r.stdout
	}
	must(webDeployment, "apply", "-f", "-")
	if out := must("", "rollout", "status", "deployment/web"); !strings.HasSuffix(out, "deployment \"web\" successfully rolled out\n") {
		t.Errorf("rollout status: %q", out)
	}
	if out := must("", "set", "image", "deployment/web", "app=kobune.local/labapp:2.0"); out != "deployment.apps/web image updated\n" {
		t.Errorf("set image: %q", out)
	}
	out := must("", "rollout", "status", "deployment/web")
	if !strings.Contains(out, "Waiting for deployment \"web\" rollout to finish") || !strings.HasSuffix(out, "successfully rolled out\n") {
		t.Errorf("rollout status during an update shows no progress: %q", out)
	}
	if out := must("", "rollout", "history", "deployment/web"); !strings.Contains(out, "REVISION  CHANGE-CAUSE\n1         <none>\n2         <none>\n") {
		t.Errorf("history: %q", out)
	}
	if out := must("", "rollout", "history", "deployment/web", "--revision=1"); !strings.Contains(out, "kobune.local/labapp:1.0") || strings.Contains(out, "pod-template-hash") {
		t.Errorf("history --revision=1: %q", out)
	}
	if out := must("", "rollout", "undo", "deployment/web"); out != "deployment.apps/web rolled back\n" {
		t.Errorf("undo: %q", out)
	}
	must("", "rollout", "status", "deployment/web")
	d, err := client.For[*apps.Deployment](s.Client).Get(ctx, "default", "web")
	if err != nil {
		t.Fatal(err)
	}
	if img := d.Spec.Template.Spec.Containers[0].Image; img != "kobune.local/labapp:1.0" || d.Annotations["deployment.kubernetes.io/revision"] != "3" {
		t.Errorf("after undo: image %s, revision %s", img, d.Annotations["deployment.kubernetes.io/revision"])
	}
	if out := must("", "scale", "deployment/web", "--replicas=3"); out != "deployment.apps/web scaled\n" {
		t.Errorf("scale: %q", out)
	}
	must("", "rollout", "status", "deployment/web")
	must("", "rollout", "pause", "deployment/web")
	if r := kobectl(t, s, "", "rollout", "pause", "deployment/web"); r.code == 0 || !strings.Contains(r.stderr, "already paused") {
		t.Errorf("pausing twice: %d %q", r.code, r.stderr)
	}
	if r := kobectl(t, s, "", "rollout", "undo", "deployment/web"); r.code == 0 || !strings.Contains(r.stderr, "paused") {
		t.Errorf("undo while paused: %d %q", r.code, r.stderr)
	}
	must("", "rollout", "resume", "deployment/web")
	if out := must("", "rollout", "restart", "deployment/web"); out != "deployment.apps/web restarted\n" {
		t.Errorf("restart: %q", out)
	}
	must("", "rollout", "status", "deployment/web")
	if out := must("", "rollout", "history", "deployment/web"); !strings.Contains(out, "\n4 ") {
		t.Errorf("restart made no revision 4: %q", out)
	}
	if r := kobectl(t, s, "", "set", "image", "deployment/web", "nope=x"); r.code == 0 || !strings.Contains(r.stderr, `unable to find container named "nope"`) {
		t.Errorf("set image of a missing container: %d %q", r.code, r.stderr)
	}
}

// TestRolloutStatusFailsOnAStalledRollout: a rollout past its progress
// deadline makes rollout status exit non-zero.
func TestRolloutStatusFailsOnAStalledRollout(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s := cluster.Start(t, ctx, cluster.Options{Nodes: 1}).Server
	// 2 pods of 3 cpu cannot both fit on a 4-cpu node: the rollout stalls.
	stalled := strings.Replace(webDeployment, "  replicas: 2\n", "  replicas: 2\n  progressDeadlineSeconds: 2\n", 1)
	stalled = strings.Replace(stalled, `image: "kobune.local/labapp:1.0"}`, `image: "kobune.local/labapp:1.0", resources: {requests: {cpu: "3"}}}`, 1)
	if r := kobectl(t, s, stalled, "apply", "-f", "-"); r.code != 0 {
		t.Fatal(r.stderr)
	}
	r := kobectl(t, s, "", "rollout", "status", "deployment/web", "--timeout=30s")
	if r.code == 0 || !strings.Contains(r.stderr, `deployment "web" exceeded its progress deadline`) {
		t.Errorf("rollout status on a stalled rollout: exit %d, %q %q", r.code, r.stdout, r.stderr)
	}
}

// TestRolloutOfStatefulSetsAndDaemonSets: rollout status follows a
// StatefulSet's and a DaemonSet's rollouts to kubectl's final lines;
// restart changes their pod templates; history lists their
// ControllerRevisions and undo goes back to one.
func TestRolloutOfStatefulSetsAndDaemonSets(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s := cluster.Start(t, ctx, cluster.Options{Nodes: 2}).Server
	manifest := `apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db}
spec:
  replicas: 2
  serviceName: db
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec: {containers: [{name: db, image: "kobune.local/busybox:1.35"}]}
---
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent}
spec:
  selector: {matchLabels: {app: agent}}
  template:
    metadata: {labels: {app: agent}}
    spec: {containers: [{name: a, image: "kobune.local/busybox:1.35"}]}
`
	if r := kobectl(t, s, manifest, "apply", "-f", "-"); r.code != 0 {
		t.Fatalf("apply: %+v", r)
	}
	for _, tc := range []struct{ target, want string }{
		{"statefulset/db", "statefulset rolling update complete 2 pods at revision "},
		{"daemonset/agent", `daemon set "agent" successfully rolled out`},
	} {
		if r := kobectl(t, s, "", "rollout", "status", tc.target, "--timeout=60s"); r.code != 0 || !strings.Contains(r.stdout, tc.want) {
			t.Errorf("rollout status %s: %d %q %q", tc.target, r.code, r.stdout, r.stderr)
		}
		if r := kobectl(t, s, "", "rollout", "restart", tc.target); r.code != 0 || !strings.HasSuffix(r.stdout, " restarted\n") {
			t.Errorf("rollout restart %s: %+v", tc.target, r)
		}
		if r := kobectl(t, s, "", "rollout", "status", tc.target, "--timeout=60s"); r.code != 0 || !strings.Contains(r.stdout, tc.want) {
			t.Errorf("rollout status %s after a restart: %d %q %q", tc.target, r.code, r.stdout, r.stderr)
		}
	}
	sts, err := client.For[*apps.StatefulSet](s.Client).Get(ctx, "default", "db")
	if err != nil || sts.Spec.Template.Annotations["kubectl.kubernetes.io/restartedAt"] == "" {
		t.Errorf("restart did not mark the StatefulSet's template: %v %v", sts.Spec.Template.Annotations, err)
	}
	// History and undo, through ControllerRevisions: two revisions (the
	// first template and the restarted one); undo goes back to the first,
	// which becomes revision 3; undo to the current one is skipped.
	for _, tc := range []struct{ target, qualified, want string }{
		{"statefulset/db", "statefulset.apps/db", "statefulset rolling update complete 2 pods at revision "},
		{"daemonset/agent", "daemonset.apps/agent", `daemon set "agent" successfully rolled out`},
	} {
		r := kobectl(t, s, "", "rollout", "history", tc.target)
		if want := tc.qualified + "\nREVISION  CHANGE-CAUSE\n1         <none>\n2         <none>\n"; r.code != 0 || r.stdout != want {
			t.Errorf("rollout history %s: %d %q %q, want %q", tc.target, r.code, r.stdout, r.stderr, want)
		}
		r = kobectl(t, s, "", "rollout", "history", tc.target, "--revision=2")
		// As kubectl prints it: describe's words, not YAML (issue #32).
		if r.code != 0 || !strings.Contains(r.stdout, tc.qualified+" with revision #2\nPod Template:\n  Labels:") ||
			!regexp.MustCompile(`(?m)^  Annotations:\s+kubectl\.kubernetes\.io/restartedAt: `).MatchString(r.stdout) ||
			!regexp.MustCompile(`(?m)^  Containers:\n   \S+:\n    Image:\s+kobune\.local/`).MatchString(r.stdout) ||
			!regexp.MustCompile(`(?m)^  Volumes:\s+<none>\n  Node-Selectors:\s+<none>\n  Tolerations:\s+<none>$`).MatchString(r.stdout) {
			t.Errorf("rollout history %s --revision=2: %d %q %q", tc.target, r.code, r.stdout, r.stderr)
		}
		if r := kobectl(t, s, "", "rollout", "undo", tc.target); r.code != 0 || r.stdout != tc.qualified+" rolled back\n" {
			t.Errorf("rollout undo %s: %+v", tc.target, r)
		}
		if r := kobectl(t, s, "", "rollout", "status", tc.target, "--timeout=60s"); r.code != 0 || !strings.Contains(r.stdout, tc.want) {
			t.Errorf("rollout status %s after an undo: %d %q %q", tc.target, r.code, r.stdout, r.stderr)
		}
		r = kobectl(t, s, "", "get", tc.target, "-o", "jsonpath={.spec.template.metadata.annotations}")
		if r.code != 0 || strings.Contains(r.stdout, "restartedAt") {
			t.Errorf("%s after undo still has the restart's template: %q %q", tc.target, r.stdout, r.stderr)
		}
		var revs []string
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
			r = kobectl(t, s, "", "rollout", "history", tc.target)
			if revs = strings.Fields(r.stdout); len(revs) == 7 && revs[3] == "2" && revs[5] == "3" {
				break
			}
		}
		if len(revs) != 7 || revs[3] != "2" || revs[5] != "3" {
			t.Errorf("rollout history %s after undo: %q, want revisions 2 and 3", tc.target, r.stdout)
		}
		if r := kobectl(t, s, "", "rollout", "undo", tc.target, "--to-revision=3"); r.code != 0 || !strings.Contains(r.stdout, "skipped rollback (current template already matches revision 3)") {
			t.Errorf("rollout undo %s to the current revision: %+v", tc.target, r)
		}
	}
	if r := kobectl(t, s, "", "get", "controllerrevisions", "-l", "app=db"); r.code != 0 || !strings.Contains(r.stdout, "statefulset.apps/db") {
		t.Errorf("get controllerrevisions: %+v", r)
	}
	if r := kobectl(t, s, "", "set", "image", "daemonset/agent", "a=kobune.local/labapp:2.0"); r.code != 0 || r.stdout != "daemonset.apps/agent image updated\n" {
		t.Errorf("set image daemonset/agent: %+v", r)
	}
	if r := kobectl(t, s, "", "get", "ds", "agent", "-o", "jsonpath={.spec.template.spec.containers[0].image}"); r.stdout != "kobune.local/labapp:2.0" {
		t.Errorf("daemonset image after set image: %+v", r)
	}
	if r := kobectl(t, s, "", "set", "image", "statefulset/db", "nope=x:1"); r.code == 0 || !strings.Contains(r.stderr, `unable to find container named "nope" in statefulset "db"`) {
		t.Errorf("set image of a missing container: %+v", r)
	}
}
