package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/client"
)

// TestSysctls: a pod's safe sysctl (with '/' as its separator, as
// Kubernetes allows) is set in its container's namespace on a real node,
// as the conformance suite checks with sysctl.
func TestSysctls(t *testing.T) {
	requireRoot(t)
	srv, nodes := startCluster(t, 1)
	nodes[0].startAgent(t, "10.244.75.0/24")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	pods := client.For[*core.Pod](srv.Client)
	if _, err := pods.Create(ctx, &core.Pod{ObjectMeta: meta.ObjectMeta{Name: "sysctl", Namespace: "default"}, Spec: core.PodSpec{NodeName: "node-1",
		RestartPolicy:   core.RestartPolicyNever,
		SecurityContext: &core.PodSecurityContext{Sysctls: []core.Sysctl{{Name: "kernel/shm_rmid_forced", Value: "1"}}},
		Containers: []core.Container{{Name: "c", Image: "kobune.local/busybox:1.35", ImagePullPolicy: core.PullNever,
			Command: []string{"/bin/sysctl", "kernel.shm_rmid_forced"}}}}}); err != nil {
		t.Fatal(err)
	}
	done := waitForPod(t, ctx, pods, "sysctl", 0, func(p *core.Pod, _ bool) bool {
		return p.Status.Phase == core.PodSucceeded || p.Status.Phase == core.PodFailed
	})
	if done.Status.Phase != core.PodSucceeded {
		t.Errorf("the pod: %s %s", done.Status.Phase, done.Status.Message)
	}
	if out, _, _ := kobectl(ctx, srv.Addr(), "logs", "sysctl"); !strings.Contains(out, "kernel.shm_rmid_forced = 1") {
		t.Errorf("logs: %q, want kernel.shm_rmid_forced = 1", out)
	}
}
