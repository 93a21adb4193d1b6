package client

import (
	"context"
	"fmt"
	"time"

	"google.golang.org/grpc"
	grpcbackoff "google.golang.org/grpc/backoff"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/kobune/kobune/proto/apipb"
)

// Client is a connection to a Kobune API server.
type Client struct {
	conn *grpc.ClientConn
	// API is the raw generated gRPC client: objects as JSON bytes. Most code
	// uses the typed client (For) instead.
	API apipb.ResourceAPIClient
	// Addr is the server address this client dials.
	Addr string
	// cfg is how it connected (TLS and identity), for Another.
	cfg Config
}

// Conn is the client's gRPC connection (its state shows whether the
// server closed it, as after its idle timeout).
func (c *Client) Conn() *grpc.ClientConn { return c.conn }

// Another is a second connection to the same server as the same user
// (leader election keeps its Lease renewals on a connection of their own).
func (c *Client) Another() (*Client, error) {
	if c.cfg.Server == "" {
		return New(c.Addr)
	}
	return NewFromConfig(c.cfg)
}

// reconnect is how fast a lost connection is retried: at most a second
// apart, so that agents and controllers are back within about a second of
// an API server's restart, however long it was gone (gRPC's default backoff
// grows to two minutes: after a minute's outage agents stayed away for
// 40-60 s more). The kubelet likewise retries its API server quickly.
var reconnect = grpc.ConnectParams{
	Backoff:           grpcbackoff.Config{BaseDelay: 100 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: time.Second},
	MinConnectTimeout: 5 * time.Second,
}

// New connects to the API server at addr ("127.0.0.1:6443"). The connection
// is lazy: an unreachable server shows up as Unavailable on the first call.
func New(addr string) (*Client, error) { return dial(addr, insecure.NewCredentials()) }

func dial(addr string, creds credentials.TransportCredentials, more ...grpc.DialOption) (*Client, error) {
	conn, err := grpc.NewClient(addr, append([]grpc.DialOption{
		grpc.WithTransportCredentials(creds),
		grpc.WithConnectParams(reconnect),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(256<<20), grpc.MaxCallSendMsgSize(8<<20)),
	}, more...)...)
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", addr, err)
	}
	return &Client{conn: conn, API: apipb.NewResourceAPIClient(conn), Addr: addr}, nil
}

// Close closes the connection.
func (c *Client) Close() error { return c.conn.Close() }

// ServerVersion is what the API server says it runs.
type ServerVersion struct {
	Version     string // Kobune's
	EtcdVersion string // the etcd it stores in
}

// Version asks the server for its version; it is also a cheap "are you there".
func (c *Client) Version(ctx context.Context) (ServerVersion, error) {
	v, err := c.API.Version(ctx, &apipb.VersionRequest{})
	if err != nil {
		return ServerVersion{}, err
	}
	return ServerVersion{Version: v.Version, EtcdVersion: v.EtcdVersion}, nil
}

// IsNotFound reports whether err says the object does not exist.
func IsNotFound(err error) bool { return status.Code(err) == codes.NotFound }

// IsAlreadyExists reports whether err says the name is taken.
func IsAlreadyExists(err error) bool { return status.Code(err) == codes.AlreadyExists }

// IsConflict reports whether err is an optimistic-concurrency conflict: the
// object changed since it was read; read it again and retry.
func IsConflict(err error) bool { return status.Code(err) == codes.Aborted }

// IsTooManyRequests reports a refusal to retry later (HTTP 429): an
// eviction a PodDisruptionBudget does not allow now.
func IsTooManyRequests(err error) bool { return status.Code(err) == codes.ResourceExhausted }

// IsExpired reports whether a watch's starting revision was compacted: list again.
func IsExpired(err error) bool { return status.Code(err) == codes.OutOfRange }

// IsForbidden reports whether authorization refused the call.
func IsForbidden(err error) bool { return status.Code(err) == codes.PermissionDenied }

// IsInvalid reports whether the server refused the object as invalid.
func IsInvalid(err error) bool { return status.Code(err) == codes.InvalidArgument }

// Message returns the server's message without the gRPC decoration.
func Message(err error) string {
	if s, ok := status.FromError(err); ok {
		if s.Code() == codes.Unavailable {
			return "the API server is unavailable: " + s.Message()
		}
		return s.Message()
	}
	return err.Error()
}

// Connect returns a client for a component (kobune-scheduler, ...) —
// through kubeconfig when it is set, else to addr in plaintext — and
// says in the log when the API server does not answer within 30 s: the
// component waits for it (every call retries), it does not exit.
func Connect(ctx context.Context, addr, kubeconfig, component string, logf func(string, ...any)) (*Client, error) {
	c, err := Dial(addr, kubeconfig)
	if err != nil {
		return nil, err
	}
	vctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if _, err := c.API.Version(vctx, &apipb.VersionRequest{}, grpc.WaitForReady(true)); err != nil && ctx.Err() == nil {
		logf("%s: the API server at %s does not answer yet (%s); waiting for it", component, c.Addr, Message(err))
	}
	return c, nil
}
