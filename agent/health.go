package agent

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/kobune/kobune/agent/node"
	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/client"
)

// health is the agent's own verdict on its node, behind the Ready
// condition it posts: the kubelet's runtime state. A node whose container
// runtime does not answer is not ready ("container runtime is down"), even
// though the agent itself still renews the Lease: the node lifecycle
// controller then taints it not-ready instead of unreachable, the scheduler
// sends it no pods, and after the pods' toleration (300 s by default) they
// are evicted, as in Kubernetes.
type health struct {
	mu  sync.Mutex
	msg string
}

func (h *health) notReady() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.msg
}

func (h *health) set(msg string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.msg = msg
}

// checkRuntime asks the runtime for its version, the cheapest call that
// needs it up.
func (a *Agent) checkRuntime(ctx context.Context) string {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if _, err := a.runtime.Version(ctx); err != nil {
		return "container runtime is down: " + err.Error()
	}
	return ""
}

// runtimeCheckLoop checks the runtime every RuntimeCheckInterval; when the
// node's readiness differs from what it last posted (registration posted
// Ready), it posts the status at once — again at the next check if the
// write failed — and writes the kubelet's NodeNotReady or NodeReady event.
func (a *Agent) runtimeCheckLoop(ctx context.Context) {
	posted := true
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(a.cfg.RuntimeCheckInterval):
		}
		msg := a.checkRuntime(ctx)
		if ctx.Err() != nil {
			return
		}
		a.health.set(msg)
		ready := msg == ""
		if ready == posted {
			continue
		}
		n := a.postStatus(ctx)
		if n == nil {
			continue
		}
		posted = ready
		reason := "NodeReady"
		if ready {
			a.cfg.Logf("node %s is ready again: the container runtime answers", a.cfg.Node.Name)
		} else {
			reason = "NodeNotReady"
			a.cfg.Logf("node %s is not ready: %s", a.cfg.Node.Name, msg)
		}
		a.event(n, core.EventTypeNormal, reason, fmt.Sprintf("Node %s status is now: %s", n.Name, reason))
	}
}

// postStatus writes the node's status with the current verdict; the
// updated node, or nil after an error (logged).
func (a *Agent) postStatus(ctx context.Context) *core.Node {
	n, err := client.For[*core.Node](a.client).Get(ctx, "", a.cfg.Node.Name)
	if err == nil {
		under := a.eviction.conditions()
		n, err = node.UpdateStatus(ctx, a.client, n, node.Build(a.cfg.Node).Status, a.health.notReady(), under)
	}
	if err != nil {
		if ctx.Err() == nil {
			a.cfg.Logf("update node status: %s", client.Message(err))
		}
		return nil
	}
	return n
}
