package apiserver

import (
	"context"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	"github.com/kobune/kobune/apiserver/admission"
	"github.com/kobune/kobune/apiserver/audit"
	"github.com/kobune/kobune/apiserver/request"
	"github.com/kobune/kobune/proto/apipb"
)

// auditUnary records each unary call in the audit log once it is answered.
func (s *Server) auditUnary(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	if s.audit == nil {
		return handler(ctx, req)
	}
	received := time.Now()
	ctx, annotations := admission.WithAnnotations(ctx)
	resp, err := handler(ctx, req)
	r := auditRequest(ctx, info.FullMethod, req, received)
	if len(annotations) > 0 {
		r.Annotations = annotations
	}
	if o, ok := resp.(*apipb.ObjectResponse); ok && err == nil {
		r.ResponseObject = o.Object
	}
	r.Code, r.Message = httpCode(err, r.Verb)
	s.audit.Record(r)
	return resp, err
}

// auditStream records a stream (watch, logs, exec) when its request
// arrives.
func (s *Server) auditStream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	if s.audit == nil {
		return handler(srv, ss)
	}
	return handler(srv, &auditedStream{ServerStream: ss, s: s, method: info.FullMethod, received: time.Now()})
}

type auditedStream struct {
	grpc.ServerStream
	s        *Server
	method   string
	received time.Time
	done     bool
}

func (a *auditedStream) RecvMsg(m any) error {
	err := a.ServerStream.RecvMsg(m)
	if err == nil && !a.done {
		a.done = true
		r := auditRequest(a.Context(), a.method, m, a.received)
		r.Code, r.Streaming = 200, true
		a.s.audit.Record(r)
	}
	return err
}

// auditRequest describes a call for the audit log.
func auditRequest(ctx context.Context, method string, req any, received time.Time) *audit.Request {
	u := request.UserFrom(ctx)
	r := &audit.Request{User: u.Name, Groups: u.Groups, Received: received}
	if real, ok := request.ImpersonatorFrom(ctx); ok {
		// Kubernetes' audit: user is who authenticated, impersonatedUser
		// whom they acted as.
		r.User, r.Groups, r.ImpersonatedUser, r.ImpersonatedGroups = real.Name, real.Groups, u.Name, u.Groups
	}
	if p, ok := peer.FromContext(ctx); ok && p.Addr != nil {
		host := p.Addr.String()
		if i := strings.LastIndex(host, ":"); i > 0 {
			host = host[:i]
		}
		r.SourceIP = host
	}
	if md, ok := metadata.FromIncomingContext(ctx); ok {
		if ua := md.Get("user-agent"); len(ua) > 0 {
			r.UserAgent = ua[0]
		}
	}
	a, obj := attributesOf(method, req)
	r.Verb, r.Group, r.Version, r.Resource, r.Subresource, r.Namespace, r.Name, r.RequestObject =
		a.Verb, a.APIGroup, a.APIVersion, a.Resource, a.Subresource, a.Namespace, a.Name, obj
	r.Path = a.Path
	return r
}

// httpCode is the HTTP status Kubernetes' API would answer for err.
func httpCode(err error, verb string) (int, string) {
	if err == nil {
		if verb == "create" {
			return 201, ""
		}
		return 200, ""
	}
	st := status.Convert(err)
	code := map[codes.Code]int{codes.NotFound: 404, codes.AlreadyExists: 409, codes.Aborted: 409, codes.InvalidArgument: 422,
		codes.PermissionDenied: 403, codes.Unauthenticated: 401, codes.FailedPrecondition: 400, codes.Unavailable: 503,
		codes.ResourceExhausted: 429, codes.DeadlineExceeded: 504, codes.Canceled: 499, codes.OutOfRange: 410}[st.Code()]
	if code == 0 {
		code = 500
	}
	return code, st.Message()
}
