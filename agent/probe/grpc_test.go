package probe

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/kobune/kobune/api/core"
)

// TestGRPCProbe: the kubelet's gRPC probe against a real grpc.health.v1
// server on loopback: SERVING passes, NOT_SERVING and an unknown service
// fail with the reason, a server without the health service and a closed
// port fail within the probe's timeout.
func TestGRPCProbe(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	hs := health.NewServer()
	hs.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
	hs.SetServingStatus("db", healthpb.HealthCheckResponse_NOT_SERVING)
	healthpb.RegisterHealthServer(srv, hs)
	go srv.Serve(l)
	t.Cleanup(srv.Stop)
	bare, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	plain := grpc.NewServer() // no health service
	go plain.Serve(bare)
	t.Cleanup(plain.Stop)
	closed, _ := net.Listen("tcp", "127.0.0.1:0")
	closedPort := closed.Addr().(*net.TCPAddr).Port
	closed.Close()

	port := func(l net.Listener) int32 { return int32(l.Addr().(*net.TCPAddr).Port) }
	str := func(s string) *string { return &s }
	tests := []struct {
		name    string
		action  core.GRPCAction
		wantErr string
	}{
		{"serving", core.GRPCAction{Port: port(l)}, ""},
		{"a service not serving", core.GRPCAction{Port: port(l), Service: str("db")}, `service unhealthy (responded with "NOT_SERVING")`},
		{"an unknown service", core.GRPCAction{Port: port(l), Service: str("nope")}, "health rpc probe failed"},
		{"no health service", core.GRPCAction{Port: port(bare)}, "does not implement the grpc health protocol"},
		{"nothing listening", core.GRPCAction{Port: int32(closedPort)}, "timeout"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			a := tt.action
			err := Run(ctx, nil, Target{PodIP: "127.0.0.1", Container: &core.Container{Name: "c"}}, core.ProbeHandler{GRPC: &a})
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("probe failed: %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Errorf("probe error %v, want one with %q", err, tt.wantErr)
			}
		})
	}
}
