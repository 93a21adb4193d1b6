package apiserver

import (
	"context"
	"sync"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kobune/kobune/apiserver/authorization"
	"github.com/kobune/kobune/apiserver/filters"
	"github.com/kobune/kobune/apiserver/flowcontrol"
	"github.com/kobune/kobune/apiserver/request"
	"github.com/kobune/kobune/proto/apipb"
)

// inflight is the max-in-flight filter for this server's configuration:
// without Priority and Fairness the read and write limits, with it only
// the per-user watch limit.
func (s *Server) inflight() *inflight {
	if s.apf != nil {
		return newInflight(0, 0, s.cfg.MaxWatchesPerUser)
	}
	return newInflight(max(s.cfg.MaxRequestsInflight, 0), max(s.cfg.MaxMutatingRequestsInflight, 0), s.cfg.MaxWatchesPerUser)
}

// priorityAndFairness is API Priority and Fairness' filter: the call is
// classified by the FlowSchemas and waits for a seat of its priority level
// (apiserver/flowcontrol); the response names the schema and the level
// (X-Kubernetes-PF-FlowSchema-UID, X-Kubernetes-PF-PriorityLevel-UID), as
// kube-apiserver's do. A watch holds seats until it has sent its initial
// events; the other long-running calls (logs, exec, attach,
// port-forward) are classified but hold no seat. Open watches are
// bounded per user by the inflight filter.
func (s *Server) priorityAndFairness(ctx context.Context, c *filters.Call, next filters.Handler) (any, error) {
	if s.apf == nil {
		return next(ctx, c)
	}
	u := request.UserFrom(ctx)
	a, _ := authorization.AttributesOf(c.Method, c.Request)
	if c.Streaming && c.Method == "Watch" {
		// A watch holds seats while it sends its initial events (as many
		// as a list of them would), then none for as long as it stays open.
		width := 1
		if w, ok := c.Request.(*apipb.WatchRequest); ok && w.GetResourceVersion() == 0 {
			list := a
			list.Verb = "list"
			width = s.apf.Width(ctx, &list, 0)
		}
		d, done, err := s.apf.Admit(ctx, u, &a, width)
		pfHeaders(ctx, d)
		if err != nil {
			return nil, err
		}
		var once sync.Once
		release := func() { once.Do(done) }
		defer release()
		return next(request.WithInitialized(ctx, release), c)
	}
	if c.Streaming { // logs, exec, attach, port-forward: no seat
		if d, ok := s.apf.Classify(u, &a); ok {
			pfHeaders(ctx, d)
		}
		return next(ctx, c)
	}
	var limit int64
	if l, ok := c.Request.(*apipb.ListRequest); ok {
		limit = l.GetLimit()
	}
	d, done, err := s.apf.Admit(ctx, u, &a, s.apf.Width(ctx, &a, limit))
	pfHeaders(ctx, d)
	if err != nil {
		return nil, err
	}
	// The seats are held until the response has been sent (gRPC writes
	// it after this returns; REST inside the chain).
	if !filters.AfterSent(ctx, done) {
		defer done()
	}
	resp, err := next(ctx, c)
	if l, ok := resp.(*apipb.ListResponse); ok && l != nil {
		s.apf.Observe(a.Resource, len(l.Items))
	}
	return resp, err
}

// pfHeaders names the call's schema and level in its response.
func pfHeaders(ctx context.Context, d flowcontrol.Decision) {
	if d.FlowSchema == "" {
		return
	}
	filters.SetHeader(ctx, "X-Kubernetes-PF-FlowSchema-UID", d.FlowSchemaUID)
	filters.SetHeader(ctx, "X-Kubernetes-PF-PriorityLevel-UID", d.PriorityLevelUID)
}

// inflight bounds what clients can make the API server do at once. With
// API Priority and Fairness off (--enable-priority-and-fairness=false),
// it is kube-apiserver's --max-requests-inflight and
// --max-mutating-requests-inflight: at most so many reads and writes run
// at a time, and a call over the limit is refused at once with 429 and
// Retry-After, which clients retry; with it on (the default), those two
// numbers are the seats its priority levels share instead
// (priorityAndFairness below).
// Long-running calls (watches, logs, exec, attach, port-forward) are not
// counted there: a watch is bounded per user instead (MaxWatchesPerUser),
// so that one user's thousands of watches cannot take the server's memory.
// system:masters is exempt, as in Kubernetes, so that an administrator
// can always get in to see what is wrong.
type inflight struct {
	reads, writes chan struct{}
	maxWatches    int

	mu      sync.Mutex
	watches map[string]int // user → open watches
}

func newInflight(reads, writes, watchesPerUser int) *inflight {
	return &inflight{reads: make(chan struct{}, reads), writes: make(chan struct{}, writes), maxWatches: watchesPerUser, watches: map[string]int{}}
}

// mutating are the verbs counted against the writes' limit.
var mutating = map[string]bool{"Create": true, "Update": true, "UpdateStatus": true, "Patch": true, "Delete": true, "Bind": true}

// filter is the chain's step: after authentication (it reads the user),
// before authorization (a refused call costs one slot for a moment).
func (l *inflight) filter(ctx context.Context, c *filters.Call, next filters.Handler) (any, error) {
	u := request.UserFrom(ctx)
	if u.InGroup(request.SystemPrivilegedGroup) {
		return next(ctx, c)
	}
	if c.Streaming {
		if c.Method != "Watch" || l.maxWatches <= 0 {
			return next(ctx, c)
		}
		l.mu.Lock()
		if l.watches[u.Name] >= l.maxWatches {
			l.mu.Unlock()
			return nil, status.Errorf(codes.ResourceExhausted, "Too many requests: user %q has %d watches open, the most one user may (--max-watches-per-user); close some, or share them with an informer", u.Name, l.maxWatches)
		}
		l.watches[u.Name]++
		l.mu.Unlock()
		defer func() {
			l.mu.Lock()
			if l.watches[u.Name]--; l.watches[u.Name] <= 0 {
				delete(l.watches, u.Name)
			}
			l.mu.Unlock()
		}()
		return next(ctx, c)
	}
	slots, what, flag := l.reads, "read", "--max-requests-inflight"
	if mutating[c.Method] {
		slots, what, flag = l.writes, "write", "--max-mutating-requests-inflight"
	}
	if cap(slots) == 0 {
		return next(ctx, c)
	}
	select {
	case slots <- struct{}{}:
	default:
		return nil, status.Errorf(codes.ResourceExhausted, "Too many requests, please try again later: %d %s requests are in flight, the most the server takes at once (%s)", cap(slots), what, flag)
	}
	defer func() { <-slots }()
	return next(ctx, c)
}
