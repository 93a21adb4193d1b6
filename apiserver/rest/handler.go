package rest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"sigs.k8s.io/yaml"

	"github.com/kobune/kobune/api/k8sapi"
	"github.com/kobune/kobune/api/patch"
	"github.com/kobune/kobune/api/scheme"
	"github.com/kobune/kobune/apiserver/filters"
	"github.com/kobune/kobune/apiserver/registry"
	"github.com/kobune/kobune/apiserver/request"
	"github.com/kobune/kobune/client"
	"github.com/kobune/kobune/proto/apipb"
)

// routes is the REST API's HTTP handler.
func (s *Handler) routes() http.Handler {
	mux := http.NewServeMux()
	// "/api/" and "/apis/" are discovery too (kube-apiserver serves both
	// spellings); anything below them is a resource.
	resourceOrDiscovery := func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/api/" || r.URL.Path == "/apis/" {
			s.serveDiscovery(w, r)
			return
		}
		s.serveResource(w, r)
	}
	mux.HandleFunc("/api/", resourceOrDiscovery)
	mux.HandleFunc("/apis/", resourceOrDiscovery)
	mux.HandleFunc("/api", s.serveDiscovery)
	mux.HandleFunc("/apis", s.serveDiscovery)
	mux.HandleFunc("/openapi/", s.serveOpenAPI)
	mux.HandleFunc("/version", s.serveDiscovery)
	mux.HandleFunc("/version/", s.serveDiscovery)
	// The ServiceAccount issuer's OIDC discovery (kube-apiserver's
	// /.well-known/openid-configuration and /openid/v1/jwks), which
	// RBAC's system:service-account-issuer-discovery role may read.
	mux.HandleFunc("/.well-known/openid-configuration", func(w http.ResponseWriter, r *http.Request) { s.serveOIDC(w, r, false) })
	mux.HandleFunc("/openid/v1/jwks", func(w http.ResponseWriter, r *http.Request) { s.serveOIDC(w, r, true) })
	for _, p := range []string{"/healthz", "/livez", "/readyz"} {
		mux.HandleFunc(p, s.cfg.Health)
		mux.HandleFunc(p+"/", s.cfg.Health)
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if s.pathAllowed(w, r) {
			writeError(w, status.Errorf(codes.NotFound, "the server could not find the requested resource (%s %s)", r.Method, r.URL.Path), nil)
		}
	})
	return mux
}

// restContext carries what a gRPC call would: the peer (with its TLS
// state, for client certificates) and the headers authentication reads;
// and where the filters set the response's headers (filters.SetHeader).
func restContext(w http.ResponseWriter, r *http.Request) context.Context {
	p := &peer.Peer{}
	if ap, err := netip.ParseAddrPort(r.RemoteAddr); err == nil {
		p.Addr = net.TCPAddrFromAddrPort(ap)
	}
	if r.TLS != nil {
		p.AuthInfo = credentials.TLSInfo{State: *r.TLS, CommonAuthInfo: credentials.CommonAuthInfo{SecurityLevel: credentials.PrivacyAndIntegrity}}
	}
	md := metadata.MD{}
	if v := r.Header.Get("Authorization"); v != "" {
		md.Set("authorization", v)
	}
	if v := r.Header.Values("Impersonate-User"); len(v) > 0 {
		md.Set(client.ImpersonateUserHeader, v...)
	}
	if v := r.Header.Values("Impersonate-Group"); len(v) > 0 {
		md.Set(client.ImpersonateGroupHeader, v...)
	}
	if v := r.Header.Get("User-Agent"); v != "" {
		md.Set("user-agent", v)
	}
	ctx := filters.WithResponseHeaders(r.Context(), w.Header().Set)
	return metadata.NewIncomingContext(peer.NewContext(ctx, p), md)
}

// pathAllowed authenticates and authorizes a request that maps to no RPC
// (discovery, OpenAPI), as the handler chain does for those that do; when it
// is refused, the refusal is the answer.
func (s *Handler) pathAllowed(w http.ResponseWriter, r *http.Request) bool {
	ctx, err := s.cfg.Authenticate(restContext(w, r))
	if err == nil {
		err = s.cfg.AuthorizePath(ctx, r.URL.Path)
	}
	if err != nil {
		writeError(w, err, nil)
		return false
	}
	return true
}

