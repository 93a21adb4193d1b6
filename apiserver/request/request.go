// Package request holds what the API server knows about a request once it
// is decoded and authenticated: who made it (the user and its groups, as
// Kubernetes' user.Info) and what it asks (verb, resource, subresource,
// namespace, name — Kubernetes' RequestInfo and authorizer.Attributes).
// Authentication puts the user in the request's context; authorization,
// admission and the audit log read it from there.
package request

import "context"

// UserInfo is who a request comes from, as authentication found it.
type UserInfo struct {
	Name   string
	Groups []string
	// Extra is what the authenticator knows besides (a ServiceAccount
	// token's credential id, pod and node, under
	// authentication.kubernetes.io/), shown by TokenReviews.
	Extra map[string][]string
}

// Well-known users and groups.
const (
	AllAuthenticated   = "system:authenticated"
	AllUnauthenticated = "system:unauthenticated"
	// SystemPrivilegedGroup (system:masters) is allowed everything, before
	// and regardless of RBAC, as in Kubernetes: the lab's admin is in it.
	SystemPrivilegedGroup = "system:masters"
	NodesGroup            = "system:nodes"
	NodeUserPrefix        = "system:node:"
	// ServiceAccountUserPrefix starts a ServiceAccount's user name,
	// "system:serviceaccount:<namespace>:<name>".
	ServiceAccountUserPrefix = "system:serviceaccount:"
)

// Anonymous is a request with no credentials.
var Anonymous = UserInfo{Name: "system:anonymous", Groups: []string{AllUnauthenticated}}

// InGroup reports whether the user is in group g.
func (u UserInfo) InGroup(g string) bool {
	for _, x := range u.Groups {
		if x == g {
			return true
		}
	}
	return false
}

// NodeName is the node an agent's user names (system:node:<name> in
// group system:nodes), or "" for any other user.
func (u UserInfo) NodeName() string {
	if len(u.Name) > len(NodeUserPrefix) && u.Name[:len(NodeUserPrefix)] == NodeUserPrefix && u.InGroup(NodesGroup) {
		return u.Name[len(NodeUserPrefix):]
	}
	return ""
}

type userKey struct{}

type impersonatorKey struct{}

// WithImpersonator records the authenticated user who acts as the
// context's user (impersonation), for the audit log.
func WithImpersonator(ctx context.Context, real UserInfo) context.Context {
	return context.WithValue(ctx, impersonatorKey{}, real)
}

// ImpersonatorFrom is the user who impersonates the request's user, if any.
func ImpersonatorFrom(ctx context.Context) (UserInfo, bool) {
	u, ok := ctx.Value(impersonatorKey{}).(UserInfo)
	return u, ok
}

// WithUser returns ctx carrying u.
func WithUser(ctx context.Context, u UserInfo) context.Context {
	return context.WithValue(ctx, userKey{}, u)
}

// Authenticated says whether ctx already carries an authenticated user (a
// front end authenticated the request before reading its body).
func Authenticated(ctx context.Context) bool {
	_, ok := ctx.Value(userKey{}).(UserInfo)
	return ok
}

// UserFrom is the request's user (Anonymous when authentication found
// none).
func UserFrom(ctx context.Context) UserInfo {
	if u, ok := ctx.Value(userKey{}).(UserInfo); ok {
		return u
	}
	return Anonymous
}

// Attributes are what a request asks, for authorization and the audit log.
type Attributes struct {
	Verb string
	// A resource request: APIGroup ("" the core group), Resource and
	// maybe Subresource, Namespace ("" for cluster-scoped resources and
	// requests across all namespaces) and Name ("" when it names no
	// object; a list or watch with the field selector metadata.name=X
	// names X, as in Kubernetes).
	APIGroup, APIVersion, Resource, Subresource, Namespace, Name string
	// Path is a non-resource request's path (such as /version); then the
	// resource fields are empty.
	Path string
}

// ResourceRequest reports whether the request is on a resource.
func (a *Attributes) ResourceRequest() bool { return a.Path == "" }

type initializedKey struct{}

// WithInitialized returns ctx under which a watch reports, through
// Initialized, that it has sent its initial events: API Priority and
// Fairness holds a watch's seats until then (Kubernetes counts a watch's
// initialization as work, not the hours it then stays open).
func WithInitialized(ctx context.Context, f func()) context.Context {
	return context.WithValue(ctx, initializedKey{}, f)
}

// Initialized reports that a watch has sent its initial events (or had
// none to send).
func Initialized(ctx context.Context) {
	if f, ok := ctx.Value(initializedKey{}).(func()); ok {
		f()
	}
}
