package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/api/scheme"
	"github.com/kobune/kobune/client"
)

// TestEphemeralContainers: an ephemeral container added to a running pod
// (as kubectl debug --target adds one) runs on the node, in the target
// container's process namespace — it sees the target's processes —,
// answers exec and logs by its name, and is not restarted when it exits.
func TestEphemeralContainers(t *testing.T) {
	requireRoot(t)
	srv, nodes := startCluster(t, 1)
	nodes[0].startAgent(t, "10.244.76.0/24")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	pods := client.For[*core.Pod](srv.Client)
	if _, err := pods.Create(ctx, &core.Pod{ObjectMeta: meta.ObjectMeta{Name: "target", Namespace: "default"}, Spec: core.PodSpec{NodeName: "node-1",
		Containers: []core.Container{{Name: "app", Image: "kobune.local/busybox:1.35", ImagePullPolicy: core.PullNever, Command: []string{"sleep", "3600"}}}}}); err != nil {
		t.Fatal(err)
	}
	waitForPod(t, ctx, pods, "target", 0, func(p *core.Pod, _ bool) bool { return p.Status.Phase == core.PodRunning })
	podKind, _ := scheme.ByResource("pods")
	patch := `{"spec":{"ephemeralContainers":[{"name":"debugger","image":"kobune.local/busybox:1.35","imagePullPolicy":"Never","targetContainerName":"app",` +
		`"command":["sh","-c","echo polo; exec sleep 3600"]},{"name":"once","image":"kobune.local/busybox:1.35","imagePullPolicy":"Never","command":["true"]}]}}`
	if _, err := srv.Client.Resource(podKind).Patch(ctx, "default", "target", client.StrategicMergePatch, []byte(patch), client.PatchOptions{Subresource: "ephemeralcontainers"}); err != nil {
		t.Fatal(err)
	}
	state := func(p *core.Pod, name string) core.ContainerState {
		for _, cs := range p.Status.EphemeralContainerStatuses {
			if cs.Name == name {
				return cs.State
			}
		}
		return core.ContainerState{}
	}
	running := waitForPod(t, ctx, pods, "target", 0, func(p *core.Pod, _ bool) bool {
		return state(p, "debugger").Running != nil && state(p, "once").Terminated != nil
	})
	if running.Generation != 2 {
		t.Errorf("generation %d after adding ephemeral containers, want 2", running.Generation)
	}
	out, errOut, code := kobectl(ctx, srv.Addr(), "exec", "target", "-c", "debugger", "--", "ps")
	if code != 0 || !strings.Contains(out, "sleep 3600") || strings.Count(out, "sleep 3600") < 2 {
		t.Errorf("ps in the debugger: exit %d %s%s; want the target's sleep beside its own", code, out, errOut)
	}
	if out, _, _ := kobectl(ctx, srv.Addr(), "logs", "target", "-c", "debugger"); !strings.Contains(out, "polo") {
		t.Errorf("logs of the debugger: %q", out)
	}
	// The one that exited stays exited: no restart, whatever the pod's policy.
	time.Sleep(3 * time.Second)
	p, err := pods.Get(ctx, "default", "target")
	if err != nil {
		t.Fatal(err)
	}
	for _, cs := range p.Status.EphemeralContainerStatuses {
		if cs.Name == "once" && (cs.RestartCount != 0 || cs.State.Terminated == nil) {
			t.Errorf("the exited ephemeral container: %+v, want terminated, never restarted", cs)
		}
	}
}
