package rest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/kobune/kobune/apiserver/apierrors"
	"github.com/kobune/kobune/apiserver/filters"
	"github.com/kobune/kobune/apiserver/nodeproxy"
	"github.com/kobune/kobune/proto/apipb"
)

// The connect subresources over REST: pods/exec and pods/portforward, the
// streams kubectl exec, cp and port-forward open. kubectl (since 1.30)
// asks for a WebSocket first:
//
//   - exec speaks the channel protocol v5.channel.k8s.io (or v4, or the
//     first version, channel.k8s.io, which the conformance tests use): every
//     binary message starts with its channel, 0 stdin, 1 stdout, 2 stderr,
//     3 the final Status, 4 terminal sizes as JSON; in v5, [255, channel]
//     says the sender closed that channel (stdin's end of file).
//   - port-forward speaks SPDY/3.1 inside the WebSocket's binary messages
//     (SPDY/3.1+portforward.k8s.io), or, when a client asks for it, over
//     the upgraded HTTP/1.1 connection itself (Upgrade: SPDY/3.1): each
//     connection is a pair of SPDY streams, data and error, named by a
//     requestID and carrying the port in their headers.
//
// SPDY for exec (what kubectl before 1.30 used) is not served: the answer
// says to use a kubectl of 1.30 or later. A session passes the handler
// chain once, before the upgrade (a refusal is an HTTP answer: 401, 403,
// 404), and then runs the registry's verb Kobune's own gRPC clients reach
// too (PodExec, PodAttach, PodPortForward).

// Channel protocol (remotecommand) constants.
const (
	channelV5 = "v5.channel.k8s.io"
	channelV4 = "v4.channel.k8s.io"
	// channelV1 is the first version, which Kubernetes' conformance tests
	// still speak: the same channels, and the error channel carries only
	// a failure's message, as text (nothing when the command succeeded).
	channelV1 = "channel.k8s.io"

	chanStdin, chanStdout, chanStderr, chanError, chanResize, chanClose = 0, 1, 2, 3, 4, 255

	// maxStreamMessage bounds one WebSocket message a client sends.
	maxStreamMessage = 1 << 20
	// streamWriteTimeout is how long a write may wait for a client that
	// does not read, before the session is dropped.
	streamWriteTimeout = time.Minute
)

// websocketUpgrader accepts WebSockets from non-browser clients (no
// Origin header), from pages of the API server's own origin, and from
// Origin http://localhost, which Go's golang.org/x/net/websocket client
// (Kubernetes' conformance suite among its users) sends whatever it dials
// — so that a page of another site cannot open an exec session with a
// browser's credentials (its client certificate).
var websocketUpgrader = websocket.Upgrader{ReadBufferSize: 32 << 10, WriteBufferSize: 32 << 10, CheckOrigin: checkOrigin}

func checkOrigin(r *http.Request) bool {
	origin := r.Header.Get("Origin")
	if origin == "" {
		return true
	}
	u, err := url.Parse(origin)
	if err != nil {
		return false
	}
	return strings.EqualFold(u.Host, r.Host) || u.Hostname() == "localhost" || u.Hostname() == "127.0.0.1" || u.Hostname() == "::1"
}

// connect runs a connect verb's session through the handler chain: once
// the caller is let through and the pod has a node, session upgrades the
// connection and serves it. A refusal before the upgrade is the HTTP
// answer, as on Kubernetes, rather than a message inside the stream;
// session says whether it upgraded (after that, it has told the client
// itself).
//
// admit is the session's admission (a CONNECT request, judged once for
// the whole session before the upgrade); the session's proxy calls are
// not judged again.
func (s *connector) connect(ctx context.Context, w http.ResponseWriter, t *restTarget, method string, first proto.Message,
	admit func(ctx context.Context) error, session func(ctx context.Context) (upgraded bool, err error)) {
	upgraded := false
	err := filters.Stream(ctx, s.chain, method, first, func(ctx context.Context) error {
		if err := admit(ctx); err != nil {
			return err
		}
		if _, _, err := s.proxy.PodNode(ctx, t.namespace, t.name); err != nil {
			return err
		}
		var err error
		upgraded, err = session(nodeproxy.Admitted(ctx))
		return err
	})
	if err != nil && !upgraded {
		writeError(w, err, t)
	}
}

