package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/client"
	"github.com/kobune/kobune/scheduler"
	"sigs.k8s.io/yaml"
)

// TestSidecarContainers applies deploy/examples/sidecar.yaml under a name
// of 68 characters: the sidecar starts first and its startup probe holds
// the next init container back (which fails the pod otherwise); READY
// counts it (2/2); it is restarted when it exits although the pod's
// restartPolicy is Never; once the app has finished it is stopped, and
// the pod Succeeds. The app's hostname is the pod's name cut to 63
// characters.
func TestSidecarContainers(t *testing.T) {
	requireRoot(t)
	srv, _, ctx := startWithControllers(t, 3*time.Minute, "10.244.99.0/24")
	go scheduler.New(scheduler.Config{Logf: func(string, ...any) {}}, componentClient(t, srv, "scheduler")).Run(ctx)
	b, err := os.ReadFile(filepath.Join(repoRoot(), "deploy", "examples", "sidecar.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var pod core.Pod
	if err := yaml.Unmarshal(b, &pod); err != nil {
		t.Fatal(err)
	}
	name := "sidecar-demo-" + strings.Repeat("x", 55) // 68 characters
	pod.Name, pod.Namespace = name, "default"
	pods := client.For[*core.Pod](srv.Client)
	if _, err := pods.Create(ctx, &pod); err != nil {
		t.Fatal(err)
	}
	sidecar := func(p *core.Pod) core.ContainerStatus {
		for _, cs := range p.Status.InitContainerStatuses {
			if cs.Name == "proxy" {
				return cs
			}
		}
		return core.ContainerStatus{}
	}
	running := waitForPod(t, ctx, pods, name, 0, func(p *core.Pod, _ bool) bool {
		return p.Status.Phase == core.PodRunning && sidecar(p).Ready || p.Status.Phase == core.PodFailed
	})
	if running.Status.Phase != core.PodRunning {
		t.Fatalf("the pod %s: the init container after the sidecar ran before it had started? %+v", running.Status.Phase, running.Status.InitContainerStatuses)
	}
	out, errOut, _ := kobectl(ctx, srv.Addr(), "get", "pod", name, "--no-headers")
	if f := strings.Fields(out); len(f) < 3 || f[1] != "2/2" || f[2] != "Running" {
		t.Errorf("get pod: %q%s; want READY 2/2, Running", out, errOut)
	}
	if out, _, _ := kobectl(ctx, srv.Addr(), "logs", name, "-c", "app"); strings.TrimSpace(out) != name[:63] {
		t.Errorf("the app's hostname: %q, want the pod's name cut to 63 characters %q", out, name[:63])
	}

	// The sidecar exits: restarted, the pod's restartPolicy Never notwithstanding.
	if out, errOut, code := kobectl(ctx, srv.Addr(), "exec", name, "-c", "app", "--", "touch", "/shared/crash"); code != 0 {
		t.Fatalf("exec: %s%s", out, errOut)
	}
	waitForPod(t, ctx, pods, name, 0, func(p *core.Pod, _ bool) bool { return sidecar(p).RestartCount == 1 && sidecar(p).Ready })

	// The app finishes: the sidecar is stopped and the pod Succeeds.
	if out, errOut, code := kobectl(ctx, srv.Addr(), "exec", name, "-c", "app", "--", "touch", "/shared/done"); code != 0 {
		t.Fatalf("exec: %s%s", out, errOut)
	}
	done := waitForPod(t, ctx, pods, name, 0, func(p *core.Pod, _ bool) bool {
		return p.Status.Phase != core.PodRunning && p.Status.Phase != core.PodPending
	})
	if done.Status.Phase != core.PodSucceeded {
		t.Errorf("the pod after its app finished: %s, want Succeeded", done.Status.Phase)
	}
	if st := sidecar(done); st.State.Terminated == nil {
		t.Errorf("the sidecar after the pod finished: %+v, want terminated", st.State)
	}
	if out, _, _ := kobectl(ctx, srv.Addr(), "logs", name, "-c", "setup"); !strings.Contains(out, "UTC") {
		t.Errorf("the init container after the sidecar read %q; want the date the sidecar wrote", out)
	}
}