// restSender is a Sender over an HTTP response: send writes one message
// in the response's encoding; header, when set, sends the response's
// headers once the registry has accepted the call.
type restSender[T any] struct {
	send   func(*T) error
	header func()
}

func (r restSender[T]) Send(m *T) error { return r.send(m) }

func (r restSender[T]) SendHeader(metadata.MD) error {
	if r.header != nil {
		r.header()
	}
	return nil
}

// restDuplex is a Duplex over a WebSocket session: recv reads what the
// client sends after the request.
type restDuplex[In, Out any] struct {
	restSender[Out]
	recv func() (*In, error)
}

func (r restDuplex[In, Out]) Recv() (*In, error) { return r.recv() }

// restTarget is what a resource URL names.
type restTarget struct {
	kind                 *scheme.Kind // nil for reviews and tokens
	resource             string       // "pods", "selfsubjectaccessreviews"
	group, version       string
	namespace, name, sub string
	// objectName is the name in a create's body (the URL has none): what
	// an Invalid Status names.
	objectName string
	// conv: the URL names another served version of the kind
	// (versions.go); nil for the stored version.
	conv *scheme.Version
}

// parseResourcePath reads /api/v1/... and /apis/GROUP/VERSION/...
func parseResourcePath(p string) (t restTarget, rest []string, err error) {
	parts := strings.Split(strings.Trim(p, "/"), "/")
	switch {
	case len(parts) >= 2 && parts[0] == "api":
		t.version, parts = parts[1], parts[2:]
	case len(parts) >= 3 && parts[0] == "apis":
		t.group, t.version, parts = parts[1], parts[2], parts[3:]
	default:
		return t, nil, errNotFound(p)
	}
	return t, parts, nil
}

// isGroupPath says whether p is /apis/GROUP: the group's APIGroup document.
func isGroupPath(p string) bool {
	rest, ok := strings.CutPrefix(strings.TrimSuffix(p, "/"), "/apis/")
	return ok && rest != "" && !strings.Contains(rest, "/")
}

func errNotFound(p string) error {
	return status.Errorf(codes.NotFound, "the server could not find the requested resource (%s)", p)
}

// resolve fills t from the path segments after the group version: the
// kind (a built-in one, or one a CustomResourceDefinition added), and
// t.resource becomes the kind's Resource, as the registry knows it.
func (t *restTarget) resolve(kinds *scheme.Kinds, parts []string) error {
	gv := t.version
	if t.group != "" {
		gv = t.group + "/" + t.version
	}
	if len(parts) >= 3 && parts[0] == "namespaces" {
		if k, _, ok := kinds.ForURL(t.group, t.version, parts[2]); ok && k.Namespaced || parts[2] == "localsubjectaccessreviews" {
			t.namespace, parts = parts[1], parts[2:]
		}
	}
	if len(parts) == 0 || len(parts) > 3 {
		return errNotFound("/" + strings.Join(parts, "/"))
	}
	t.resource = parts[0]
	if len(parts) > 1 {
		t.name = parts[1]
	}
	if len(parts) > 2 {
		t.sub = parts[2]
	}
	if k, conv, ok := kinds.ForURL(t.group, t.version, t.resource); ok {
		t.kind, t.conv, t.resource = k, conv, k.Resource
		return nil
	}
	if r, ok := registry.Reviews[t.resource]; ok && r.Group+"/v1" == gv && t.name == "" {
		return nil
	}
	return status.Errorf(codes.NotFound, "the server could not find the requested resource (%s %s)", gv, t.resource)
}