func isWebSocket(r *http.Request) bool {
	return strings.EqualFold(r.Header.Get("Upgrade"), "websocket")
}

// streamFlags reads the stdin, stdout, stderr and tty query parameters of
// exec and attach, with kube-apiserver's refusals.
func streamFlags(q url.Values) (stdin, stdout, stderr, tty bool, err error) {
	var opts [4]bool
	for i, name := range []string{"stdin", "stdout", "stderr", "tty"} {
		switch v := q.Get(name); v {
		case "", "false", "0":
		case "true", "1":
			opts[i] = true
		default:
			return false, false, false, false, apierrors.Invalid("%s: Invalid value: %q: must be true or false", name, v)
		}
	}
	stdin, stdout, stderr, tty = opts[0], opts[1], opts[2], opts[3]
	switch {
	case !stdin && !stdout && !stderr:
		err = statusWithCode(http.StatusBadRequest, "BadRequest", "you must specify at least 1 of stdin, stdout, stderr")
	case tty && stderr:
		err = statusWithCode(http.StatusBadRequest, "BadRequest", "stderr cannot be used with tty: the terminal carries both outputs on stdout")
	}
	return stdin, stdout, stderr, tty, err
}

// channelSession is an upgraded exec or attach connection speaking the
// channel protocol.
type channelSession struct {
	conn *websocket.Conn
	v5   bool
	v1   bool
}

// write sends one message on a channel; a client that does not read for
// streamWriteTimeout loses the session.
func (c *channelSession) write(channel byte, data []byte) error {
	_ = c.conn.SetWriteDeadline(time.Now().Add(streamWriteTimeout))
	return c.conn.WriteMessage(websocket.BinaryMessage, append([]byte{channel}, data...))
}

// end sends the session's final Status on the error channel and closes
// the WebSocket.
func (c *channelSession) end(st []byte) {
	if c.v1 { // a failure's message as text; nothing on success
		var full restStatus
		if json.Unmarshal(st, &full) == nil && full.Status != "Success" {
			_ = c.write(chanError, []byte(full.Message))
		}
	} else {
		_ = c.write(chanError, st)
	}
	_ = c.conn.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""), time.Now().Add(time.Second))
	c.conn.Close()
}

// upgradeChannels checks that the request asks for the channel protocol
// over WebSocket, and upgrades. A nil session with errUpgradeAnswered:
// the upgrader has answered the client; with another error: nothing was
// answered yet.
func upgradeChannels(w http.ResponseWriter, r *http.Request, t *restTarget) (*channelSession, error) {
	if !isWebSocket(r) {
		return nil, statusWithCode(http.StatusBadRequest, "BadRequest",
			"kobune serves pods/"+t.sub+" over WebSocket ("+channelV5+", "+channelV4+"), not SPDY: use kubectl 1.30 or later, or kobectl "+t.sub)
	}
	protos := websocket.Subprotocols(r)
	if !slices.Contains(protos, channelV5) && !slices.Contains(protos, channelV4) && !slices.Contains(protos, channelV1) {
		return nil, statusWithCode(http.StatusBadRequest, "BadRequest",
			fmt.Sprintf("no supported stream protocol among %q: kobune speaks %s, %s and %s", protos, channelV5, channelV4, channelV1))
	}
	up := websocketUpgrader
	up.Subprotocols = []string{channelV5, channelV4, channelV1}
	conn, err := up.Upgrade(w, r, nil)
	if err != nil {
		return nil, errUpgradeAnswered
	}
	conn.SetReadLimit(maxStreamMessage)
	return &channelSession{conn: conn, v5: conn.Subprotocol() == channelV5, v1: conn.Subprotocol() == channelV1}, nil
}

// errUpgradeAnswered: a WebSocket upgrade failed and the upgrader has
// told the client why.
var errUpgradeAnswered = errors.New("the WebSocket upgrade failed")

