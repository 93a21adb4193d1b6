package apiserver

import (
	"context"
	"net"
	"sync"
	"sync/atomic"

	"google.golang.org/grpc/stats"

	"github.com/kobune/kobune/apiserver/filters"
)

// gRPC writes a response after the RPC's handler has returned, and it
// queues a whole message at once: a list of 20,000 objects is marshalled
// and waits in the connection's queue until the client's flow-control
// window lets it out, however slowly the client reads. Priority and
// Fairness holds a request's seats until its response has been sent
// (filters.AfterSent), so that what waits in those queues is bounded by
// the seats, as on REST, where a handler's write blocks until the client
// takes the bytes.
//
// grpc-go does not say when a message has left, so the server counts:
// each gRPC connection counts the bytes its responses put in the queue
// (stats.OutPayload) and the bytes written to the socket. A response is
// sent once the bytes written reach what had been queued up to and
// including it. Unsent bytes on a connection are then at most the sizes
// of the responses still holding seats (the ones released form a prefix
// of the queue's order); frame headers count as written, which lets a
// response go a few bytes early.

// sentConns are the gRPC connections by address pair, so that the stats
// handler (which is told a connection's addresses, not the connection)
// finds the counters.
type sentConns struct {
	mu    sync.Mutex
	conns map[string]*sentConn // nil: two connections with the same key
}

func newSentConns() *sentConns { return &sentConns{conns: map[string]*sentConn{}} }

func connKey(local, remote net.Addr) string {
	if local == nil || remote == nil {
		return ""
	}
	return local.String() + " " + remote.String()
}

// wrap counts c's writes and registers it.
func (r *sentConns) wrap(c net.Conn) *sentConn {
	sc := &sentConn{Conn: c, key: connKey(c.LocalAddr(), c.RemoteAddr()), r: r}
	r.mu.Lock()
	if _, dup := r.conns[sc.key]; dup {
		r.conns[sc.key] = nil
	} else {
		r.conns[sc.key] = sc
	}
	r.mu.Unlock()
	return sc
}

func (r *sentConns) find(local, remote net.Addr) *sentConn {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.conns[connKey(local, remote)]
}

// sentConn is a gRPC connection that counts what is queued and written.
type sentConn struct {
	net.Conn
	key     string
	r       *sentConns
	queued  atomic.Int64 // bytes of responses handed to the transport
	written atomic.Int64 // bytes written to the socket
	waiting atomic.Int32 // len(waiters), read without the lock on every write

	mu      sync.Mutex
	waiters []sentWaiter
	closed  bool
	once    sync.Once
}

// sentWaiter runs sent once written reaches mark.
type sentWaiter struct {
	mark int64
	sent func()
}

func (c *sentConn) Write(b []byte) (int, error) {
	n, err := c.Conn.Write(b)
	w := c.written.Add(int64(n))
	if c.waiting.Load() > 0 {
		c.fire(w, false)
	}
	return n, err
}

// fire runs the waiters whose responses are out (all of them when the
// connection is gone).
func (c *sentConn) fire(written int64, all bool) {
	c.mu.Lock()
	var due []func()
	kept := c.waiters[:0]
	for _, w := range c.waiters {
		if all || w.mark <= written {
			due = append(due, w.sent)
		} else {
			kept = append(kept, w)
		}
	}
	c.waiters = kept
	c.waiting.Store(int32(len(kept)))
	c.mu.Unlock()
	for _, f := range due {
		f()
	}
}

// after runs sent once the bytes queued up to mark are written.
func (c *sentConn) after(mark int64, sent func()) {
	c.mu.Lock()
	if c.closed || c.written.Load() >= mark {
		c.mu.Unlock()
		sent()
		return
	}
	c.waiters = append(c.waiters, sentWaiter{mark: mark, sent: sent})
	c.waiting.Store(int32(len(c.waiters)))
	c.mu.Unlock()
	// A write may have passed the mark between the check and the append.
	c.fire(c.written.Load(), false)
}

func (c *sentConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() {
		c.mu.Lock()
		c.closed = true
		c.mu.Unlock()
		c.fire(0, true)
		c.r.mu.Lock()
		if c.r.conns[c.key] == c {
			delete(c.r.conns, c.key)
		}
		c.r.mu.Unlock()
	})
	return err
}

// sentHandler is the gRPC server's stats handler that calls a call's
// filters.AfterSent work once its response has been written.
type sentHandler struct{ conns *sentConns }

type (
	sentConnKey struct{}
	sentRPCKey  struct{}
)

// sentRPC is one call's state: its release and the mark of its response.
type sentRPC struct {
	sent func()
	mark atomic.Int64
}

func (h sentHandler) TagConn(ctx context.Context, info *stats.ConnTagInfo) context.Context {
	if c := h.conns.find(info.LocalAddr, info.RemoteAddr); c != nil {
		return context.WithValue(ctx, sentConnKey{}, c)
	}
	return ctx
}

func (sentHandler) HandleConn(context.Context, stats.ConnStats) {}

func (sentHandler) TagRPC(ctx context.Context, _ *stats.RPCTagInfo) context.Context {
	ctx, sent := filters.WithAfterSent(ctx)
	return context.WithValue(ctx, sentRPCKey{}, &sentRPC{sent: sent})
}

func (sentHandler) HandleRPC(ctx context.Context, s stats.RPCStats) {
	rpc, ok := ctx.Value(sentRPCKey{}).(*sentRPC)
	if !ok {
		return
	}
	conn, _ := ctx.Value(sentConnKey{}).(*sentConn)
	switch s := s.(type) {
	case *stats.OutPayload:
		if conn != nil {
			rpc.mark.Store(conn.queued.Add(int64(s.WireLength)))
		}
	case *stats.End:
		if mark := rpc.mark.Load(); conn != nil && mark > 0 {
			conn.after(mark, rpc.sent)
			return
		}
		rpc.sent()
	}
}
