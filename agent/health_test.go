package agent_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kobune/kobune/agent"
	"github.com/kobune/kobune/agent/node"
	"github.com/kobune/kobune/agent/runtime"
	"github.com/kobune/kobune/api/coordination"
	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/apiserver/testserver"
	"github.com/kobune/kobune/client"
)

// stoppableRuntime is a runtime whose daemon can be "stopped": every
// Version call fails as a dead containerd socket does.
type stoppableRuntime struct {
	runtime.Runtime
	down atomic.Bool
}

func (r *stoppableRuntime) Version(ctx context.Context) (string, error) {
	if r.down.Load() {
		return "", errors.New(`connection error: dial unix /run/containerd/containerd.sock: connect: connection refused`)
	}
	return r.Runtime.Version(ctx)
}

// Issue #10 defect 6: the agent never said NodeNotReady. When its
// container runtime stops answering, the node's Ready condition turns
// False (KubeletNotReady, "container runtime is down: ...") within a few
// checks and a NodeNotReady event is written, while the Lease keeps being
// renewed; when the runtime answers again, Ready is True and NodeReady is
// written.
func TestRuntimeDownMakesTheNodeNotReady(t *testing.T) {
	s, ctx, fake := fakeNode(t, "10.244.7.0/24")
	rt := &stoppableRuntime{Runtime: fake}
	cfg := agent.Config{LeaseInterval: 200 * time.Millisecond, RuntimeCheckInterval: 100 * time.Millisecond, DisableProbes: true, Logf: t.Logf}
	cfg.Node = node.Config{Name: "node-h", Capacity: mustResources(t, "cpu=2,memory=2Gi,pods=10"), PodCIDR: "10.244.7.0/24"}
	defer runAgent(t, ctx, cfg, s, rt)()

	nodes := client.For[*core.Node](s.Client)
	ready := func(want meta.ConditionStatus) *core.NodeCondition {
		t.Helper()
		for ctx.Err() == nil {
			if n, err := nodes.Get(ctx, "", "node-h"); err == nil {
				for i, c := range n.Status.Conditions {
					if c.Type == core.NodeReady && c.Status == want {
						return &n.Status.Conditions[i]
					}
				}
			}
			time.Sleep(20 * time.Millisecond)
		}
		t.Fatalf("node-h never Ready=%s", want)
		return nil
	}
	event := func(reason string) {
		t.Helper()
		for ctx.Err() == nil {
			evs, _, _ := client.For[*core.Event](s.Client).List(ctx, "", client.ListOptions{FieldSelector: "involvedObject.name=node-h,reason=" + reason})
			if len(evs) > 0 {
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
		t.Fatalf("no %s event", reason)
	}
	ready(meta.ConditionTrue)

	rt.down.Store(true)
	c := ready(meta.ConditionFalse)
	if c.Reason != "KubeletNotReady" || !strings.Contains(c.Message, "container runtime is down") {
		t.Errorf("Ready False with %q %q", c.Reason, c.Message)
	}
	event("NodeNotReady")
	// The agent is alive: its Lease is still renewed.
	l1 := lease(t, ctx, s)
	time.Sleep(500 * time.Millisecond)
	if l2 := lease(t, ctx, s); !l2.After(l1) {
		t.Errorf("lease not renewed while the runtime was down (%v then %v)", l1, l2)
	}
	// Lease renewals must not reassert Ready while the runtime is down.
	ready(meta.ConditionFalse)

	rt.down.Store(false)
	ready(meta.ConditionTrue)
	event("NodeReady")
}

func lease(t *testing.T, ctx context.Context, s *testserver.Server) time.Time {
	t.Helper()
	l, err := client.For[*coordination.Lease](s.Client).Get(ctx, node.LeaseNamespace, "node-h")
	if err != nil {
		t.Fatal(err)
	}
	return l.Spec.RenewTime.Time
}
