package apiserver_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/apiserver/testserver"
	"github.com/kobune/kobune/client"
	"github.com/kobune/kobune/proto/apipb"
)

// TestGRPCListHoldsItsSeatsUntilSent (issue #35): over gRPC a list's
// seats of API Priority and Fairness are held until its response has
// been sent, as over REST: a client that does not read a 2 MiB list keeps
// those seats (so that such clients cannot start more lists than there
// are seats, each holding its response in the server's memory), and they
// are given back once it reads. Before, gRPC wrote the response after
// the seats had been released.
func TestGRPCListHoldsItsSeatsUntilSent(t *testing.T) {
	srv := testserver.New(t)
	ctx := ctxT(t)
	cms := client.For[*core.ConfigMap](srv.Client)
	value := strings.Repeat("x", 100<<10)
	for i := range 20 {
		if _, err := cms.Create(ctx, &core.ConfigMap{ObjectMeta: meta.ObjectMeta{Name: "big-" + strconv.Itoa(i), Namespace: "default"}, Data: map[string]string{"v": value}}); err != nil {
			t.Fatal(err)
		}
	}
	executing := func() int {
		resp, err := http.Get("http://" + srv.MetricsAddr() + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		n := 0
		for _, m := range regexp.MustCompile(`(?m)^kobune_apiserver_flowcontrol_current_executing_requests\{[^}]*\} (\d+)$`).FindAllStringSubmatch(string(b), -1) {
			v, _ := strconv.Atoi(m[1])
			n += v
		}
		return n
	}
	// A client whose connection stops reading: the server can send the
	// first flow-control window of the response and no more.
	g := &gate{open: make(chan struct{})}
	conn, err := grpc.NewClient("passthrough:///"+srv.Addr(), grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) {
			c, err := (&net.Dialer{}).DialContext(ctx, "tcp", addr)
			if err != nil {
				return nil, err
			}
			return &gatedConn{Conn: c, g: g}, nil
		}),
		grpc.WithInitialWindowSize(64<<10), grpc.WithInitialConnWindowSize(64<<10))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	defer g.reopen() // before the close: a failing test must not leave the reader stuck
	api := apipb.NewResourceAPIClient(conn)
	if _, err := api.Version(ctx, &apipb.VersionRequest{}); err != nil { // the connection is up
		t.Fatal(err)
	}
	g.close()
	done := make(chan error, 1)
	go func() {
		resp, err := api.List(ctx, &apipb.ListRequest{Resource: "configmaps", Namespace: "default"})
		if err == nil && len(resp.Items) != 20 {
			t.Errorf("the list has %d items, want 20", len(resp.Items))
		}
		done <- err
	}()
	// The list has run and its response waits for the client: its seats
	// stay taken, seen for two seconds.
	until(t, "the list takes its seats", func() bool { return executing() > 0 })
	for end := time.Now().Add(2 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		if n := executing(); n == 0 {
			t.Fatal("a gRPC list whose response the client has not read released its seats: gRPC sends the response after the handler chain")
		}
	}
	g.reopen()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	until(t, "the seats are given back once the response is read", func() bool { return executing() == 0 })
}

// gate stops a connection's reads while closed.
type gate struct {
	mu     sync.Mutex
	open   chan struct{}
	closed bool
}

func (g *gate) close() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.open, g.closed = make(chan struct{}), true
}

func (g *gate) reopen() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		close(g.open)
		g.closed = false
	}
}

func (g *gate) wait() {
	g.mu.Lock()
	ch, closed := g.open, g.closed
	g.mu.Unlock()
	if closed {
		<-ch
	}
}

type gatedConn struct {
	net.Conn
	g *gate
}

func (c *gatedConn) Read(b []byte) (int, error) {
	c.g.wait()
	return c.Conn.Read(b)
}
