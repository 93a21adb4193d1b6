package apiserver_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/moby/spdystream"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/apiserver/testserver"
	"github.com/kobune/kobune/client"
)

// TestRESTConnectRefusesBeforeUpgrading: exec and port-forward requests
// that cannot run get an HTTP answer with a Status saying why — a missing
// command, a missing pod, a pod on a node without an agent, then (only for
// callers who may, so that kubectl's SPDY retry after a refused WebSocket
// shows the real refusal) no WebSocket or no protocol in common — before
// any upgrade, and nothing is upgraded.
// (The sessions themselves run on real nodes: test/e2e and test/compat.)
func TestRESTConnectRefusesBeforeUpgrading(t *testing.T) {
	s := testserver.New(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := client.For[*core.Node](s.Client).Create(ctx, &core.Node{ObjectMeta: meta.ObjectMeta{Name: "simulated-1"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.For[*core.Pod](s.Client).Create(ctx, &core.Pod{ObjectMeta: meta.ObjectMeta{Name: "sim", Namespace: "default"},
		Spec: core.PodSpec{NodeName: "simulated-1", Containers: []core.Container{{Name: "c", Image: "kobune.local/labapp:1.0"}}}}); err != nil {
		t.Fatal(err)
	}
	// A node that publishes an address (nothing listens there): requests
	// for its pod pass the checks of who and where, and reach those of
	// the protocol.
	nodes := client.For[*core.Node](s.Client)
	if _, err := nodes.Create(ctx, &core.Node{ObjectMeta: meta.ObjectMeta{Name: "addressed"}}); err != nil {
		t.Fatal(err)
	}
	n, _ := nodes.Get(ctx, "", "addressed")
	n.Status.Addresses = []core.NodeAddress{{Type: "InternalIP", Address: "127.0.0.1"}}
	n.Status.DaemonEndpoints.KubeletEndpoint.Port = 1
	if _, err := nodes.UpdateStatus(ctx, n); err != nil {
		t.Fatal(err)
	}
	if _, err := client.For[*core.Pod](s.Client).Create(ctx, &core.Pod{ObjectMeta: meta.ObjectMeta{Name: "reach", Namespace: "default"},
		Spec: core.PodSpec{NodeName: "addressed", Containers: []core.Container{{Name: "c", Image: "kobune.local/labapp:1.0"}}}}); err != nil {
		t.Fatal(err)
	}
	c := newRESTClient(t, client.Config{}, s.Addr())
	for _, tc := range []struct {
		path   string
		header []string
		code   int
		want   string
	}{
		{"/api/v1/namespaces/default/pods/sim/exec?stdout=true", nil, 400, "at least one command"},
		{"/api/v1/namespaces/default/pods/sim/exec?command=ls", nil, 400, "at least 1 of stdin, stdout, stderr"},
		{"/api/v1/namespaces/default/pods/sim/exec?command=ls&stdout=maybe", nil, 422, `stdout: Invalid value: \"maybe\"`},
		{"/api/v1/namespaces/default/pods/sim/exec?command=ls&stdout=true&stderr=true&tty=true", nil, 400, "stderr cannot be used with tty"},
		{"/api/v1/namespaces/default/pods/reach/exec?command=ls&stdout=true", []string{"Connection", "Upgrade", "Upgrade", "SPDY/3.1"}, 400, "not SPDY: use kubectl 1.30 or later"},
		{"/api/v1/namespaces/default/pods/reach/portforward", nil, 400, "needs an upgrade to SPDY/3.1+portforward.k8s.io"},
		{"/api/v1/namespaces/default/pods/nope/exec?command=ls&stdout=true", []string{"Connection", "Upgrade", "Upgrade", "SPDY/3.1"}, 404, `pods \"nope\" not found`},
		{"/api/v1/namespaces/default/pods/sim/portforward?ports=http", nil, 422, `ports: Invalid value: \"http\"`},
	} {
		code, _, b := c.do("POST", tc.path, "", "", tc.header...)
		if code != tc.code || !strings.Contains(string(b), tc.want) {
			t.Errorf("POST %s: %d %s, want %d with %q", tc.path, code, b, tc.code, tc.want)
		}
	}
	dial := func(path string, protocols ...string) (int, string) {
		d := websocket.Dialer{Subprotocols: protocols, HandshakeTimeout: 10 * time.Second}
		conn, resp, err := d.Dial("ws://"+s.Addr()+path, nil)
		if err == nil {
			conn.Close()
			return 101, ""
		}
		if resp == nil {
			t.Fatalf("dial %s: %v", path, err)
		}
		defer resp.Body.Close()
		buf := new(strings.Builder)
		_, _ = bufioCopy(buf, resp)
		return resp.StatusCode, buf.String()
	}
	for _, tc := range []struct {
		path      string
		protocols []string
		code      int
		want      string
	}{
		{"/api/v1/namespaces/default/pods/reach/exec?command=ls&stdout=true", []string{"v3.channel.k8s.io"}, 400, "kobune speaks v5.channel.k8s.io, v4.channel.k8s.io and channel.k8s.io"},
		{"/api/v1/namespaces/default/pods/nope/exec?command=ls&stdout=true", []string{"v5.channel.k8s.io"}, 404, `pods \"nope\" not found`},
		{"/api/v1/namespaces/default/pods/sim/exec?command=ls&stdout=true", []string{"v5.channel.k8s.io"}, 400, "node simulated-1 publishes no agent address"},
		{"/api/v1/namespaces/default/pods/nope/portforward", []string{"SPDY/3.1+portforward.k8s.io"}, 404, `pods \"nope\" not found`},
		{"/api/v1/namespaces/default/pods/sim/portforward", []string{"SPDY/3.1+portforward.k8s.io"}, 400, "node simulated-1 publishes no agent address"},
	} {
		if code, body := dial(tc.path, tc.protocols...); code != tc.code || !strings.Contains(body, tc.want) {
			t.Errorf("WebSocket %s %v: %d %s, want %d with %q", tc.path, tc.protocols, code, body, tc.code, tc.want)
		}
	}
}

func bufioCopy(dst *strings.Builder, resp *http.Response) (int64, error) {
	var b [4096]byte
	var n int64
	for {
		k, err := resp.Body.Read(b[:])
		dst.Write(b[:k])
		n += int64(k)
		if err != nil {
			return n, nil
		}
	}
}

// TestRESTPortForwardSession: over kubectl's WebSocket tunnel, each
// connection is a pair of SPDY streams; a pair whose pod port cannot be
// reached gets the reason on its error stream, and a client that opens
// halves of pairs and never completes them is cut off at 64 (its next
// stream is reset) instead of making the server hold more.
func TestRESTPortForwardSession(t *testing.T) {
	s := testserver.New(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	closed, _ := net.Listen("tcp", "127.0.0.1:0")
	port := closed.Addr().(*net.TCPAddr).Port
	closed.Close() // nothing listens there: the "agent" is unreachable
	nodes := client.For[*core.Node](s.Client)
	if _, err := nodes.Create(ctx, &core.Node{ObjectMeta: meta.ObjectMeta{Name: "gone"}}); err != nil {
		t.Fatal(err)
	}
	n, _ := nodes.Get(ctx, "", "gone")
	n.Status.Addresses = []core.NodeAddress{{Type: "InternalIP", Address: "127.0.0.1"}}
	n.Status.DaemonEndpoints.KubeletEndpoint.Port = int32(port)
	if _, err := nodes.UpdateStatus(ctx, n); err != nil {
		t.Fatal(err)
	}
	if _, err := client.For[*core.Pod](s.Client).Create(ctx, &core.Pod{ObjectMeta: meta.ObjectMeta{Name: "p", Namespace: "default"},
		Spec: core.PodSpec{NodeName: "gone", Containers: []core.Container{{Name: "c", Image: "kobune.local/labapp:1.0"}}}}); err != nil {
		t.Fatal(err)
	}
	d := websocket.Dialer{Subprotocols: []string{"SPDY/3.1+portforward.k8s.io"}, HandshakeTimeout: 10 * time.Second}
	ws, _, err := d.Dial("ws://"+s.Addr()+"/api/v1/namespaces/default/pods/p/portforward", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	conn, err := spdystream.NewConnection(&wsConn{ws: ws}, false)
	if err != nil {
		t.Fatal(err)
	}
	go conn.Serve(spdystream.NoOpStreamHandler)
	defer conn.Close()
	stream := func(id, typ string) (*spdystream.Stream, error) {
		st, err := conn.CreateStream(http.Header{"Streamtype": {typ}, "Port": {"8080"}, "Requestid": {id}}, nil, false)
		if err != nil {
			return nil, err
		}
		return st, st.WaitTimeout(10 * time.Second)
	}
	errStream, err := stream("0", "error")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := stream("0", "data"); err != nil {
		t.Fatal(err)
	}
	msg, _ := io.ReadAll(errStream)
	if !strings.Contains(string(msg), "error forwarding port 8080 to pod p") {
		t.Errorf("error stream of an unreachable port: %q", msg)
	}
	for i := 1; i <= 64; i++ { // halves of pairs, never completed
		if _, err := stream(strconv.Itoa(i), "error"); err != nil {
			t.Fatalf("half pair %d: %v", i, err)
		}
	}
	if _, err := stream("65", "error"); !errors.Is(err, spdystream.ErrReset) {
		t.Errorf("the 65th pending half pair: %v, want it reset", err)
	}
}

// wsConn is a WebSocket as a byte stream, as kubectl tunnels SPDY in it.
type wsConn struct {
	ws  *websocket.Conn
	cur io.Reader
	mu  sync.Mutex
}

func (c *wsConn) Read(p []byte) (int, error) {
	for {
		if c.cur == nil {
			_, r, err := c.ws.NextReader()
			if err != nil {
				return 0, err
			}
			c.cur = r
		}
		n, err := c.cur.Read(p)
		if errors.Is(err, io.EOF) {
			c.cur = nil
			if n == 0 {
				continue
			}
			err = nil
		}
		return n, err
	}
}

func (c *wsConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(p), c.ws.WriteMessage(websocket.BinaryMessage, p)
}
func (c *wsConn) Close() error                       { return c.ws.Close() }
func (c *wsConn) LocalAddr() net.Addr                { return c.ws.LocalAddr() }
func (c *wsConn) RemoteAddr() net.Addr               { return c.ws.RemoteAddr() }
func (c *wsConn) SetDeadline(t time.Time) error      { return c.ws.NetConn().SetDeadline(t) }
func (c *wsConn) SetReadDeadline(t time.Time) error  { return c.ws.SetReadDeadline(t) }
func (c *wsConn) SetWriteDeadline(t time.Time) error { return c.ws.SetWriteDeadline(t) }