// restExec serves pods/exec.
func (s *connector) restExec(ctx context.Context, w http.ResponseWriter, r *http.Request, t *restTarget) {
	q := r.URL.Query()
	if len(q["command"]) == 0 {
		writeError(w, statusWithCode(http.StatusBadRequest, "BadRequest", "you must specify at least one command for the container"), t)
		return
	}
	stdin, stdout, stderr, tty, err := streamFlags(q)
	if err != nil {
		writeError(w, err, t)
		return
	}
	first := &apipb.PodExecInput{Namespace: t.namespace, Name: t.name, Container: q.Get("container"), Command: q["command"], Stdin: stdin, Tty: tty}
	admit := func(ctx context.Context) error { return s.proxy.AdmitExec(ctx, first, stdout, stderr) }
	s.connect(ctx, w, t, "PodExec", first, admit, func(ctx context.Context) (bool, error) {
		cs, err := upgradeChannels(w, r, t)
		if err != nil {
			return errors.Is(err, errUpgradeAnswered), err
		}
		return true, s.execSession(ctx, cs, first, stdout, stderr)
	})
}

// execSession runs an exec over an upgraded connection: the client's
// stdin, its end and terminal sizes go to the registry's PodExec, the
// command's output comes back on the stdout and stderr channels, and its
// exit status ends the session.
func (s *connector) execSession(ctx context.Context, cs *channelSession, first *apipb.PodExecInput, stdout, stderr bool) error {
	inputs := make(chan *apipb.PodExecInput)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go cs.readExecInput(ctx, first.Stdin, inputs)
	recv := func() (*apipb.PodExecInput, error) {
		in, ok := <-inputs
		if !ok {
			return nil, io.EOF
		}
		return in, nil
	}
	exitCode, exited := 0, false
	send := func(out *apipb.PodExecOutput) error {
		if len(out.Stdout) > 0 && stdout {
			if err := cs.write(chanStdout, out.Stdout); err != nil {
				return err
			}
		}
		if len(out.Stderr) > 0 && stderr {
			if err := cs.write(chanStderr, out.Stderr); err != nil {
				return err
			}
		}
		if out.Exited {
			exitCode, exited = int(out.ExitCode), true
		}
		return nil
	}
	err := s.proxy.PodExec(ctx, first, restDuplex[apipb.PodExecInput, apipb.PodExecOutput]{restSender: restSender[apipb.PodExecOutput]{send: send}, recv: recv})
	cs.end(execStatus(first.Command, exited, exitCode, err))
	return err
}

// readExecInput turns what the client sends into exec input: stdin (when
// the session has it), its end, terminal sizes. It closes inputs when the
// client goes.
func (c *channelSession) readExecInput(ctx context.Context, stdin bool, inputs chan<- *apipb.PodExecInput) {
	defer close(inputs)
	for {
		mt, msg, err := c.conn.ReadMessage()
		if err != nil {
			return
		}
		if mt != websocket.BinaryMessage || len(msg) == 0 {
			continue
		}
		var in *apipb.PodExecInput
		switch msg[0] {
		case chanStdin:
			if stdin && len(msg) > 1 {
				in = &apipb.PodExecInput{StdinData: msg[1:]}
			}
		case chanResize:
			var sz struct{ Width, Height uint32 }
			if json.Unmarshal(msg[1:], &sz) == nil && sz.Width > 0 && sz.Height > 0 {
				in = &apipb.PodExecInput{Width: sz.Width, Height: sz.Height}
			}
		case chanClose:
			if c.v5 && len(msg) == 2 && msg[1] == chanStdin {
				in = &apipb.PodExecInput{StdinClosed: true}
			}
		}
		if in == nil {
			continue
		}
		select {
		case inputs <- in:
		case <-ctx.Done():
			return
		}
	}
}

