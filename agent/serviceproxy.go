package agent

import (
	"context"

	"github.com/kobune/kobune/agent/proxy"
	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/discovery"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/client"
	"github.com/kobune/kobune/client/reconcile"
)

// proxyKey is the proxy loop's only key: one sync programs every Service.
const proxyKey = "sync"

// serviceProxy is kube-proxy's part of the agent: it follows the
// Services and their EndpointSlices and, on any change, programs the
// node's Service rules in one sync (agent/proxy: nftables).
type serviceProxy struct {
	proxy    *proxy.Proxy
	services *client.Informer[*core.Service] // the agent's, shared with the Service links
	slices   *client.Informer[*discovery.EndpointSlice]
	loop     *reconcile.Loop
}

func newServiceProxy(c *client.Client, p *proxy.Proxy, services *client.Informer[*core.Service], newLoop loopMaker) *serviceProxy {
	sp := &serviceProxy{proxy: p, services: services,
		slices: client.NewInformer(client.For[*discovery.EndpointSlice](c), "", client.ListOptions{})}
	sp.loop = newLoop("proxy", func(ctx context.Context, _ string) error {
		return p.Sync(ctx, sp.services.List(), sp.slices.List())
	}, 1)
	queue := func() { sp.loop.Queue.Add(proxyKey) }
	services.AddHandler(onAnyChange[*core.Service](queue))
	sp.slices.AddHandler(onAnyChange[*discovery.EndpointSlice](queue))
	return sp
}

// HasSynced reports whether the slices are listed (the agent waits for
// the Services itself).
func (sp *serviceProxy) HasSynced() bool { return sp.slices.HasSynced() }

// Run follows the slices and, once both informers have listed, programs
// the rules until ctx ends. The first sync takes over the table a
// previous agent left.
func (sp *serviceProxy) Run(ctx context.Context) {
	done := make(chan struct{})
	go func() { defer close(done); sp.slices.Run(ctx) }()
	if client.WaitForSync(ctx, sp.services.HasSynced, sp.slices.HasSynced) {
		sp.loop.Queue.Add(proxyKey)
		sp.loop.Run(ctx)
	}
	<-done
}

// loopMaker makes a reconcile loop that logs as the agent does.
type loopMaker func(name string, sync func(ctx context.Context, key string) error, workers int) *reconcile.Loop

// onAnyChange is a handler that calls f on every add, update and delete.
func onAnyChange[T meta.Object](f func()) client.Handler[T] {
	return client.Handler[T]{OnAdd: func(T) { f() }, OnUpdate: func(_, _ T) { f() }, OnDelete: func(T) { f() }}
}
