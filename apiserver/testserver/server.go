package testserver

import (
	"context"
	"math/rand/v2"
	"net"
	"strconv"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/kobune/kobune/apiserver"
	"github.com/kobune/kobune/client"
	"github.com/kobune/kobune/proto/apipb"
)

// Server is a running in-process API server and a client connected to it.
type Server struct {
	*apiserver.Server
	Client  *client.Client
	DataDir string
	cancel  context.CancelFunc
	done    chan struct{}
}

// Start runs an API server on a free loopback port with its etcd data in
// dataDir. listen may be "" (a free port) or an address to reuse one.
func Start(dataDir, listen string, mutate ...func(*apiserver.Config)) (*Server, error) {
	if listen == "" {
		listen = "127.0.0.1:0"
	}
	cfg := apiserver.Config{Listen: listen, DataDir: dataDir, MetricsListen: "127.0.0.1:0", Logf: func(string, ...any) {}}
	for _, m := range mutate {
		m(&cfg)
	}
	ctx, cancel := context.WithCancel(context.Background())
	srv, err := apiserver.New(ctx, cfg)
	if err != nil {
		cancel()
		return nil, err
	}
	s := &Server{Server: srv, DataDir: dataDir, cancel: cancel, done: make(chan struct{})}
	go func() { defer close(s.done); _ = srv.Serve(ctx) }()
	s.Client, err = client.New(srv.Addr())
	if err != nil {
		s.Stop()
		return nil, err
	}
	wctx, wcancel := context.WithTimeout(ctx, 10*time.Second)
	defer wcancel()
	if _, err := s.Client.API.Version(wctx, &apipb.VersionRequest{}, grpc.WaitForReady(true)); err != nil {
		s.Stop()
		return nil, err
	}
	return s, nil
}

// Stop shuts the server down and closes etcd; the data directory stays.
func (s *Server) Stop() {
	if s.Client != nil {
		s.Client.Close()
	}
	s.cancel()
	s.Close()
	<-s.done
}

// New starts a server for a test and stops it when the test ends.
func New(t testing.TB, mutate ...func(*apiserver.Config)) *Server {
	t.Helper()
	s, err := Start(t.TempDir(), "", mutate...)
	if err != nil {
		t.Fatalf("start apiserver: %v", err)
	}
	t.Cleanup(s.Stop)
	return s
}

// StableAddr returns a loopback address for a server that a test restarts
// on the same address. Its port is below Linux's ephemeral range
// (32768-60999), so that no other process's outgoing connection can take
// it while the server is down.
func StableAddr() string { return StableAddrOn("127.0.0.1") }

// StableAddrOn is StableAddr on another local address.
func StableAddrOn(ip string) string {
	for {
		port := 20000 + rand.IntN(10000)
		addr := net.JoinHostPort(ip, strconv.Itoa(port))
		if l, err := net.Listen("tcp", addr); err == nil {
			l.Close()
			return addr
		}
	}
}
