package apiserver

import (
	"context"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	"github.com/kobune/kobune/apiserver/audit"
	"github.com/kobune/kobune/apiserver/authorization"
	"github.com/kobune/kobune/apiserver/request"
)

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
	a, obj := authorization.AttributesOf(method, req)
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