// serveResource serves every resource URL.
func (s *Handler) serveResource(w http.ResponseWriter, r *http.Request) {
	t, parts, err := parseResourcePath(r.URL.Path)
	if err == nil && len(parts) == 0 || isGroupPath(r.URL.Path) {
		s.serveDiscovery(w, r)
		return
	}
	if err == nil && t.group == "metrics.k8s.io" && t.version == "v1beta1" {
		s.restMetrics(restContext(w, r), w, r, parts)
		return
	}
	if err == nil && t.group == "" && len(parts) >= 5 && parts[0] == "namespaces" && (parts[2] == "pods" || parts[2] == "services") && parts[4] == "proxy" {
		s.restProxy(restContext(w, r), w, r, parts[1], parts[2], parts[3], "/"+strings.Join(parts[5:], "/"))
		return
	}
	if err == nil && t.group == "" && len(parts) >= 4 && parts[0] == "nodes" && parts[2] == "proxy" {
		s.restNodeProxy(restContext(w, r), w, r, parts[1], strings.Join(parts[3:], "/"))
		return
	}
	if err == nil {
		err = t.resolve(s.cfg.Kinds, parts)
	}
	if err != nil {
		writeError(w, err, nil)
		return
	}
	if t.conv != nil && t.conv.Warning != "" {
		writeWarnings(w, []string{t.conv.Warning}) // a deprecated version
	} else if t.conv == nil && t.kind != nil && t.kind.Warning != "" {
		writeWarnings(w, []string{t.kind.Warning})
	}
	ctx := restContext(w, r)
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		// A request with a body is authenticated before its body is read
		// (kube-apiserver authenticates in a filter around every handler):
		// an unknown caller's YAML or protobuf is never decoded.
		if err := s.authenticateBeforeBody(&ctx, r, &t); err != nil {
			writeError(w, s.refusedUnread(ctx, r, &t, err), &t)
			return
		}
		if t.sub != "exec" && t.sub != "attach" && t.sub != "portforward" { // those become streams
			bodyDeadline(w, r)
		}
	}
	q := r.URL.Query()
	switch {
	case r.Method == http.MethodGet && t.name != "" && t.sub == "":
		s.restGet(ctx, w, r, &t)
	case r.Method == http.MethodGet && t.name == "" && (q.Get("watch") == "true" || q.Get("watch") == "1"):
		s.restWatch(ctx, w, r, &t)
	case r.Method == http.MethodGet && t.name == "":
		s.restList(ctx, w, r, &t)
	case r.Method == http.MethodGet && (t.sub == "status" && t.kind != nil && t.kind.HasStatus || t.sub == "scale" || onePart(&t)):
		s.restGet(ctx, w, r, &t)
	case r.Method == http.MethodPut && t.name != "" && t.sub == "scale":
		// A Scale written whole: merged onto the current Scale, which keeps
		// only its replicas (and its resourceVersion, a precondition). Its
		// body is read as the client sent it (JSON, YAML or protobuf), then
		// served as a merge patch.
		body, err := readBody(r)
		if err != nil {
			writeError(w, err, &t)
			return
		}
		r.Body, r.Method = io.NopCloser(bytes.NewReader(body)), http.MethodPatch
		r.Header.Set("Content-Type", patch.MergePatchType)
		s.restPatch(ctx, w, r, &t)
	case r.Method == http.MethodGet && t.resource == "pods" && t.sub == "log":
		s.restLogs(ctx, w, r, &t)
	case (r.Method == http.MethodGet || r.Method == http.MethodPost) && t.resource == "pods" && t.sub == "exec":
		s.conn.restExec(ctx, w, r, &t)
	case (r.Method == http.MethodGet || r.Method == http.MethodPost) && t.resource == "pods" && t.sub == "attach":
		s.conn.restAttach(ctx, w, r, &t)
	case (r.Method == http.MethodGet || r.Method == http.MethodPost) && t.resource == "pods" && t.sub == "portforward":
		s.conn.restPortForward(ctx, w, r, &t)
	case r.Method == http.MethodPost && t.name == "":
		s.restCreate(ctx, w, r, &t, t.resource)
	case r.Method == http.MethodPost && t.resource == "pods" && t.sub == "binding":
		s.restBind(ctx, w, r, &t)
	case r.Method == http.MethodDelete && t.name == "" && t.kind != nil:
		s.restDeleteCollection(ctx, w, r, &t)
	case r.Method == http.MethodPost && t.resource == "pods" && t.sub == "eviction":
		s.restCreate(ctx, w, r, &t, client.EvictionSubresource)
	case r.Method == http.MethodPost && t.resource == "serviceaccounts" && t.sub == "token":
		s.restCreate(ctx, w, r, &t, client.TokenSubresource)
	case r.Method == http.MethodPut && t.name != "" && (t.sub == "" || t.sub == "status" || t.sub == "finalize" && t.resource == "namespaces" || onePart(&t)):
		s.restUpdate(ctx, w, r, &t)
	case r.Method == http.MethodPatch && t.name != "" && (t.sub == "" || t.sub == "status" || t.sub == "scale" || onePart(&t)):
		s.restPatch(ctx, w, r, &t)
	case r.Method == http.MethodDelete && t.name != "" && t.sub == "":
		s.restDelete(ctx, w, r, &t)
	default:
		writeError(w, status.Errorf(codes.Unimplemented, "%s %s is not served by kobune (yet)", r.Method, r.URL.Path), &t)
	}
}