// restAttach serves pods/attach: what the container writes from now on,
// on the stdout channel (the log merges both outputs), until it exits or
// the client goes. Input is refused before the upgrade: Kobune starts
// containers without stdin or a terminal.
func (s *connector) restAttach(ctx context.Context, w http.ResponseWriter, r *http.Request, t *restTarget) {
	q := r.URL.Query()
	stdin, stdout, stderr, tty, err := streamFlags(q)
	if err != nil {
		writeError(w, err, t)
		return
	}
	// Input is refused by AdmitAttach, after the admission webhooks had
	// their say (a webhook's denial is what the client reads).
	req := &apipb.PodAttachRequest{Namespace: t.namespace, Name: t.name, Container: q.Get("container"), Stdin: stdin, Tty: tty}
	admit := func(ctx context.Context) error { return s.proxy.AdmitAttach(ctx, req, stdout, stderr) }
	channel := byte(chanStdout)
	if !stdout && stderr {
		channel = chanStderr
	}
	s.connect(ctx, w, t, "PodAttach", req, admit, func(ctx context.Context) (bool, error) {
		cs, err := upgradeChannels(w, r, t)
		if err != nil {
			return errors.Is(err, errUpgradeAnswered), err
		}
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		go func() { // the client's input is ignored; its going away ends the session
			defer cancel()
			for {
				if _, _, err := cs.conn.ReadMessage(); err != nil {
					return
				}
			}
		}()
		send := func(m *apipb.LogChunk) error { return cs.write(channel, m.Data) }
		err = s.proxy.PodAttach(ctx, req, restSender[apipb.LogChunk]{send: send})
		st := []byte(`{"metadata":{},"status":"Success"}`)
		if err != nil && ctx.Err() == nil {
			full := toStatus(err, nil)
			full.Kind, full.APIVersion = "", ""
			st, _ = json.Marshal(full)
		}
		cs.end(st)
		return true, err
	})
}

// execStatus is the Status the error channel ends a session with: Success,
// NonZeroExitCode with the code as its ExitCode cause (kubectl exits with
// it), or the error that ended the session.
func execStatus(command []string, exited bool, code int, err error) []byte {
	switch {
	case err == nil && exited && code == 0:
		return []byte(`{"metadata":{},"status":"Success"}`)
	case err == nil && exited:
		st := restStatus{Status: "Failure", Reason: "NonZeroExitCode",
			Message: fmt.Sprintf("command terminated with non-zero exit code: error executing command %q, exit code %d", command, code),
			Details: &statusDetails{Causes: []statusCause{{Type: "ExitCode", Message: strconv.Itoa(code)}}}}
		b, _ := json.Marshal(st)
		return b
	case err == nil:
		err = status.Error(codes.Unavailable, "the exec session ended before the command's exit status arrived")
	}
	st := toStatus(err, nil)
	st.Kind, st.APIVersion = "", ""
	b, _ := json.Marshal(st)
	return b
}

// restPortForward serves pods/portforward.
func (s *connector) restPortForward(ctx context.Context, w http.ResponseWriter, r *http.Request, t *restTarget) {
	var allowed []int32 // the ports query parameter, when given, limits the streams
	for _, list := range r.URL.Query()["ports"] {
		for _, p := range strings.Split(list, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(p))
			if err != nil || n < 1 || n > 65535 {
				writeError(w, apierrors.Invalid("ports: Invalid value: %q: must be port numbers between 1 and 65535", list), t)
				return
			}
			allowed = append(allowed, int32(n))
		}
	}
	first := &apipb.PodPortForwardData{Namespace: t.namespace, Name: t.name}
	admit := func(ctx context.Context) error { return s.proxy.AdmitPortForward(ctx, t.namespace, t.name, allowed) }
	s.connect(ctx, w, t, "PodPortForward", first, admit, func(ctx context.Context) (bool, error) {
		return s.portForwardSession(ctx, w, r, t, allowed)
	})
}

