package agent

import (
	"context"
	"maps"
	"slices"

	"github.com/kobune/kobune/agent/netpol"
	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/discovery"
	"github.com/kobune/kobune/api/networking"
	"github.com/kobune/kobune/client"
)

// netpolKey is the policy loop's only key: one sync programs the table.
const netpolKey = "sync"

// watchPolicies makes the informers and the loop of NetworkPolicy
// enforcement: every pod of the cluster (peers), namespaces (their labels
// for namespaceSelector), the policies, and — with the node proxy — the
// kube-dns slices (the cluster DNS as a peer). Any change that can move a
// verdict queues one sync of the node's table.
func (a *Agent) watchPolicies(c *client.Client) {
	a.allPods = client.NewInformer(client.For[*core.Pod](c), "", client.ListOptions{})
	a.namespaces = client.NewInformer(client.For[*core.Namespace](c), "", client.ListOptions{})
	a.policies = client.NewInformer(client.For[*networking.NetworkPolicy](c), "", client.ListOptions{})
	a.netpolLoop = a.newLoop("networkpolicy", a.syncPolicies, 1)
	queue := func() { a.netpolLoop.Queue.Add(netpolKey) }
	a.allPods.AddHandler(client.Handler[*core.Pod]{OnAdd: func(*core.Pod) { queue() }, OnDelete: func(*core.Pod) { queue() },
		OnUpdate: func(old, p *core.Pod) {
			if policyRelevantChange(old, p) {
				queue()
			}
		}})
	a.namespaces.AddHandler(client.Handler[*core.Namespace]{OnAdd: func(*core.Namespace) { queue() }, OnDelete: func(*core.Namespace) { queue() },
		OnUpdate: func(old, n *core.Namespace) {
			if !maps.Equal(old.Labels, n.Labels) {
				queue()
			}
		}})
	a.policies.AddHandler(client.Handler[*networking.NetworkPolicy]{OnAdd: func(*networking.NetworkPolicy) { queue() },
		OnUpdate: func(_, _ *networking.NetworkPolicy) { queue() }, OnDelete: func(*networking.NetworkPolicy) { queue() }})
	// The kube-dns slices come with the proxy's slice informer, whose
	// handler queues the proxy; it queues this loop as well (syncPolicies
	// loads nothing when the DNS addresses did not move).
	if a.slices != nil {
		a.slices.AddHandler(client.Handler[*discovery.EndpointSlice]{OnAdd: func(*discovery.EndpointSlice) { queue() },
			OnUpdate: func(_, _ *discovery.EndpointSlice) { queue() }, OnDelete: func(*discovery.EndpointSlice) { queue() }})
	}
}

func (a *Agent) syncPolicies(ctx context.Context, _ string) error {
	st := netpol.State{Pods: a.allPods.List(), Namespaces: a.namespaces.List(), Policies: a.policies.List()}
	if a.slices != nil {
		st.PseudoPods = netpol.DNSEndpoints(a.slices.List(), dnsManagedBy)
	}
	return a.cfg.NetworkPolicy.Sync(ctx, st)
}

// policyRelevantChange: a pod change that can move a verdict — its
// labels, address, phase, node or named ports (not the rest of its
// status, which changes far more often).
func policyRelevantChange(old, p *core.Pod) bool {
	if !maps.Equal(old.Labels, p.Labels) || old.Status.PodIP != p.Status.PodIP || old.Status.Phase != p.Status.Phase ||
		old.Spec.NodeName != p.Spec.NodeName || old.Spec.HostNetwork != p.Spec.HostNetwork {
		return true
	}
	return !slices.EqualFunc(networking.PodEndpoint(old).Ports, networking.PodEndpoint(p).Ports, func(x, y networking.NamedPort) bool { return x == y })
}