// authenticateBeforeBody authenticates a request that carries a body
// before the body is read; the chain then takes the user from ctx. An
// anonymous caller (when anonymous requests are allowed at all) is also
// authorized from the URL alone first, so that what RBAC refuses it is
// refused unread; the chain authorizes the whole request again.
// *ctx becomes the authenticated context (also when authorization then
// refuses).
func (s *Handler) authenticateBeforeBody(pctx *context.Context, r *http.Request, t *restTarget) error {
	if s.cfg.Authenticate == nil {
		return nil
	}
	ctx, err := s.cfg.Authenticate(*pctx)
	if err != nil {
		return err
	}
	*pctx = ctx
	u := request.UserFrom(ctx)
	if u.Name != request.Anonymous.Name || s.cfg.AuthorizeAttributes == nil {
		return nil
	}
	verb := map[string]string{http.MethodPost: "create", http.MethodPut: "update", http.MethodPatch: "patch", http.MethodDelete: "delete"}[r.Method]
	if verb == "delete" && t.name == "" {
		verb = "deletecollection"
	}
	a := request.Attributes{Verb: verb, APIGroup: t.group, APIVersion: t.version, Resource: t.resource, Subresource: t.sub, Namespace: t.namespace, Name: t.name}
	if t.group != "" {
		a.APIVersion = t.group + "/" + t.version
	}
	return s.cfg.AuthorizeAttributes(ctx, &a)
}

// refusedUnread passes a request refused before its body was read (401,
// or 403 for an anonymous caller) through the handler chain without its
// body, so that the request metrics and the audit log count it as they
// count every other refusal; the chain refuses it again at the same step
// (authentication, or authorization), and if it did not, the first
// refusal stands. What the chain answers is the answer.
func (s *Handler) refusedUnread(ctx context.Context, r *http.Request, t *restTarget, refusal error) error {
	refuse := func(context.Context) (any, error) { return nil, refusal }
	resource := t.resource
	if t.sub != "" && t.sub != "status" {
		resource += "/" + t.sub
	}
	var (
		method string
		req    proto.Message
	)
	switch {
	case r.Method == http.MethodPost && t.resource == "pods" && (t.sub == "exec" || t.sub == "attach" || t.sub == "portforward"):
		method = map[string]string{"exec": "PodExec", "attach": "PodAttach", "portforward": "PodPortForward"}[t.sub]
		req = map[string]proto.Message{"exec": &apipb.PodExecInput{Namespace: t.namespace, Name: t.name},
			"attach": &apipb.PodAttachRequest{Namespace: t.namespace, Name: t.name}, "portforward": &apipb.PodPortForwardData{Namespace: t.namespace, Name: t.name}}[t.sub]
		_, err := s.chain.Do(ctx, &filters.Call{Method: method, Request: req, Streaming: true}, refuse)
		return err
	case r.Method == http.MethodPost && t.resource == "pods" && t.sub == "binding":
		method, req = "Bind", &apipb.BindRequest{Namespace: t.namespace, Name: t.name}
	case r.Method == http.MethodPost:
		method, req = "Create", &apipb.CreateRequest{Resource: resource, Namespace: t.namespace}
	case r.Method == http.MethodPut && t.sub == "status":
		method, req = "UpdateStatus", &apipb.UpdateRequest{Resource: t.resource, Namespace: t.namespace}
	case r.Method == http.MethodPut:
		method, req = "Update", &apipb.UpdateRequest{Resource: resource, Namespace: t.namespace}
	case r.Method == http.MethodPatch:
		method, req = "Patch", &apipb.PatchRequest{Resource: t.resource, Namespace: t.namespace, Name: t.name, Subresource: t.sub}
	case r.Method == http.MethodDelete:
		method, req = "Delete", &apipb.DeleteRequest{Resource: t.resource, Namespace: t.namespace, Name: t.name}
	default:
		return refusal
	}
	_, err := s.chain.Do(ctx, &filters.Call{Method: method, Request: req}, refuse)
	return err
}

