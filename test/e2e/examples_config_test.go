package e2e

import (
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
	go scheduler.New(scheduler.Config{Logf: func(string, ...any) {}}, srv.Client).Run(ctx)
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