// portForwardSession upgrades a port-forward request (SPDY, tunneled in a
// WebSocket or over the HTTP/1.1 connection itself) and serves its
// connections.
func (s *connector) portForwardSession(ctx context.Context, w http.ResponseWriter, r *http.Request, t *restTarget, allowed []int32) (upgraded bool, err error) {
	spdyUpgrade := strings.EqualFold(r.Header.Get("Upgrade"), "SPDY/3.1")
	wantsPF := slices.ContainsFunc(r.Header.Values("X-Stream-Protocol-Version"), func(v string) bool { return v == portForwardV1 })
	tunnel := isWebSocket(r) && slices.Contains(websocket.Subprotocols(r), "SPDY/3.1+"+portForwardV1)
	if !tunnel && !(spdyUpgrade && wantsPF) {
		return false, statusWithCode(http.StatusBadRequest, "BadRequest",
			"pods/portforward needs an upgrade to SPDY/3.1+"+portForwardV1+" over WebSocket, or to SPDY/3.1 with X-Stream-Protocol-Version: "+portForwardV1+" (kubectl port-forward does either)")
	}
	var conn net.Conn
	if tunnel {
		up := websocketUpgrader
		up.Subprotocols = []string{"SPDY/3.1+" + portForwardV1}
		ws, err := up.Upgrade(w, r, nil)
		if err != nil {
			return true, err // the upgrader has answered
		}
		ws.SetReadLimit(maxStreamMessage)
		conn = &websocketConn{ws: ws}
	} else {
		hj, ok := w.(http.Hijacker)
		if !ok {
			return false, statusWithCode(http.StatusBadRequest, "BadRequest", "SPDY needs HTTP/1.1; this connection is HTTP/2: use the WebSocket upgrade")
		}
		w.Header().Set("Connection", "Upgrade")
		w.Header().Set("Upgrade", "SPDY/3.1")
		w.Header().Set("X-Stream-Protocol-Version", portForwardV1)
		w.WriteHeader(http.StatusSwitchingProtocols)
		c, buf, err := hj.Hijack()
		if err != nil {
			return true, err // the 101 is out: nothing more to say
		}
		if buf.Reader.Buffered() > 0 { // what the client sent after its request
			conn = &prefixedConn{Conn: c, r: io.MultiReader(io.LimitReader(buf.Reader, int64(buf.Reader.Buffered())), c)}
		} else {
			conn = c
		}
	}
	defer conn.Close()
	s.servePortForward(ctx, conn, t, allowed)
	return true, nil
}

const portForwardV1 = "portforward.k8s.io"

// websocketConn is a WebSocket as a byte stream (each write one binary
// message), for SPDY tunneled over it.
type websocketConn struct {
	ws  *websocket.Conn
	mu  sync.Mutex // one writer at a time
	cur io.Reader
}

func (c *websocketConn) Read(p []byte) (int, error) {
	for {
		if c.cur == nil {
			mt, r, err := c.ws.NextReader()
			if err != nil {
				var ce *websocket.CloseError
				if errors.As(err, &ce) && ce.Code == websocket.CloseNormalClosure {
					return 0, io.EOF
				}
				return 0, err
			}
			if mt != websocket.BinaryMessage {
				return 0, errors.New("port-forward tunnel: a text message where SPDY frames were expected")
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

func (c *websocketConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	_ = c.ws.SetWriteDeadline(time.Now().Add(streamWriteTimeout))
	if err := c.ws.WriteMessage(websocket.BinaryMessage, p); err != nil {
		return 0, err
	}
	return len(p), nil
}

func (c *websocketConn) Close() error {
	_ = c.ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""), time.Now().Add(time.Second))
	return c.ws.Close()
}
func (c *websocketConn) LocalAddr() net.Addr                { return c.ws.LocalAddr() }
func (c *websocketConn) RemoteAddr() net.Addr               { return c.ws.RemoteAddr() }
func (c *websocketConn) SetDeadline(t time.Time) error      { return c.ws.NetConn().SetDeadline(t) }
func (c *websocketConn) SetReadDeadline(t time.Time) error  { return c.ws.SetReadDeadline(t) }
func (c *websocketConn) SetWriteDeadline(t time.Time) error { return c.ws.SetWriteDeadline(t) }

// prefixedConn reads what the HTTP server had buffered first.
type prefixedConn struct {
	net.Conn
	r io.Reader
}

func (c *prefixedConn) Read(p []byte) (int, error) { return c.r.Read(p) }