// BodyReadTimeout is how long a request's body may take to arrive: a
// client that sends a byte every few seconds is cut off instead of
// holding a connection and a goroutine for as long as it likes. A
// watch or a log stream has no body, and exec, attach and port-forward
// become streams; none of them is bounded by it.
var BodyReadTimeout = time.Minute

// bodyDeadline gives r's body BodyReadTimeout to arrive; the deadline is
// lifted once the body has been read to its end.
func bodyDeadline(w http.ResponseWriter, r *http.Request) {
	rc := http.NewResponseController(w)
	if rc.SetReadDeadline(time.Now().Add(BodyReadTimeout)) != nil {
		return
	}
	r.Body = &deadlineBody{ReadCloser: r.Body, lift: func() { _ = rc.SetReadDeadline(time.Time{}) }}
}

// deadlineBody lifts the read deadline when the body ends.
type deadlineBody struct {
	io.ReadCloser
	lift func()
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF && b.lift != nil {
		b.lift()
		b.lift = nil
	}
	return n, err
}

// Content types.
const (
	contentJSON     = "application/json"
	contentProtobuf = "application/vnd.kubernetes.protobuf"
	tableAccept     = "as=Table"
	maxBodyBytes    = registry.MaxObjectBytes + 64<<10
)

// readBody reads a request body, bounded in size, as JSON: JSON as it
// is, YAML and Kubernetes protobuf (what client-go's typed clients send)
// turned into JSON.
func readBody(r *http.Request) ([]byte, error) {
	return readBodyUpTo(r, maxBodyBytes)
}

// readBodyUpTo is readBody for a body of at most limit bytes.
func readBodyUpTo(r *http.Request, limit int) ([]byte, error) {
	mt := contentJSON
	if ct := r.Header.Get("Content-Type"); ct != "" {
		var err error
		if mt, _, err = mime.ParseMediaType(ct); err != nil {
			return nil, status.Errorf(codes.InvalidArgument, "Content-Type %q: %v", ct, err)
		}
	}
	switch mt {
	case patch.JSONPatchType, patch.MergePatchType, patch.StrategicMergePatchType, patch.ApplyPatchType:
		if r.Method != http.MethodPatch { // a patch only patches, as in Kubernetes
			return nil, statusWithCode(http.StatusUnsupportedMediaType, "UnsupportedMediaType",
				fmt.Sprintf("%s is a patch: send it with PATCH; %s takes %s, application/yaml or %s", mt, r.Method, contentJSON, contentProtobuf))
		}
	}
	b, err := io.ReadAll(io.LimitReader(r.Body, int64(limit)+1))
	if err != nil {
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return nil, statusWithCode(http.StatusRequestTimeout, "Timeout", fmt.Sprintf("the request body did not arrive within %v: send it at once, or a smaller one", BodyReadTimeout))
		}
		return nil, status.Errorf(codes.InvalidArgument, "reading the request body: %v", err)
	}
	if len(b) > limit {
		return nil, registry.TooLarge(len(b))
	}
	switch {
	case mt == contentJSON || strings.HasSuffix(mt, "+json"):
		return b, nil
	case mt == "application/yaml" || strings.HasSuffix(mt, "+yaml"):
		if fv := r.URL.Query().Get("fieldValidation"); fv == "Strict" || fv == registry.KobuneStrict {
			// A key twice in one mapping: refused in the YAML decoder's
			// words, as kube-apiserver's strict decoding does
			// ("line 9: key \"foo\" already set in map").
			if _, err := yaml.YAMLToJSONStrict(b); err != nil {
				return nil, statusWithCode(http.StatusBadRequest, "BadRequest", "error decoding YAML: "+err.Error())
			}
		}
		return yamlToJSON(b)
	case mt == contentProtobuf:
		j, err := k8sapi.ProtoToJSON(b)
		if err != nil {
			return nil, statusWithCode(http.StatusBadRequest, "BadRequest", err.Error())
		}
		return j, nil
	}
	return nil, statusWithCode(http.StatusUnsupportedMediaType, "UnsupportedMediaType",
		fmt.Sprintf("the body of the request was in an unknown format - accepted media types include: application/json, application/yaml, application/vnd.kubernetes.protobuf (not %s)", mt))
}

