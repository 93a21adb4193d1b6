package rest

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/moby/spdystream"
	"google.golang.org/grpc/status"

	"github.com/kobune/kobune/proto/apipb"
)

// maxPendingForwards bounds the stream pairs a client has opened half of:
// a client that opens error streams and never their data streams (or the
// reverse) cannot make the API server hold more.
const maxPendingForwards = 64

// forwardPair is one forwarded connection: kubectl opens an error stream
// and a data stream with the same requestID.
type forwardPair struct {
	data, errs *spdystream.Stream
}

// servePortForward runs one port-forward session (SPDY, as moby/spdystream
// implements it, the library kubectl's side uses too): every complete pair
// of streams becomes one PodPortForward stream to the pod's node.
func (s *connector) servePortForward(ctx context.Context, conn net.Conn, t *restTarget, allowed []int32) {
	sc, err := spdystream.NewConnection(conn, true)
	if err != nil {
		return
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		mu      sync.Mutex
		pending = map[string]*forwardPair{}
		wg      sync.WaitGroup
	)
	go sc.Serve(func(st *spdystream.Stream) {
		h := st.Headers()
		id := h.Get("requestID")
		mu.Lock()
		p := pending[id]
		if p == nil {
			if len(pending) >= maxPendingForwards {
				mu.Unlock()
				_ = st.Reset()
				return
			}
			p = &forwardPair{}
			pending[id] = p
		}
		switch h.Get("streamType") {
		case "data":
			p.data = st
		case "error":
			p.errs = st
		default:
			mu.Unlock()
			_ = st.Reset()
			return
		}
		complete := p.data != nil && p.errs != nil
		if complete {
			delete(pending, id)
		}
		mu.Unlock()
		_ = st.SendReply(http.Header{}, false)
		if complete {
			wg.Add(1)
			go func() {
				defer wg.Done()
				s.forwardOne(ctx, t, p, allowed)
			}()
		}
	})
	select {
	case <-sc.CloseChan():
	case <-ctx.Done():
	}
	cancel()
	_ = sc.Close()
	wg.Wait()
}

// forwardOne carries one connection: the data stream to and from the pod's
// port, and what went wrong, if anything, on the error stream (kubectl
// prints it).
func (s *connector) forwardOne(ctx context.Context, t *restTarget, p *forwardPair, allowed []int32) {
	defer p.errs.Close()
	defer p.data.Close()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() { // a session that ends takes its connections with it
		<-ctx.Done()
		_ = p.data.Reset()
	}()
	portHeader := p.data.Headers().Get("port")
	port, err := strconv.Atoi(portHeader)
	if err != nil || port < 1 || port > 65535 {
		fmt.Fprintf(p.errs, "invalid port %q: must be a number between 1 and 65535", portHeader)
		return
	}
	if len(allowed) > 0 && !slices.Contains(allowed, int32(port)) {
		fmt.Fprintf(p.errs, "port %d is not among the ports this request named (%v)", port, allowed)
		return
	}
	buf := make([]byte, 32<<10)
	closed := false
	recv := func() (*apipb.PodPortForwardData, error) {
		if closed {
			<-ctx.Done()
			return nil, io.EOF
		}
		n, err := p.data.Read(buf)
		out := &apipb.PodPortForwardData{Data: append([]byte(nil), buf[:n]...)}
		if err == io.EOF {
			out.Closed, closed = true, true
			return out, nil
		}
		if err != nil && n == 0 {
			return nil, err
		}
		return out, nil
	}
	send := func(out *apipb.PodPortForwardData) error {
		if len(out.Data) > 0 {
			if _, err := p.data.Write(out.Data); err != nil {
				return err
			}
		}
		if out.Closed {
			return p.data.Close() // a half close: the client may still send
		}
		return nil
	}
	// The session passed the handler chain as a whole (restPortForward);
	// each of its connections is the registry's PodPortForward.
	first := &apipb.PodPortForwardData{Namespace: t.namespace, Name: t.name, Port: int32(port)}
	err = s.proxy.PodPortForward(ctx, first, restDuplex[apipb.PodPortForwardData, apipb.PodPortForwardData]{
		restSender: restSender[apipb.PodPortForwardData]{send: send}, recv: recv})
	if err != nil && ctx.Err() == nil {
		msg := status.Convert(err).Message()
		if !strings.HasPrefix(msg, "error forwarding port") { // the agent's own errors say it already
			msg = fmt.Sprintf("error forwarding port %d to pod %s: %s", port, t.name, msg)
		}
		fmt.Fprint(p.errs, msg)
	}
}
