package apiserver

import (
	"context"
	"errors"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kobune/kobune/apiserver/admission"
	"github.com/kobune/kobune/apiserver/filters"
	"github.com/kobune/kobune/apiserver/request"
	"github.com/kobune/kobune/proto/apipb"
)

// handlerChain is the steps every request to the resource API passes
// before the registry, the same for REST and gRPC, built once in New
// (kube-apiserver's DefaultBuildHandlerChain). Admission comes after:
// inside the registry's writes, once the object is decoded
// (admissionchain.go). docs/architecture.md shows this list; a test holds
// the two equal.
func (s *Server) handlerChain() *filters.Chain {
	return filters.New(
		filters.Filter{Name: "metrics", Run: s.metrics.filter,
			Reason: "outermost: it counts and times every request, the refused ones too"},
		filters.Filter{Name: "authentication", Run: s.authenticationFilter,
			Reason: "who is asking (certificate, token, impersonation): every later step reads the user"},
		filters.Filter{Name: "audit", Run: s.auditFilter,
			Reason: "after authentication, so that the log names the user; before authorization, so that refusals are logged too"},
		filters.Filter{Name: "timeout", Run: s.timeoutFilter,
			Reason: "after audit (a timeout is logged), before the queues (the wait counts): a request that is not long-running ends after --request-timeout with 504 (kube-apiserver's WithRequestDeadline)"},
		filters.Filter{Name: "inflight", Run: s.inflight().filter,
			Reason: "after authentication (system:masters is exempt) and audit (a refusal is logged): one user's watches bounded; with Priority and Fairness off, at most so many reads and writes at once, 429 beyond (kube-apiserver's max-in-flight filter)"},
		filters.Filter{Name: "flowcontrol", Run: s.priorityAndFairness,
			Reason: "after authentication (it classifies by user): each request waits for a seat of its priority level in its flow's queue, 429 when the queue is full (kube-apiserver's APF filter)"},
		filters.Filter{Name: "authorization", Run: s.authorizationFilter,
			Reason: "may this user do this verb on this resource (RBAC, Node): last, so nothing refused reaches the registry"},
	)
}

// HandlerChain names the chain's filters in their order (for the test that
// holds docs/architecture.md to it).
func (s *Server) HandlerChain() []string { return s.chain.Names() }

// authenticationFilter puts the caller's user into the context, or
// refuses the call (Unauthenticated, HTTP 401).
func (s *Server) authenticationFilter(ctx context.Context, c *filters.Call, next filters.Handler) (any, error) {
	if request.Authenticated(ctx) {
		return next(ctx, c) // the REST front end did, before it read the body
	}
	ctx, err := s.authn.Authenticate(ctx)
	if err != nil {
		return nil, err
	}
	return next(ctx, c)
}

// timeoutFilter gives a request that is not long-running a deadline of
// --request-timeout: the context that every later step and the registry
// (down to etcd) run under ends then, and the call answers
// DeadlineExceeded (HTTP 504), as kube-apiserver's "Timeout: request did
// not complete within the allotted timeout".
func (s *Server) timeoutFilter(ctx context.Context, c *filters.Call, next filters.Handler) (any, error) {
	if c.Streaming || s.cfg.RequestTimeout <= 0 {
		return next(ctx, c)
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.RequestTimeout)
	defer cancel()
	resp, err := next(ctx, c)
	if err != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return nil, status.Errorf(codes.DeadlineExceeded, "Timeout: request did not complete within the allotted timeout of %s (--request-timeout)", s.cfg.RequestTimeout)
	}
	return resp, err
}

// authorizationFilter asks the authorizer (authorization.go) about the
// call's attributes; a refusal is PermissionDenied (HTTP 403) naming
// what was refused to whom.
func (s *Server) authorizationFilter(ctx context.Context, c *filters.Call, next filters.Handler) (any, error) {
	if err := s.authz.Authorize(ctx, c.Method, c.Request); err != nil {
		return nil, err
	}
	return next(ctx, c)
}

// auditFilter records the call in the audit log (when one is
// configured): a request-response call once it is answered, with the
// response's code and object and the annotations admission added; a
// stream when it starts (Kubernetes' ResponseStarted stage), or with its
// refusal when a later filter refused it.
func (s *Server) auditFilter(ctx context.Context, c *filters.Call, next filters.Handler) (any, error) {
	if s.audit == nil {
		return next(ctx, c)
	}
	received := time.Now()
	if c.Streaming {
		started := false
		asked := ctx
		resp, err := next(filters.WhenReached(ctx, func() {
			started = true
			r := auditRequest(asked, c.Method, c.Request, received)
			r.Code, r.Streaming = 200, true
			s.audit.Record(r)
		}), c)
		if !started {
			r := auditRequest(asked, c.Method, c.Request, received)
			r.Code, r.Message = httpCode(err, r.Verb)
			s.audit.Record(r)
		}
		return resp, err
	}
	ctx, annotations := admission.WithAnnotations(ctx)
	resp, err := next(ctx, c)
	r := auditRequest(ctx, c.Method, c.Request, received)
	if len(annotations) > 0 {
		r.Annotations = annotations
	}
	if o, ok := resp.(*apipb.ObjectResponse); ok && o != nil && err == nil {
		r.ResponseObject = o.Object
	}
	r.Code, r.Message = httpCode(err, r.Verb)
	s.audit.Record(r)
	return resp, err
}
