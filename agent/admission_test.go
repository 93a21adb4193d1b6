package agent_test

import (
	"testing"
	"time"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/client"
)

// TestAdmissionRejectsATakenHostPort: a pod bound to the node whose host
// port a running pod holds is rejected, as the kubelet rejects it —
// Failed, reason NodePorts, "Pod was rejected: ...", a Warning event —
// while the same port over UDP, and the port once its holder is gone,
// are admitted.
func TestAdmissionRejectsATakenHostPort(t *testing.T) {
	s, ctx, rt := fakeNode(t, "10.244.1.0/24")
	defer startAgent(t, ctx, s, rt)()
	pods := client.For[*core.Pod](s.Client)
	withPort := func(name string, proto core.Protocol) *core.Pod {
		return &core.Pod{ObjectMeta: meta.ObjectMeta{Name: name, Namespace: "default"}, Spec: core.PodSpec{NodeName: "node-1",
			Containers: []core.Container{{Name: "c", Image: "busybox", Ports: []core.ContainerPort{{ContainerPort: 80, HostPort: 21017, Protocol: proto}}}}}}
	}
	running := func(p *core.Pod, _ bool) bool { return p.Status.Phase == core.PodRunning }
	if _, err := pods.Create(ctx, withPort("holder", core.ProtocolTCP)); err != nil {
		t.Fatal(err)
	}
	waitPod(t, ctx, s, "holder", 0, running)
	if _, err := pods.Create(ctx, withPort("second", core.ProtocolTCP)); err != nil {
		t.Fatal(err)
	}
	p := waitPod(t, ctx, s, "second", 0, func(p *core.Pod, _ bool) bool { return p.Status.Phase == core.PodFailed })
	if p.Status.Reason != "NodePorts" || p.Status.Message != "Pod was rejected: Predicate NodePorts failed: node(s) didn't have free ports for the requested pod ports" {
		t.Errorf("rejected pod's status: %q %q", p.Status.Reason, p.Status.Message)
	}
	if _, ok := rt.Resized(p.UID, "c"); ok {
		t.Error("the rejected pod reached the runtime")
	}
	evs, _, _ := client.For[*core.Event](s.Client).List(ctx, "default", client.ListOptions{FieldSelector: "involvedObject.name=second,reason=NodePorts"})
	if len(evs) != 1 || evs[0].Type != core.EventTypeWarning {
		t.Errorf("events of the rejection: %+v", evs)
	}
	if _, err := pods.Create(ctx, withPort("udp", core.ProtocolUDP)); err != nil {
		t.Fatal(err)
	}
	waitPod(t, ctx, s, "udp", 0, running)
	zero := int64(0)
	if err := pods.Delete(ctx, "default", "holder", client.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatal(err)
	}
	// The port is free once the holder is gone: the agent sees the
	// holder's deletion before the next pod (one watch, in order).
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if _, err := pods.Get(ctx, "default", "holder"); client.IsNotFound(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the deleted holder is still there after 30 s")
		}
	}
	if _, err := pods.Create(ctx, withPort("third", core.ProtocolTCP)); err != nil {
		t.Fatal(err)
	}
	waitPod(t, ctx, s, "third", 0, running)
}
