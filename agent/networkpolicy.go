package agent

import (
	"context"
	"maps"
	"slices"
	"sync"

	"github.com/kobune/kobune/agent/netpol"
	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/discovery"
	"github.com/kobune/kobune/api/networking"
	"github.com/kobune/kobune/client"
	"github.com/kobune/kobune/client/reconcile"
)

// netpolKey is the policy loop's only key: one sync programs the table.
const netpolKey = "sync"

// policyEnforcer is the NetworkPolicy agent of the node (what a network
// plugin's agent does in Kubernetes): it follows every pod of the
// cluster (the peers), the namespaces (their labels, for
// namespaceSelector), the policies and — with the node proxy — the
// kube-dns slices (the cluster DNS as a peer); any change that can move a
// verdict queues one sync of the node's table (agent/netpol).
type policyEnforcer struct {
	enforcer   *netpol.Enforcer
	pods       *client.Informer[*core.Pod]
	namespaces *client.Informer[*core.Namespace]
	policies   *client.Informer[*networking.NetworkPolicy]
	// slices are the proxy's (nil without one).
	slices *client.Informer[*discovery.EndpointSlice]
	loop   *reconcile.Loop
	logf   func(string, ...any)
}

func newPolicyEnforcer(c *client.Client, e *netpol.Enforcer, slices *client.Informer[*discovery.EndpointSlice], newLoop loopMaker, logf func(string, ...any)) *policyEnforcer {
	pe := &policyEnforcer{enforcer: e, slices: slices, logf: logf,
		pods:       client.NewInformer(client.For[*core.Pod](c), "", client.ListOptions{}),
		namespaces: client.NewInformer(client.For[*core.Namespace](c), "", client.ListOptions{}),
		policies:   client.NewInformer(client.For[*networking.NetworkPolicy](c), "", client.ListOptions{})}
	pe.loop = newLoop("networkpolicy", pe.sync, 1)
	queue := func() { pe.loop.Queue.Add(netpolKey) }
	pe.pods.AddHandler(client.Handler[*core.Pod]{OnAdd: func(*core.Pod) { queue() }, OnDelete: func(*core.Pod) { queue() },
		OnUpdate: func(old, p *core.Pod) {
			if policyRelevantChange(old, p) {
				queue()
			}
		}})
	pe.namespaces.AddHandler(client.Handler[*core.Namespace]{OnAdd: func(*core.Namespace) { queue() }, OnDelete: func(*core.Namespace) { queue() },
		OnUpdate: func(old, n *core.Namespace) {
			if !maps.Equal(old.Labels, n.Labels) {
				queue()
			}
		}})
	pe.policies.AddHandler(onAnyChange[*networking.NetworkPolicy](queue))
	// The kube-dns slices come with the proxy's slice informer, whose
	// handler queues the proxy; it queues this loop as well (sync loads
	// nothing when the DNS addresses did not move).
	if slices != nil {
		slices.AddHandler(onAnyChange[*discovery.EndpointSlice](queue))
	}
	return pe
}

// HasSynced reports whether pods, namespaces and policies are listed:
// the agent starts no pod before, so a pod is isolated from its first
// packet.
func (pe *policyEnforcer) HasSynced() bool {
	return pe.pods.HasSynced() && pe.namespaces.HasSynced() && pe.policies.HasSynced()
}

// Run follows the cluster's pods, namespaces and policies and programs
// the node's table until ctx ends.
func (pe *policyEnforcer) Run(ctx context.Context) {
	if pe.slices == nil {
		pe.logf("NetworkPolicy: no node proxy, so the cluster DNS is no policy peer")
	}
	var wg sync.WaitGroup
	for _, r := range []func(context.Context){pe.pods.Run, pe.namespaces.Run, pe.policies.Run} {
		wg.Add(1)
		go func() { defer wg.Done(); r(ctx) }()
	}
	if client.WaitForSync(ctx, pe.HasSynced) {
		pe.loop.Queue.Add(netpolKey)
		pe.loop.Run(ctx)
	}
	wg.Wait()
}

func (pe *policyEnforcer) sync(ctx context.Context, _ string) error {
	st := netpol.State{Pods: pe.pods.List(), Namespaces: pe.namespaces.List(), Policies: pe.policies.List()}
	if pe.slices != nil {
		st.PseudoPods = netpol.DNSEndpoints(pe.slices.List(), dnsManagedBy)
	}
	return pe.enforcer.Sync(ctx, st)
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
