package agent

import (
	"context"
	"fmt"
	"time"

	"github.com/kobune/kobune/agent/node"
	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/client"
)

// The node's heartbeat (the kubelet's node status manager): the Lease
// renewed every LeaseInterval, the Node's status written every
// StatusInterval and at once when the API shows the node not Ready.

// leaseLoop renews the node's Lease every LeaseInterval. A failed renewal
// is retried sooner (200 ms, doubling up to a second), so that the node
// is heard again within about a second of the API server's return — the
// kubelet's lease controller retries the same way.
func (a *Agent) leaseLoop(ctx context.Context) {
	retry := time.Duration(0)
	for {
		wait := a.cfg.LeaseInterval
		if err := node.RenewLease(ctx, a.client, a.cfg.Node.Name, a.cfg.Node.LeaseDuration); err != nil && ctx.Err() == nil {
			if retry == 0 {
				a.cfg.Logf("renew lease: %s (retrying)", client.Message(err))
			}
			retry = min(max(2*retry, 200*time.Millisecond), a.cfg.LeaseInterval, time.Second)
			wait = retry
		} else if err == nil {
			if retry != 0 {
				a.cfg.Logf("lease renewed again: the API server is back")
			}
			retry = 0
			a.reassertReady(ctx)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
	}
}

// reassertReady writes the node's status at once when the API shows it
// not Ready — the node lifecycle controller marks a node Unknown when its
// Lease was not renewed in time (after a partition, or an agent restart):
// the kubelet likewise posts its status when it differs from what it sees.
func (a *Agent) reassertReady(ctx context.Context) {
	var n *core.Node
	if a.nodes != nil { // the node informer, when the agent routes
		var ok bool
		if n, ok = a.nodes.Get("", a.cfg.Node.Name); !ok {
			return
		}
	} else {
		var err error
		if n, err = client.For[*core.Node](a.client).Get(ctx, "", a.cfg.Node.Name); err != nil {
			return
		}
	}
	if a.health.notReady() != "" {
		return // not ready: the status says so already (runtimeCheckLoop)
	}
	for _, c := range n.Status.Conditions {
		if c.Type == core.NodeReady && c.Status == meta.ConditionTrue {
			return
		}
	}
	updated, err := node.UpdateStatus(ctx, a.client, n, node.Build(a.cfg.Node).Status, "", nil)
	if err != nil {
		if ctx.Err() == nil {
			a.cfg.Logf("update node status: %s", client.Message(err))
		}
		return
	}
	a.event(updated, core.EventTypeNormal, "NodeReady", fmt.Sprintf("Node %s status is now: NodeReady", n.Name))
}

func (a *Agent) statusLoop(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(a.cfg.StatusInterval):
		}
		a.postStatus(ctx)
	}
}
