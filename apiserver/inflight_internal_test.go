package apiserver

import (
	"context"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kobune/kobune/apiserver/filters"
	"github.com/kobune/kobune/apiserver/request"
)

// TestInflightFilter: with 2 read and 1 write slots held by calls that
// have not returned, the next read and the next write are refused at
// once (ResourceExhausted: 429 with Retry-After over REST), the
// administrator is not, and a slot given back is taken again.
func TestInflightFilter(t *testing.T) {
	l := newInflight(2, 1, 0)
	user := request.WithUser(context.Background(), request.UserInfo{Name: "dev", Groups: []string{request.AllAuthenticated}})
	admin := request.WithUser(context.Background(), request.UserInfo{Name: "kubernetes-admin", Groups: []string{request.SystemPrivilegedGroup}})
	release := make(chan struct{})
	entered := make(chan struct{}, 3)
	held := func(context.Context, *filters.Call) (any, error) { entered <- struct{}{}; <-release; return nil, nil }
	done := func(context.Context, *filters.Call) (any, error) { return "ok", nil }
	errs := make(chan error, 3)
	for _, m := range []string{"Get", "List", "Create"} {
		go func() { _, err := l.filter(user, &filters.Call{Method: m}, held); errs <- err }()
	}
	for range 3 {
		<-entered
	}
	for _, m := range []string{"Get", "Patch"} {
		if _, err := l.filter(user, &filters.Call{Method: m}, done); status.Code(err) != codes.ResourceExhausted {
			t.Errorf("%s with its slots full: %v; want ResourceExhausted", m, err)
		}
	}
	if out, err := l.filter(admin, &filters.Call{Method: "Get"}, done); err != nil || out != "ok" {
		t.Errorf("system:masters with the slots full: %v %v; want let through", out, err)
	}
	if out, err := l.filter(user, &filters.Call{Method: "Watch", Streaming: true}, done); err != nil || out != "ok" {
		t.Errorf("a watch with the read slots full: %v %v; want let through (watches are counted per user)", out, err)
	}
	close(release)
	for range 3 {
		if err := <-errs; err != nil {
			t.Errorf("a held call: %v", err)
		}
	}
	if out, err := l.filter(user, &filters.Call{Method: "Get"}, done); err != nil || out != "ok" {
		t.Errorf("a read once the slots are free: %v %v", out, err)
	}
}

// TestRequestTimeout (issue #35): a call that is not long-running runs
// under a deadline of --request-timeout: work that outlives it is told to
// stop (its context ends) and the call answers DeadlineExceeded, which
// REST sends as 504 Timeout naming the flag, as kube-apiserver's; a
// stream (watch, logs, exec) gets no deadline.
func TestRequestTimeout(t *testing.T) {
	s := &Server{cfg: Config{RequestTimeout: 50 * time.Millisecond}}
	slow := func(ctx context.Context, _ *filters.Call) (any, error) {
		if _, ok := ctx.Deadline(); !ok {
			return "no deadline", nil
		}
		<-ctx.Done() // the registry stops when its context ends
		return nil, ctx.Err()
	}
	_, err := s.timeoutFilter(context.Background(), &filters.Call{Method: "List"}, slow)
	if status.Code(err) != codes.DeadlineExceeded || !strings.Contains(err.Error(), "--request-timeout") {
		t.Fatalf("a list that outlives the request timeout: %v, want DeadlineExceeded naming --request-timeout", err)
	}
	resp, err := s.timeoutFilter(context.Background(), &filters.Call{Method: "Watch", Streaming: true}, slow)
	if err != nil || resp != "no deadline" {
		t.Fatalf("a watch: %v %v, want it to run without a deadline", resp, err)
	}
}
