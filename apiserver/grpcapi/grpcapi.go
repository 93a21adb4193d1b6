// Package grpcapi is the API server's gRPC front end: the resource API of
// proto/api.proto, Kobune's own wire format, which Kobune's client
// library (and so kobectl and every component) speaks. Each RPC passes
// the handler chain (apiserver/handlerchain.go) and then calls the
// registry's verb of the same name, as the REST front end (apiserver/rest)
// does for a URL; the two front ends import the registry, never each
// other. Kubernetes has one front end (REST); this one is Kobune's.
package grpcapi

import (
	"context"

	"github.com/kobune/kobune/apiserver/filters"
	"github.com/kobune/kobune/apiserver/nodeproxy"
	"github.com/kobune/kobune/apiserver/registry"
	"github.com/kobune/kobune/proto/apipb"
)

// API serves the resource API's RPCs.
type API struct {
	apipb.UnsafeResourceAPIServer
	chain    *filters.Chain
	registry *registry.Registry
	proxy    *nodeproxy.Proxy
}

var _ apipb.ResourceAPIServer = API{}

// New returns the gRPC front end: calls pass chain, then reach the
// registry's verbs or the node proxy's.
func New(chain *filters.Chain, r *registry.Registry, proxy *nodeproxy.Proxy) API {
	return API{chain: chain, registry: r, proxy: proxy}
}

func (g API) Create(ctx context.Context, req *apipb.CreateRequest) (*apipb.ObjectResponse, error) {
	return filters.Unary(ctx, g.chain, "Create", req, g.registry.Create)
}

func (g API) Get(ctx context.Context, req *apipb.GetRequest) (*apipb.ObjectResponse, error) {
	return filters.Unary(ctx, g.chain, "Get", req, g.registry.Get)
}

func (g API) List(ctx context.Context, req *apipb.ListRequest) (*apipb.ListResponse, error) {
	return filters.Unary(ctx, g.chain, "List", req, g.registry.List)
}

func (g API) Update(ctx context.Context, req *apipb.UpdateRequest) (*apipb.ObjectResponse, error) {
	return filters.Unary(ctx, g.chain, "Update", req, g.registry.Update)
}

func (g API) UpdateStatus(ctx context.Context, req *apipb.UpdateRequest) (*apipb.ObjectResponse, error) {
	return filters.Unary(ctx, g.chain, "UpdateStatus", req, g.registry.UpdateStatus)
}

func (g API) Delete(ctx context.Context, req *apipb.DeleteRequest) (*apipb.ObjectResponse, error) {
	return filters.Unary(ctx, g.chain, "Delete", req, g.registry.Delete)
}

func (g API) Patch(ctx context.Context, req *apipb.PatchRequest) (*apipb.ObjectResponse, error) {
	return filters.Unary(ctx, g.chain, "Patch", req, g.registry.Patch)
}

func (g API) Bind(ctx context.Context, req *apipb.BindRequest) (*apipb.ObjectResponse, error) {
	return filters.Unary(ctx, g.chain, "Bind", req, g.registry.Bind)
}

func (g API) Version(ctx context.Context, req *apipb.VersionRequest) (*apipb.VersionResponse, error) {
	return filters.Unary(ctx, g.chain, "Version", req, g.registry.Version)
}

func (g API) Discovery(ctx context.Context, req *apipb.DiscoveryRequest) (*apipb.DiscoveryReply, error) {
	return filters.Unary(ctx, g.chain, "Discovery", req, g.registry.Discovery)
}

func (g API) ServicePath(ctx context.Context, req *apipb.ServicePathRequest) (*apipb.ServicePathReply, error) {
	return filters.Unary(ctx, g.chain, "ServicePath", req, g.proxy.ServicePath)
}

func (g API) NodeStats(ctx context.Context, req *apipb.NodeStatsRequest) (*apipb.NodeStatsReply, error) {
	return filters.Unary(ctx, g.chain, "NodeStats", req, g.proxy.NodeStats)
}

func (g API) Metrics(ctx context.Context, req *apipb.MetricsRequest) (*apipb.MetricsReply, error) {
	return filters.Unary(ctx, g.chain, "Metrics", req, g.proxy.Metrics)
}

func (g API) Watch(req *apipb.WatchRequest, stream apipb.ResourceAPI_WatchServer) error {
	return filters.Stream(stream.Context(), g.chain, "Watch", req, func(ctx context.Context) error { return g.registry.Watch(ctx, req, stream) })
}

func (g API) PodLogs(req *apipb.PodLogsRequest, stream apipb.ResourceAPI_PodLogsServer) error {
	return filters.Stream(stream.Context(), g.chain, "PodLogs", req, func(ctx context.Context) error { return g.proxy.PodLogs(ctx, req, stream) })
}

func (g API) PodAttach(req *apipb.PodAttachRequest, stream apipb.ResourceAPI_PodAttachServer) error {
	return filters.Stream(stream.Context(), g.chain, "PodAttach", req, func(ctx context.Context) error { return g.proxy.PodAttach(ctx, req, stream) })
}

// PodExec and PodPortForward: the client's first message says what is
// asked (pod, container, command or port), so it is read before the
// chain, which authorizes it.
func (g API) PodExec(stream apipb.ResourceAPI_PodExecServer) error {
	first, err := stream.Recv()
	if err != nil {
		return err
	}
	return filters.Stream(stream.Context(), g.chain, "PodExec", first, func(ctx context.Context) error { return g.proxy.PodExec(ctx, first, stream) })
}

func (g API) PodPortForward(stream apipb.ResourceAPI_PodPortForwardServer) error {
	first, err := stream.Recv()
	if err != nil {
		return err
	}
	return filters.Stream(stream.Context(), g.chain, "PodPortForward", first, func(ctx context.Context) error { return g.proxy.PodPortForward(ctx, first, stream) })
}
