package runtime

import (
	"testing"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
)

// TestSandboxLost: which pods the runtime retires after a reboot. A
// hostNetwork pod has no namespace to miss: the boot its container was
// started in tells a lost process from one never started (which is only
// made again, the same attempt). The e2e TestNodeRebootBringsPodsBack
// covers the namespace side on a real node.
func TestSandboxLost(t *testing.T) {
	host := &core.Pod{ObjectMeta: meta.ObjectMeta{UID: "0b7e2c1a-0000-4000-8000-000000000001"}, Spec: core.PodSpec{HostNetwork: true}}
	own := &core.Pod{ObjectMeta: meta.ObjectMeta{UID: "0b7e2c1a-0000-4000-8000-000000000002"}} // no namespace of that name here
	state := func(ip string, cs ...ContainerState) PodState { return PodState{IP: ip, Containers: cs} }
	for _, c := range []struct {
		name string
		pod  *core.Pod
		st   PodState
		want bool
	}{
		{"hostNetwork, started in an earlier boot, no process", host, state("10.0.0.1", ContainerState{Name: "app", bootID: "old"}), true},
		{"hostNetwork, started in this boot, no process (never started)", host, state("10.0.0.1", ContainerState{Name: "app", bootID: "now"}), false},
		{"hostNetwork, running", host, state("10.0.0.1", ContainerState{Name: "app", bootID: "old", Running: true}), false},
		{"hostNetwork, already retired", host, state("10.0.0.1", ContainerState{Name: "app", bootID: "old", lost: true}), false},
		{"hostNetwork, made before boot ids were recorded", host, state("10.0.0.1", ContainerState{Name: "app"}), false},
		{"own network, namespace gone", own, state("10.244.0.5", ContainerState{Name: "app", bootID: "now", Running: true}), true},
		{"own network, namespace gone, all retired", own, state("10.244.0.5", ContainerState{Name: "app", lost: true}), false},
		{"own network, no sandbox yet", own, state(""), false},
	} {
		if got := sandboxLost(c.pod, c.st, "now"); got != c.want {
			t.Errorf("%s: lost %v, want %v", c.name, got, c.want)
		}
	}
}
