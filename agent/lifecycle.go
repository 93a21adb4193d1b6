package agent

import (
	"context"
	"fmt"
	"time"

	"github.com/kobune/kobune/agent/node"
	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/client"
)

// The agent's start and its pods' housekeeping: registering the Node,
// adopting what the runtime already runs after a restart, and stopping
// what was deleted while the agent was down.

// register retries until the API server answers: an agent may start first.
func (a *Agent) register(ctx context.Context) (*core.Node, error) {
	delay := 500 * time.Millisecond
	for {
		n, err := node.Register(ctx, a.client, a.cfg.Node)
		if err == nil {
			return n, nil
		}
		a.cfg.Logf("register node %s: %s (retrying in %v)", a.cfg.Node.Name, client.Message(err), delay)
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(delay):
		}
		delay = min(2*delay, 10*time.Second)
	}
}

// adopt takes over the pods the runtime already runs (after an agent
// restart) without restarting them: their keys are remembered so that the
// first reconcile finds them running.
func (a *Agent) adopt(ctx context.Context) error {
	pods, err := a.runtime.Pods(ctx)
	if err != nil {
		return fmt.Errorf("list runtime pods: %w", err)
	}
	for _, p := range pods {
		a.workers.records.setRunning(p.Namespace+"/"+p.Name, p.UID)
	}
	if len(pods) > 0 {
		a.cfg.Logf("adopted %d running pods", len(pods))
	}
	return nil
}

// housekeeping runs once the pods bound to the node are listed, before
// any pod is reconciled (the kubelet's HandlePodCleanups): every pod the
// runtime runs is looked at — one deleted from the API while the agent was
// down is stopped, as no informer event would ever name it — and the
// sandboxes of pods neither listed nor running are torn down (an agent
// killed between setting up a sandbox and starting its first container
// leaves one behind).
func (a *Agent) housekeeping(ctx context.Context) {
	keep := a.workers.knownPods()
	for _, key := range a.workers.records.keysRunning("") {
		a.workers.queue(key)
	}
	a.workers.orphanVolumes(keep)
	if a.cleaner == nil {
		return
	}
	removed, err := a.cleaner.RemoveOrphanSandboxes(ctx, keep)
	if err != nil && ctx.Err() == nil {
		a.cfg.Logf("remove orphaned pod sandboxes: %v", err)
	}
	if len(removed) > 0 {
		a.cfg.Logf("removed %d orphaned pod sandboxes (no pod, no container): %v", len(removed), removed)
	}
}
