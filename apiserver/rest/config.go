package rest

import (
	"context"
	"net/http"
	"sync"
	"sync/atomic"

	"github.com/kobune/kobune/api/scheme"
	"github.com/kobune/kobune/apiserver/filters"
	"github.com/kobune/kobune/apiserver/nodeproxy"
	"github.com/kobune/kobune/apiserver/registry"
	"github.com/kobune/kobune/apiserver/request"
)

// Config is what the REST front end serves from.
type Config struct {
	// Chain is the handler chain every call passes (metrics,
	// authentication, audit, authorization: apiserver/handlerchain.go).
	Chain *filters.Chain
	// Registry holds the verbs; Proxy the node's (logs, exec, attach,
	// port-forward, metrics).
	Registry *registry.Registry
	Proxy    *nodeproxy.Proxy
	// Authenticate and AuthorizePath admit a request that names no verb
	// (discovery, OpenAPI), as the chain admits those that do.
	Authenticate  func(context.Context) (context.Context, error)
	AuthorizePath func(ctx context.Context, path string) error
	// AuthorizeAttributes asks the authorizer about attributes read from
	// a URL: an anonymous write is refused before its body is read.
	AuthorizeAttributes func(ctx context.Context, a *request.Attributes) error
	// Health serves /healthz, /livez and /readyz.
	Health http.HandlerFunc
	// OIDC is the ServiceAccount issuer's OpenID Connect discovery (the
	// configuration document and the key set), for the request's host;
	// ok false: none (no ServiceAccount tokens).
	OIDC func(host string) (config, jwks []byte, ok bool, err error)
	// Kinds are the kinds served, custom ones included (nil: built-in).
	Kinds *scheme.Kinds
}

// Handler serves the Kubernetes REST API.
type Handler struct {
	cfg      Config
	chain    *filters.Chain
	registry *registry.Registry
	proxy    *nodeproxy.Proxy
	// conn serves exec, attach and port-forward (connect.go).
	conn *connector
	mux  http.Handler
	// groups caches discovery: made again only when the custom kinds
	// change (discovery.go).
	groups atomic.Pointer[servedGroupsCache]
	// openapi is the OpenAPI documents for the custom kinds of the moment
	// (made again, under openapiMu, when they change).
	openapi   atomic.Pointer[openAPIDocs]
	openapiMu sync.Mutex
}

// connector serves the connect verbs: exec, attach and port-forward, a
// session each, upgraded to a WebSocket or SPDY stream once the handler
// chain and the pod's node let it through.
type connector struct {
	chain *filters.Chain
	proxy *nodeproxy.Proxy
}

// New returns the REST API's HTTP handler.
func New(cfg Config) *Handler {
	s := &Handler{cfg: cfg, chain: cfg.Chain, registry: cfg.Registry, proxy: cfg.Proxy,
		conn: &connector{chain: cfg.Chain, proxy: cfg.Proxy}}
	s.mux = s.routes()
	return s
}

// ServeHTTP serves one request.
func (s *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }
