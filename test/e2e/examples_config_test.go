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
)

// TestDocumentedConfigExample applies deploy/examples/config.yaml — a
// ConfigMap, a Secret and a pod in the shapes of Kubernetes' documented
// examples — unchanged, with kobectl, and checks what the pod sees.
func TestDocumentedConfigExample(t *testing.T) {
	requireRoot(t)
	srv, _, ctx := startWithControllers(t, 3*time.Minute, "10.244.98.0/24")
	go scheduler.New(scheduler.Config{Logf: func(string, ...any) {}}, componentClient(t, srv, "scheduler")).Run(ctx)
	out, errOut, code := kobectl(ctx, srv.Addr(), "apply", "-f", filepath.Join(repoRoot(), "deploy", "examples", "config.yaml"))
	if code != 0 || errOut != "" {
		t.Fatalf("kobectl apply: exit %d: %s%s", code, out, errOut)
	}
	waitForPod(t, ctx, client.For[*core.Pod](srv.Client), "config-demo", 0, func(p *core.Pod, _ bool) bool { return p.Status.Phase == core.PodRunning })
	for cmd, want := range map[string]string{
		"echo $SPECIAL_LEVEL_KEY $SPECIAL_TYPE $SECRET_USERNAME $MY_POD_NAME $MY_MEM_LIMIT": "very charm my-app config-demo 64",
		"cat /etc/config/game.properties":   "enemies=aliens\nlives=3",
		"ls /etc/config":                    "game.properties",
		"cat /etc/secret-volume/password":   "39528$vdg7Jb",
		"cat /etc/podinfo/labels":           `app="config-demo"`,
		"echo x > /cache/f && cat /cache/f": "x",
	} {
		out, errOut, code := kobectl(ctx, srv.Addr(), "exec", "config-demo", "--", "sh", "-c", cmd)
		if code != 0 || strings.TrimSpace(out) != want {
			t.Errorf("%s: exit %d: %q%s, want %q", cmd, code, out, errOut, want)
		}
	}
}

// TestDocumentedStorageExample applies deploy/examples/task-pv.yaml — a
// hostPath PersistentVolume, a claim of class manual and a pod using it,
// and a pod with a hostPath volume, in the shapes of Kubernetes'
// documentation — unchanged, and checks what the pods write reaches the
// node's directories.
func TestDocumentedStorageExample(t *testing.T) {
	requireRoot(t)
	if _, err := os.Stat("/tmp/kobune-examples"); err == nil {
		t.Skip("/tmp/kobune-examples exists (a lab's example?); not touching it")
	}
	t.Cleanup(func() { os.RemoveAll("/tmp/kobune-examples") })
	srv, _, ctx := startWithControllers(t, 3*time.Minute, "10.244.98.0/24")
	go scheduler.New(scheduler.Config{Logf: func(string, ...any) {}}, componentClient(t, srv, "scheduler")).Run(ctx)
	out, errOut, code := kobectl(ctx, srv.Addr(), "apply", "-f", filepath.Join(repoRoot(), "deploy", "examples", "task-pv.yaml"))
	if code != 0 || errOut != "" {
		t.Fatalf("kobectl apply: exit %d: %s%s", code, out, errOut)
	}
	pods := client.For[*core.Pod](srv.Client)
	for _, name := range []string{"task-pv-pod", "test-pd"} {
		waitForPod(t, ctx, pods, name, 0, func(p *core.Pod, _ bool) bool { return p.Status.Phase == core.PodRunning })
	}
	out, _, _ = kobectl(ctx, srv.Addr(), "get", "pvc", "task-pv-claim")
	if !strings.Contains(out, "Bound") || !strings.Contains(out, "task-pv-volume") || !strings.Contains(out, "10Gi") {
		t.Errorf("kobectl get pvc task-pv-claim:\n%s", out)
	}
	for file, want := range map[string]string{"/tmp/kobune-examples/task-pv/index.html": "Hello from Kubernetes storage", "/tmp/kobune-examples/hostpath/started": "UTC"} {
		var b []byte
		for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
			if b, _ = os.ReadFile(file); strings.Contains(string(b), want) {
				break
			}
		}
		if !strings.Contains(string(b), want) {
			t.Errorf("%s: %q, want %q", file, b, want)
		}
	}
	out, errOut, code = kobectl(ctx, srv.Addr(), "exec", "task-pv-pod", "--", "wget", "-q", "-O", "-", "http://127.0.0.1/")
	if code != 0 || strings.TrimSpace(out) != "Hello from Kubernetes storage" {
		t.Errorf("GET / in task-pv-pod: exit %d: %q%s", code, out, errOut)
	}
}
