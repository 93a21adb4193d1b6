package apiserver

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"net"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc/credentials"
)

// One port serves two APIs, as kube-apiserver serves one: the gRPC API that
// Kobune's own components use, and the Kubernetes REST API (apiserver/rest) that
// kubectl and client-go use. The choice is made once per connection, before
// any request is read, from what the client said it speaks:
//
//   - over TLS, from the ClientHello's ALPN list: an HTTP client (kubectl,
//     client-go, curl, a browser) offers "http/1.1" (and usually "h2" too)
//     or no ALPN at all; a gRPC client offers "h2" alone. That goes to
//     gRPC, everything else to REST (over HTTP/2 when "h2" was offered);
//   - in plaintext (--insecure-plaintext), from the first bytes: the HTTP/2
//     connection preface is gRPC (h2c with prior knowledge), anything else
//     is HTTP/1.1 REST. Plaintext REST over HTTP/2 (h2c) is not served.
//
// So the gRPC path pays nothing per request: after the choice its
// connections go to grpc-go's own transport, as before.

// handshakeTimeout bounds how long a connection may take to say what it
// is: a client that connects and sends nothing holds a goroutine and a
// file descriptor for at most this long.
const handshakeTimeout = 10 * time.Second

// http2Preface starts every HTTP/2 connection (RFC 9113 §3.4).
var http2Preface = []byte("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")

// connMux accepts connections on one listener and hands each to the gRPC
// listener or the REST listener.
type connMux struct {
	lis      net.Listener
	tls      *tls.Config // nil: plaintext
	grpc     *chanListener
	rest     *chanListener
	sent     *sentConns // every gRPC connection is registered there
	logf     func(string, ...any)
	closeMux sync.Once
	// exhausted: until when (Unix nanoseconds) Accept is known to fail.
	exhausted atomic.Int64
}

func newConnMux(lis net.Listener, tc *tls.Config, sent *sentConns, logf func(string, ...any)) *connMux {
	return &connMux{lis: lis, tls: tc, sent: sent, grpc: newChanListener(lis.Addr()), rest: newChanListener(lis.Addr()), logf: logf}
}

// serve accepts until the listener is closed. Any other error of Accept —
// out of file descriptors (EMFILE, ENFILE), an aborted connection — only
// pauses it, with a back-off of up to a second, as net/http's Serve does:
// the listener stayed closed for good once the descriptors ran out, and
// every new client was refused until a restart. While it lasts, /readyz
// says so (exhausted).
func (m *connMux) serve() {
	defer m.close()
	var delay time.Duration
	for {
		c, err := m.lis.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			if delay == 0 {
				delay = 5 * time.Millisecond
				m.logf("kobune-apiserver: accept on %s: %v; refusing new connections for a moment (the process has %s file descriptors open; raise LimitNOFILE)", m.lis.Addr(), err, openFiles())
			} else {
				delay = min(2*delay, time.Second)
			}
			m.exhausted.Store(time.Now().Add(delay + time.Second).UnixNano())
			time.Sleep(delay)
			continue
		}
		delay = 0
		go m.route(c)
	}
}

// refusing says whether Accept failed within the last second: the server
// is out of descriptors, or was a moment ago.
func (m *connMux) refusing() bool { return time.Now().UnixNano() < m.exhausted.Load() }

// openFiles counts the process's open file descriptors, for the log.
func openFiles() string {
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return "an unknown number of"
	}
	return strconv.Itoa(len(fds))
}

func (m *connMux) close() {
	m.closeMux.Do(func() {
		m.lis.Close()
		m.grpc.close()
		m.rest.close()
	})
}

// route finds out what c speaks and queues it on that listener.
func (m *connMux) route(c net.Conn) {
	_ = c.SetDeadline(time.Now().Add(handshakeTimeout))
	var (
		out  net.Conn
		rest bool
	)
	if m.tls == nil {
		br := bufio.NewReaderSize(c, len(http2Preface))
		head, err := br.Peek(len(http2Preface))
		if err != nil && len(head) == 0 {
			c.Close()
			return
		}
		rest = !bytes.Equal(head, http2Preface)
		out = &peekedConn{Conn: c, r: br}
	} else {
		cfg := m.tls.Clone()
		cfg.GetConfigForClient = func(hello *tls.ClientHelloInfo) (*tls.Config, error) {
			// gRPC clients must offer h2 and offer nothing else; a
			// client without ALPN speaks HTTP/1.1.
			rest = !slices.Equal(hello.SupportedProtos, []string{"h2"})
			return nil, nil
		}
		cfg.NextProtos = []string{"h2", "http/1.1"}
		tc := tls.Server(c, cfg)
		ctx, cancel := context.WithTimeout(context.Background(), handshakeTimeout)
		err := tc.HandshakeContext(ctx)
		cancel()
		if err != nil {
			c.Close()
			return
		}
		if rest {
			out = tc
		} else {
			out = &tlsDoneConn{Conn: tc}
		}
	}
	_ = c.SetDeadline(time.Time{})
	to := m.grpc
	if rest {
		to = m.rest
	} else {
		out = m.sent.wrap(out)
	}
	if !to.put(out) {
		out.Close()
	}
}

// peekedConn replays the bytes read to choose the protocol.
type peekedConn struct {
	net.Conn
	r *bufio.Reader
}

func (p *peekedConn) Read(b []byte) (int, error) { return p.r.Read(b) }

// tlsDoneConn is a connection whose TLS handshake the mux has done; the
// gRPC server's credentials (tlsDone) pass it through with its state, so
// that authentication sees the client's verified certificate as before.
type tlsDoneConn struct{ *tls.Conn }

func (t *tlsDoneConn) state() tls.ConnectionState { return t.Conn.ConnectionState() }

// tlsDone is the gRPC server's transport credentials behind the mux.
type tlsDone struct{}

func (tlsDone) ServerHandshake(c net.Conn) (net.Conn, credentials.AuthInfo, error) {
	var t *tlsDoneConn
	if sc, ok := c.(*sentConn); ok {
		t, _ = sc.Conn.(*tlsDoneConn)
	}
	if t == nil {
		c.Close()
		return nil, nil, errors.New("connection did not come through the TLS mux")
	}
	return c, credentials.TLSInfo{State: t.state(), CommonAuthInfo: credentials.CommonAuthInfo{SecurityLevel: credentials.PrivacyAndIntegrity}}, nil
}

func (tlsDone) ClientHandshake(context.Context, string, net.Conn) (net.Conn, credentials.AuthInfo, error) {
	return nil, nil, errors.New("tlsDone is server-side only")
}

func (tlsDone) Info() credentials.ProtocolInfo {
	return credentials.ProtocolInfo{SecurityProtocol: "tls", SecurityVersion: "1.3"}
}

func (t tlsDone) Clone() credentials.TransportCredentials { return t }

func (tlsDone) OverrideServerName(string) error { return nil }

// chanListener is a net.Listener fed by the mux.
type chanListener struct {
	addr   net.Addr
	conns  chan net.Conn
	done   chan struct{}
	closed sync.Once
}

func newChanListener(addr net.Addr) *chanListener {
	return &chanListener{addr: addr, conns: make(chan net.Conn), done: make(chan struct{})}
}

func (l *chanListener) put(c net.Conn) bool {
	select {
	case l.conns <- c:
		return true
	case <-l.done:
		return false
	}
}

func (l *chanListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *chanListener) close() { l.closed.Do(func() { close(l.done) }) }

func (l *chanListener) Close() error { l.close(); return nil }

func (l *chanListener) Addr() net.Addr { return l.addr }