func wantsTable(r *http.Request) bool {
	for _, a := range strings.Split(r.Header.Get("Accept"), ",") {
		if strings.Contains(a, tableAccept) && strings.Contains(a, "g=meta.k8s.io") {
			return true
		}
		if strings.TrimSpace(a) != "" {
			return false // a preference for something else comes first
		}
	}
	return false
}

// onlyTable reports whether the client accepts nothing but a Table (no
// fallback such as application/json after it).
func onlyTable(r *http.Request) bool {
	for _, a := range strings.Split(r.Header.Get("Accept"), ",") {
		if a = strings.TrimSpace(a); a != "" && !strings.Contains(a, tableAccept) {
			return false
		}
	}
	return true
}

func writeJSON(w http.ResponseWriter, code int, b []byte) {
	w.Header().Set("Content-Type", contentJSON)
	w.WriteHeader(code)
	_, _ = w.Write(b)
}

func writeObject(w http.ResponseWriter, code int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		writeError(w, status.Errorf(codes.Internal, "encode: %v", err), nil)
		return
	}
	writeJSON(w, code, b)
}

// writeWarnings sends warnings as Kubernetes does: Warning headers (RFC
// 7234's 299 code), which kubectl prints as "Warning: ...".
func writeWarnings(w http.ResponseWriter, warnings []string) {
	for _, msg := range warnings {
		w.Header().Add("Warning", "299 - "+strconv.Quote(msg))
	}
}

// onePart says whether t is one of the subresources that write one part
// of an object (a pod's ephemeralcontainers and resize, a
// CertificateSigningRequest's approval): read as the object, written as
// an update or a patch of it (registry/parts.go).
func onePart(t *restTarget) bool {
	return t.sub != "" && registry.IsPart(t.resource, t.sub)
}

// serveOIDC answers the OIDC discovery document or the key set.
func (s *Handler) serveOIDC(w http.ResponseWriter, r *http.Request, keys bool) {
	if !s.pathAllowed(w, r) {
		return
	}
	if s.cfg.OIDC == nil || r.Method != http.MethodGet {
		writeError(w, status.Errorf(codes.NotFound, "the server could not find the requested resource (%s %s)", r.Method, r.URL.Path), nil)
		return
	}
	config, jwks, ok, err := s.cfg.OIDC("https://" + r.Host)
	switch {
	case err != nil:
		writeError(w, status.Errorf(codes.Internal, "OIDC discovery: %v", err), nil)
		return
	case !ok:
		writeError(w, status.Errorf(codes.NotFound, "this API server issues no ServiceAccount tokens (no --service-account-key-file): no OIDC discovery"), nil)
		return
	}
	body, typ := config, "application/json"
	if keys {
		body, typ = jwks, "application/jwk-set+json"
	}
	w.Header().Set("Content-Type", typ)
	_, _ = w.Write(body)
}
