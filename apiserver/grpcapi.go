package apiserver

import (
	"context"

	"github.com/kobune/kobune/apiserver/filters"
	"github.com/kobune/kobune/proto/apipb"
)

// grpcAPI is the gRPC front end of the resource API (proto/api.proto):
// each RPC passes the handler chain and then calls the registry's verb
// of the same name, as the REST front end (rest.go) does for a URL.
type grpcAPI struct {
	apipb.UnsafeResourceAPIServer
	s *Server
}

var _ apipb.ResourceAPIServer = grpcAPI{}

func (g grpcAPI) Create(ctx context.Context, req *apipb.CreateRequest) (*apipb.ObjectResponse, error) {
	return filters.Unary(ctx, g.s.chain, "Create", req, g.s.registry.Create)
}

func (g grpcAPI) Get(ctx context.Context, req *apipb.GetRequest) (*apipb.ObjectResponse, error) {
	return filters.Unary(ctx, g.s.chain, "Get", req, g.s.registry.Get)
}

func (g grpcAPI) List(ctx context.Context, req *apipb.ListRequest) (*apipb.ListResponse, error) {
	return filters.Unary(ctx, g.s.chain, "List", req, g.s.registry.List)
}

func (g grpcAPI) Update(ctx context.Context, req *apipb.UpdateRequest) (*apipb.ObjectResponse, error) {
	return filters.Unary(ctx, g.s.chain, "Update", req, g.s.registry.Update)
}

func (g grpcAPI) UpdateStatus(ctx context.Context, req *apipb.UpdateRequest) (*apipb.ObjectResponse, error) {
	return filters.Unary(ctx, g.s.chain, "UpdateStatus", req, g.s.registry.UpdateStatus)
}

func (g grpcAPI) Delete(ctx context.Context, req *apipb.DeleteRequest) (*apipb.ObjectResponse, error) {
	return filters.Unary(ctx, g.s.chain, "Delete", req, g.s.registry.Delete)
}

func (g grpcAPI) Patch(ctx context.Context, req *apipb.PatchRequest) (*apipb.ObjectResponse, error) {
	return filters.Unary(ctx, g.s.chain, "Patch", req, g.s.registry.Patch)
}

func (g grpcAPI) Bind(ctx context.Context, req *apipb.BindRequest) (*apipb.ObjectResponse, error) {
	return filters.Unary(ctx, g.s.chain, "Bind", req, g.s.registry.Bind)
}

func (g grpcAPI) Version(ctx context.Context, req *apipb.VersionRequest) (*apipb.VersionResponse, error) {
	return filters.Unary(ctx, g.s.chain, "Version", req, g.s.registry.Version)
}

func (g grpcAPI) ServicePath(ctx context.Context, req *apipb.ServicePathRequest) (*apipb.ServicePathReply, error) {
	return filters.Unary(ctx, g.s.chain, "ServicePath", req, g.s.proxy.ServicePath)
}

func (g grpcAPI) NodeStats(ctx context.Context, req *apipb.NodeStatsRequest) (*apipb.NodeStatsReply, error) {
	return filters.Unary(ctx, g.s.chain, "NodeStats", req, g.s.proxy.NodeStats)
}

func (g grpcAPI) Metrics(ctx context.Context, req *apipb.MetricsRequest) (*apipb.MetricsReply, error) {
	return filters.Unary(ctx, g.s.chain, "Metrics", req, g.s.proxy.Metrics)
}

func (g grpcAPI) Watch(req *apipb.WatchRequest, stream apipb.ResourceAPI_WatchServer) error {
	return filters.Stream(stream.Context(), g.s.chain, "Watch", req, func(ctx context.Context) error { return g.s.registry.Watch(ctx, req, stream) })
}

func (g grpcAPI) PodLogs(req *apipb.PodLogsRequest, stream apipb.ResourceAPI_PodLogsServer) error {
	return filters.Stream(stream.Context(), g.s.chain, "PodLogs", req, func(ctx context.Context) error { return g.s.proxy.PodLogs(ctx, req, stream) })
}

func (g grpcAPI) PodAttach(req *apipb.PodAttachRequest, stream apipb.ResourceAPI_PodAttachServer) error {
	return filters.Stream(stream.Context(), g.s.chain, "PodAttach", req, func(ctx context.Context) error { return g.s.proxy.PodAttach(ctx, req, stream) })
}

// PodExec and PodPortForward: the client's first message says what is
// asked (pod, container, command or port), so it is read before the
// chain, which authorizes it.
func (g grpcAPI) PodExec(stream apipb.ResourceAPI_PodExecServer) error {
	first, err := stream.Recv()
	if err != nil {
		return err
	}
	return filters.Stream(stream.Context(), g.s.chain, "PodExec", first, func(ctx context.Context) error { return g.s.proxy.PodExec(ctx, first, stream) })
}

func (g grpcAPI) PodPortForward(stream apipb.ResourceAPI_PodPortForwardServer) error {
	first, err := stream.Recv()
	if err != nil {
		return err
	}
	return filters.Stream(stream.Context(), g.s.chain, "PodPortForward", first, func(ctx context.Context) error { return g.s.proxy.PodPortForward(ctx, first, stream) })
}
