// Package filters is the API server's handler chain: the steps every
// request to the resource API passes before it reaches the registry, in
// one ordered list built once and used by both front ends (REST and
// gRPC). It mirrors kube-apiserver's DefaultBuildHandlerChain
// (k8s.io/apiserver/pkg/server/filters and pkg/endpoints/filters), where
// a request is authenticated, audited and authorized by wrapping
// handlers, the outermost first.
//
// A front end turns what it received (a URL and a body, or a gRPC
// message) into a Call, and hands the chain the registry's function to run
// once every filter has let it through: the front end calls the registry
// itself, so a reader follows a request from its URL to etcd by
// go-to-definition. Admission is not a filter: as in kube-apiserver it
// runs inside the registry's writes, after the object is decoded.
package filters

import (
	"context"
	"strings"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"
)

// Call is one request as the filters see it.
type Call struct {
	// Method names the verb: the RPC's name (Get, List, Watch, Create,
	// UpdateStatus, PodExec ...); a REST request carries the name of the
	// verb its URL and method map to.
	Method string
	// Request is the request message (for a stream, its first message),
	// which says what is asked: resource, namespace, name, object.
	Request proto.Message
	// Streaming is set for watches, logs, exec, attach and port-forward:
	// the call lasts as long as its stream.
	Streaming bool
}

// Handler runs a call: a filter's next step, or at the end the registry.
// A streaming call's handler returns when its stream ends, with a nil
// response.
type Handler func(ctx context.Context, c *Call) (any, error)

// Filter is one step of the chain.
type Filter struct {
	Name string
	// Reason is why the step stands where it does (the chain's table in
	// docs/architecture.md shows it).
	Reason string
	// Run does the step's work and calls next to go on, or returns
	// without calling it to refuse the call.
	Run func(ctx context.Context, c *Call, next Handler) (any, error)
}

// Chain is the filters in their order, the outermost first.
type Chain struct {
	filters []Filter
}

// New builds a chain from its filters, the first one outermost.
func New(filters ...Filter) *Chain {
	return &Chain{filters: filters}
}

// Names lists the filters in the order a call passes them.
func (ch *Chain) Names() []string {
	names := make([]string, len(ch.filters))
	for i, f := range ch.filters {
		names[i] = f.Name
	}
	return names
}

// Do runs the call through every filter and then the registry's handler
// h: the one place a request of either front end passes.
func (ch *Chain) Do(ctx context.Context, c *Call, h func(ctx context.Context) (any, error)) (any, error) {
	return ch.step(0, h)(ctx, c)
}

// step is the handler that runs filter i and, through its next, the
// rest; past the last filter it tells who asked (WhenReached) and runs h.
func (ch *Chain) step(i int, h func(ctx context.Context) (any, error)) Handler {
	if i == len(ch.filters) {
		return func(ctx context.Context, _ *Call) (any, error) {
			if f, ok := ctx.Value(reachedKey{}).(func()); ok {
				f()
			}
			return h(ctx)
		}
	}
	f, next := ch.filters[i], ch.step(i+1, h)
	return func(ctx context.Context, c *Call) (any, error) { return f.Run(ctx, c, next) }
}

type reachedKey struct{}

// WhenReached returns a context under which f runs once the call has
// passed every filter, just before the registry's handler: how a filter
// learns that a stream was let through (the audit log records a watch
// when it starts, not when it ends hours later).
func WhenReached(ctx context.Context, f func()) context.Context {
	if outer, ok := ctx.Value(reachedKey{}).(func()); ok {
		inner := f
		f = func() { outer(); inner() }
	}
	return context.WithValue(ctx, reachedKey{}, f)
}

// Unary runs a request-response verb through the chain: what both front
// ends call, with the registry's method as h.
func Unary[Req proto.Message, Resp any](ctx context.Context, ch *Chain, method string, req Req, h func(context.Context, Req) (Resp, error)) (Resp, error) {
	out, err := ch.Do(ctx, &Call{Method: method, Request: req}, func(ctx context.Context) (any, error) { return h(ctx, req) })
	resp, _ := out.(Resp)
	return resp, err
}

// Stream runs a streaming verb through the chain; h streams until the
// call ends.
func Stream(ctx context.Context, ch *Chain, method string, first proto.Message, h func(context.Context) error) error {
	_, err := ch.Do(ctx, &Call{Method: method, Request: first, Streaming: true}, func(ctx context.Context) (any, error) { return nil, h(ctx) })
	return err
}

type headerKey struct{}

// WithResponseHeaders returns a context under which SetHeader calls set:
// the REST front end passes its response's header (the gRPC front end
// needs nothing: SetHeader sends gRPC header metadata).
func WithResponseHeaders(ctx context.Context, set func(key, value string)) context.Context {
	return context.WithValue(ctx, headerKey{}, set)
}

// SetHeader adds a header to the call's response, such as the
// X-Kubernetes-PF-* headers that name how API Priority and Fairness
// classified it. It must be called before the response is sent.
func SetHeader(ctx context.Context, key, value string) {
	if set, ok := ctx.Value(headerKey{}).(func(string, string)); ok {
		set(key, value)
		return
	}
	_ = grpc.SetHeader(ctx, metadata.Pairs(strings.ToLower(key), value)) // not a gRPC call: nothing to set
}

type sentKey struct{}

// afterSent is what runs once a call's response has been sent.
type afterSent struct {
	mu   sync.Mutex
	fns  []func()
	sent bool
}

// WithAfterSent returns a context under which AfterSent defers work until
// sent is called: a front end that sends the response only after the
// chain has returned (gRPC marshals and writes it after its handler
// returns) calls sent once the response is written. The REST front end
// writes inside the chain and needs none.
func WithAfterSent(ctx context.Context) (_ context.Context, sent func()) {
	a := &afterSent{}
	return context.WithValue(ctx, sentKey{}, a), func() {
		a.mu.Lock()
		fns := a.fns
		a.fns, a.sent = nil, true
		a.mu.Unlock()
		for _, f := range fns {
			f()
		}
	}
}

// AfterSent runs f once the call's response has been sent, and reports
// whether it will; false (no front end hook, or already sent) leaves f to
// the caller, who runs it when its step returns. API Priority and Fairness
// holds a list's seats this way until its last byte has left, so that a
// client that reads slowly cannot start more lists than there are seats.
func AfterSent(ctx context.Context, f func()) bool {
	a, ok := ctx.Value(sentKey{}).(*afterSent)
	if !ok {
		return false
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.sent {
		return false
	}
	a.fns = append(a.fns, f)
	return true
}
