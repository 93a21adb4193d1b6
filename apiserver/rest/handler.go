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
	"net/url"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	"github.com/kobune/kobune/api/k8sapi"
	"github.com/kobune/kobune/api/patch"
	"github.com/kobune/kobune/api/scheme"
	"github.com/kobune/kobune/apiserver/apierrors"
	"github.com/kobune/kobune/apiserver/filters"
	"github.com/kobune/kobune/apiserver/registry"
	"github.com/kobune/kobune/apiserver/request"
	"github.com/kobune/kobune/client"
	"github.com/kobune/kobune/proto/apipb"
)

// routes is the REST API's HTTP handler.
func (s *Handler) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/api/", s.serveResource)
	mux.HandleFunc("/apis/", s.serveResource)
	mux.HandleFunc("/api", s.serveDiscovery)
	mux.HandleFunc("/apis", s.serveDiscovery)
	mux.HandleFunc("/openapi/", s.serveOpenAPI)
	mux.HandleFunc("/version", s.serveDiscovery)
	mux.HandleFunc("/version/", s.serveDiscovery)
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
// state, for client certificates) and the headers authentication reads.
func restContext(r *http.Request) context.Context {
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
	return metadata.NewIncomingContext(peer.NewContext(r.Context(), p), md)
}

// pathAllowed authenticates and authorizes a request that maps to no RPC
// (discovery, OpenAPI), as the handler chain does for those that do; when it
// is refused, the refusal is the answer.
func (s *Handler) pathAllowed(w http.ResponseWriter, r *http.Request) bool {
	ctx, err := s.cfg.Authenticate(restContext(r))
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

// resolve fills t from the path segments after the group version.
func (t *restTarget) resolve(parts []string) error {
	gv := t.version
	if t.group != "" {
		gv = t.group + "/" + t.version
	}
	if len(parts) >= 3 && parts[0] == "namespaces" {
		if k, ok := scheme.ByResource(parts[2]); ok && k.Namespaced || parts[2] == "localsubjectaccessreviews" {
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
	if k, ok := scheme.ByResource(t.resource); ok && k.APIVersion == gv {
		t.kind = k
		return nil
	}
	if k, ok := scheme.ByResource(t.resource); ok {
		if v, ok := k.ServedAt(gv); ok {
			t.kind, t.conv = k, v
			return nil
		}
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
		s.restMetrics(restContext(r), w, r, parts)
		return
	}
	if err == nil && t.group == "" && len(parts) >= 4 && parts[0] == "nodes" && parts[2] == "proxy" {
		s.restNodeProxy(restContext(r), w, r, parts[1], strings.Join(parts[3:], "/"))
		return
	}
	if err == nil {
		err = t.resolve(parts)
	}
	if err != nil {
		writeError(w, err, nil)
		return
	}
	ctx := restContext(r)
	q := r.URL.Query()
	switch {
	case r.Method == http.MethodGet && t.name != "" && t.sub == "":
		s.restGet(ctx, w, r, &t)
	case r.Method == http.MethodGet && t.name == "" && (q.Get("watch") == "true" || q.Get("watch") == "1"):
		s.restWatch(ctx, w, r, &t)
	case r.Method == http.MethodGet && t.name == "":
		s.restList(ctx, w, r, &t)
	case r.Method == http.MethodGet && (t.sub == "status" && t.kind != nil && t.kind.HasStatus || t.sub == "scale"):
		s.restGet(ctx, w, r, &t)
	case r.Method == http.MethodPut && t.name != "" && t.sub == "scale":
		// A Scale written whole: merged onto the current Scale, which keeps
		// only its replicas (and its resourceVersion, a precondition).
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
	case r.Method == http.MethodPut && t.name != "" && (t.sub == "" || t.sub == "status"):
		s.restUpdate(ctx, w, r, &t)
	case r.Method == http.MethodPatch && t.name != "" && (t.sub == "" || t.sub == "status" || t.sub == "scale"):
		s.restPatch(ctx, w, r, &t)
	case r.Method == http.MethodDelete && t.name != "" && t.sub == "":
		s.restDelete(ctx, w, r, &t)
	default:
		writeError(w, status.Errorf(codes.Unimplemented, "%s %s is not served by kobune (yet)", r.Method, r.URL.Path), &t)
	}
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
	b, err := io.ReadAll(io.LimitReader(r.Body, int64(limit)+1))
	if err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "reading the request body: %v", err)
	}
	if len(b) > limit {
		return nil, registry.TooLarge(len(b))
	}
	switch {
	case mt == contentJSON || strings.HasSuffix(mt, "+json"):
		return b, nil
	case mt == "application/yaml" || strings.HasSuffix(mt, "+yaml"):
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

func (s *Handler) restGet(ctx context.Context, w http.ResponseWriter, r *http.Request, t *restTarget) {
	resp, err := filters.Unary(ctx, s.chain, "Get", &apipb.GetRequest{Resource: t.resource, Namespace: t.namespace, Name: t.name, Subresource: t.sub}, s.registry.Get)
	if err != nil {
		writeError(w, err, t)
		return
	}
	obj := resp.Object
	if wantsTable(r) && t.sub == "" {
		writeTable(w, r, t.kind, [][]byte{obj}, "", "")
		return
	}
	writeJSON(w, http.StatusOK, t.fromStored(obj))
}

func (s *Handler) restList(ctx context.Context, w http.ResponseWriter, r *http.Request, t *restTarget) {
	q := r.URL.Query()
	req := &apipb.ListRequest{Resource: t.resource, Namespace: t.namespace, LabelSelector: q.Get("labelSelector"), FieldSelector: q.Get("fieldSelector"),
		Continue: q.Get("continue"), ResourceVersionMatch: q.Get("resourceVersionMatch")}
	for name, dst := range map[string]*int64{"limit": &req.Limit, "resourceVersion": &req.ResourceVersion} {
		if v := q.Get(name); v != "" {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n < 0 {
				writeError(w, apierrors.Invalid("%s: Invalid value: %q: must be a non-negative integer", name, v), t)
				return
			}
			*dst = n
		}
	}
	list, err := filters.Unary(ctx, s.chain, "List", req, s.registry.List)
	if err != nil {
		writeError(w, err, t)
		return
	}
	rv := strconv.FormatInt(list.ResourceVersion, 10)
	if wantsTable(r) {
		writeTable(w, r, t.kind, list.Items, rv, list.Continue)
		return
	}
	w.Header().Set("Content-Type", contentJSON)
	w.WriteHeader(http.StatusOK)
	apiVersion := t.apiVersion()
	cont := ""
	if list.Continue != "" {
		cont = fmt.Sprintf(`,"continue":%q`, list.Continue)
	}
	fmt.Fprintf(w, `{"kind":%q,"apiVersion":%q,"metadata":{"resourceVersion":%q%s},"items":[`, t.kind.Kind+"List", apiVersion, rv, cont)
	for i, it := range list.Items {
		if i > 0 {
			_, _ = w.Write([]byte{','})
		}
		_, _ = w.Write(t.fromStored(it))
	}
	_, _ = io.WriteString(w, "]}\n")
}

// restWatch streams watch events as JSON lines (Kubernetes' watch
// encoding: one {"type":...,"object":...} per line, flushed as it comes).
// watchRequest reads a watch's query: resourceVersion, timeoutSeconds
// (checked here, applied by the caller), the selectors, bookmarks and a
// streaming list (sendInitialEvents).
func (s *Handler) watchRequest(ctx context.Context, q url.Values, t *restTarget) (*apipb.WatchRequest, error) {
	var rv int64
	if v := q.Get("resourceVersion"); v != "" {
		var err error
		if rv, err = strconv.ParseInt(v, 10, 64); err != nil || rv < 0 {
			return nil, apierrors.Invalid("resourceVersion: Invalid value: %q: must be a non-negative integer", v)
		}
	}
	if v := q.Get("timeoutSeconds"); v != "" {
		if sec, err := strconv.Atoi(v); err != nil || sec < 0 {
			return nil, apierrors.Invalid("timeoutSeconds: Invalid value: %q", v)
		}
	}
	req := &apipb.WatchRequest{Resource: t.resource, Namespace: t.namespace, LabelSelector: q.Get("labelSelector"),
		FieldSelector: q.Get("fieldSelector"), ResourceVersion: rv, AllowBookmarks: q.Get("allowWatchBookmarks") == "true"}
	switch q.Get("sendInitialEvents") {
	case "true":
		// A streaming list (client-go's WatchList): the state now — which
		// is not older than any revision the client names — then the
		// bookmark that ends it, then changes.
		if m := q.Get("resourceVersionMatch"); m != "NotOlderThan" {
			return nil, apierrors.Invalid("resourceVersionMatch: Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan (not %q)", m)
		}
		if !req.AllowBookmarks {
			return nil, apierrors.Invalid("allowWatchBookmarks: Forbidden: sendInitialEvents requires allowWatchBookmarks=true")
		}
		req.ResourceVersion, req.SendInitialEvents = 0, true
	case "false":
		if rv == 0 && t.kind != nil {
			// Changes from now on, without the state first.
			cur, err := s.registry.Revision(ctx)
			if err != nil {
				return nil, apierrors.FromStorage(err, t.kind, "")
			}
			req.ResourceVersion = cur
		}
	}
	return req, nil
}

func (s *Handler) restWatch(ctx context.Context, w http.ResponseWriter, r *http.Request, t *restTarget) {
	q := r.URL.Query()
	req, err := s.watchRequest(ctx, q, t)
	if err != nil {
		writeError(w, err, t)
		return
	}
	if sec, _ := strconv.Atoi(q.Get("timeoutSeconds")); sec > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Duration(sec)*time.Second)
		defer cancel()
	}
	flusher, _ := w.(http.Flusher)
	asTable, columnsSent := wantsTable(r) && t.kind != nil, false
	started := false
	start := func() {
		if !started {
			started = true
			w.Header().Set("Content-Type", contentJSON)
			w.WriteHeader(http.StatusOK)
			if flusher != nil {
				flusher.Flush()
			}
		}
	}
	send := func(ev *apipb.WatchEvent) error {
		start()
		obj := ev.Object
		if asTable && ev.Type != registry.Bookmark {
			// kubectl get -w: each event's object is a one-row Table, the
			// first with the column definitions.
			tb, err := buildTable(t.kind, [][]byte{obj}, strconv.FormatInt(ev.ResourceVersion, 10), q.Get("includeObject"), !columnsSent)
			if err != nil {
				return err
			}
			columnsSent = true
			obj = mustJSON(tb)
		} else if ev.Type != registry.Bookmark {
			obj = t.fromStored(obj)
		}
		if _, err := fmt.Fprintf(w, `{"type":%q,"object":%s}`+"\n", ev.Type, obj); err != nil {
			return err
		}
		if flusher != nil {
			flusher.Flush()
		}
		return nil
	}
	err = filters.Stream(ctx, s.chain, "Watch", req, func(ctx context.Context) error {
		return s.registry.Watch(ctx, req, restSender[apipb.WatchEvent]{send: send, header: start})
	})
	if err == nil || ctx.Err() != nil {
		start()
		return
	}
	if !started && status.Code(err) != codes.OutOfRange {
		writeError(w, err, t)
		return
	}
	// An expired revision ends the watch with an ERROR event holding a
	// 410 Status, which makes informers list again (Kubernetes does the
	// same).
	start()
	fmt.Fprintf(w, `{"type":"ERROR","object":%s}`+"\n", statusJSON(err, t))
	if flusher != nil {
		flusher.Flush()
	}
}

// readWrite reads what a create, update or patch sends: the body and the
// dryRun parameter.
func readWrite(r *http.Request) ([]byte, bool, error) {
	body, err := readBody(r)
	if err != nil {
		return nil, false, err
	}
	dry, err := dryRun(r.URL.Query().Get("dryRun"))
	return body, dry, err
}

func (s *Handler) restCreate(ctx context.Context, w http.ResponseWriter, r *http.Request, t *restTarget, resource string) {
	body, dry, err := readWrite(r)
	if err != nil {
		writeError(w, err, t)
		return
	}
	if t.name == "" {
		named := *t
		named.objectName = request.MetadataName(body)
		t = &named
	}
	body, warnings, err := t.toStored(body, r.URL.Query().Get("fieldValidation"))
	if err != nil {
		writeError(w, err, t)
		return
	}
	writeWarnings(w, warnings)
	q := r.URL.Query()
	ns := t.namespace
	if t.sub == "token" {
		body, err = tokenRequestFor(body, t.name)
		if err != nil {
			writeError(w, err, t)
			return
		}
	}
	resp, err := filters.Unary(ctx, s.chain, "Create", &apipb.CreateRequest{Resource: resource, Namespace: ns, Object: body,
		FieldValidation: q.Get("fieldValidation"), DryRun: dry}, s.registry.Create)
	code := http.StatusCreated
	if t.kind == nil {
		code = http.StatusOK // reviews and token requests are answered, not stored
	}
	respond(w, code, resp, err, t)
}

func (s *Handler) restUpdate(ctx context.Context, w http.ResponseWriter, r *http.Request, t *restTarget) {
	body, dry, err := readWrite(r)
	if err != nil {
		writeError(w, err, t)
		return
	}
	if n := request.MetadataName(body); n != t.name {
		writeError(w, statusWithCode(http.StatusBadRequest, "BadRequest", fmt.Sprintf("the name of the object (%s) does not match the name on the URL (%s)", n, t.name)), t)
		return
	}
	body, warnings, err := t.toStored(body, r.URL.Query().Get("fieldValidation"))
	if err != nil {
		writeError(w, err, t)
		return
	}
	writeWarnings(w, warnings)
	q := r.URL.Query()
	req := &apipb.UpdateRequest{Resource: t.resource, Namespace: t.namespace, Object: body,
		FieldValidation: q.Get("fieldValidation"), DryRun: dry, FieldManager: q.Get("fieldManager")}
	var resp *apipb.ObjectResponse
	if t.sub == "status" {
		resp, err = filters.Unary(ctx, s.chain, "UpdateStatus", req, s.registry.UpdateStatus)
	} else {
		resp, err = filters.Unary(ctx, s.chain, "Update", req, s.registry.Update)
	}
	respond(w, http.StatusOK, resp, err, t)
}

// respond answers with the object a write returned, and its warnings.
func respond(w http.ResponseWriter, code int, o *apipb.ObjectResponse, err error, t *restTarget) {
	if err != nil {
		writeError(w, err, t)
		return
	}
	writeWarnings(w, o.Warnings)
	writeJSON(w, code, t.fromStored(o.Object))
}

// restPatch serves PATCH: the Content-Type is the patch type.
func (s *Handler) restPatch(ctx context.Context, w http.ResponseWriter, r *http.Request, t *restTarget) {
	mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	switch mt {
	case patch.JSONPatchType, patch.MergePatchType, patch.StrategicMergePatchType, patch.ApplyPatchType:
	default:
		writeError(w, statusWithCode(http.StatusUnsupportedMediaType, "UnsupportedMediaType",
			fmt.Sprintf("PATCH needs the patch type as its Content-Type: %s, %s or %s (not %q)", patch.JSONPatchType, patch.MergePatchType, patch.StrategicMergePatchType, mt)), t)
		return
	}
	body, dry, err := readWrite(r)
	if err != nil {
		writeError(w, err, t)
		return
	}
	if t.conv != nil {
		s.restPatchConverted(ctx, w, r, t, mt, body, dry)
		return
	}
	q := r.URL.Query()
	force := false
	switch v := q.Get("force"); v {
	case "", "false":
	case "true":
		force = true
	default:
		writeError(w, apierrors.Invalid("force: Invalid value: %q: must be true or false", v), t)
		return
	}
	resp, err := filters.Unary(ctx, s.chain, "Patch", &apipb.PatchRequest{Resource: t.resource, Namespace: t.namespace, Name: t.name, PatchType: mt, Patch: body,
		Subresource: t.sub, FieldValidation: q.Get("fieldValidation"), DryRun: dry, FieldManager: q.Get("fieldManager"), Force: force}, s.registry.Patch)
	respond(w, http.StatusOK, resp, err, t)
}

// restLogs serves pods/log: the container's output as text/plain,
// streamed as it comes with follow=true.
func (s *Handler) restLogs(ctx context.Context, w http.ResponseWriter, r *http.Request, t *restTarget) {
	q := r.URL.Query()
	req := &apipb.PodLogsRequest{Namespace: t.namespace, Name: t.name, Container: q.Get("container"), SinceTime: q.Get("sinceTime")}
	for name, dst := range map[string]*bool{"follow": &req.Follow, "previous": &req.Previous, "timestamps": &req.Timestamps} {
		v := q.Get(name) // as Kubernetes reads a boolean parameter: 0 and false are false
		*dst = v != "" && v != "0" && !strings.EqualFold(v, "false")
	}
	if v := q.Get("sinceSeconds"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 {
			writeError(w, apierrors.Invalid("sinceSeconds: Invalid value: %q: must be greater than 0", v), t)
			return
		}
		req.SinceSeconds = n
	}
	var limit int64 = -1
	for name, dst := range map[string]*int64{"tailLines": &req.TailLines, "limitBytes": &limit} {
		if v := q.Get(name); v != "" {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n < 0 || name == "limitBytes" && n == 0 {
				writeError(w, apierrors.Invalid("%s: Invalid value: %q: must be a positive integer", name, v), t)
				return
			}
			*dst = n
		}
	}
	flusher, _ := w.(http.Flusher)
	started := false
	start := func() {
		if !started {
			started = true
			w.Header().Set("Content-Type", "text/plain")
			w.WriteHeader(http.StatusOK)
			if flusher != nil {
				flusher.Flush()
			}
		}
	}
	errLimit := errors.New("limitBytes reached")
	send := func(m *apipb.LogChunk) error {
		start()
		data := m.Data
		if limit >= 0 && int64(len(data)) > limit {
			data = data[:limit]
		}
		if _, err := w.Write(data); err != nil {
			return err
		}
		if flusher != nil {
			flusher.Flush()
		}
		if limit >= 0 {
			if limit -= int64(len(data)); limit == 0 {
				return errLimit
			}
		}
		return nil
	}
	err := filters.Stream(ctx, s.chain, "PodLogs", req, func(ctx context.Context) error {
		return s.proxy.PodLogs(ctx, req, restSender[apipb.LogChunk]{send: send, header: start})
	})
	switch {
	case err == nil || errors.Is(err, errLimit) || ctx.Err() != nil:
		start()
	case !started:
		writeError(w, err, t)
	default:
		fmt.Fprintf(w, "\nerror: %s\n", status.Convert(err).Message()) // the stream broke after the headers went out
	}
}

// restBind serves pods/binding (a Binding: the scheduler's verb, which
// client-go schedulers use).
func (s *Handler) restBind(ctx context.Context, w http.ResponseWriter, r *http.Request, t *restTarget) {
	body, err := readBody(r)
	if err != nil {
		writeError(w, err, t)
		return
	}
	var b struct {
		Metadata struct {
			Name        string            `json:"name"`
			UID         string            `json:"uid"`
			Annotations map[string]string `json:"annotations"`
		} `json:"metadata"`
		Target struct {
			Kind, Name string
		} `json:"target"`
	}
	if err := json.Unmarshal(body, &b); err != nil {
		writeError(w, apierrors.Invalid("Binding: %v", err), t)
		return
	}
	if b.Metadata.Name != "" && b.Metadata.Name != t.name {
		writeError(w, apierrors.Invalid("metadata.name: Invalid value: %q: does not match the pod (%q)", b.Metadata.Name, t.name), t)
		return
	}
	if b.Target.Kind != "" && b.Target.Kind != "Node" {
		writeError(w, apierrors.Invalid("target.kind: Unsupported value: %q: supported values: \"Node\"", b.Target.Kind), t)
		return
	}
	if _, err := filters.Unary(ctx, s.chain, "Bind", &apipb.BindRequest{Namespace: t.namespace, Name: t.name, NodeName: b.Target.Name, Uid: b.Metadata.UID, Annotations: b.Metadata.Annotations}, s.registry.Bind); err != nil {
		writeError(w, err, t)
		return
	}
	writeObject(w, http.StatusCreated, restStatus{Kind: "Status", APIVersion: "v1", Status: "Success", Code: http.StatusCreated})
}

// restDeleteCollection serves DELETE on a collection: each object the
// selectors match is deleted through the Delete RPC (so each deletion is
// authorized, admitted and finalized as a single one would be; Kubernetes
// authorizes the deletecollection verb once instead).
func (s *Handler) restDeleteCollection(ctx context.Context, w http.ResponseWriter, r *http.Request, t *restTarget) {
	// The same options as a single delete, for each object; read before
	// anything is deleted (a dry run or a bad body deletes nothing).
	opts, err := deleteRequest(r, t)
	if err != nil {
		writeError(w, err, t)
		return
	}
	if opts.Preconditions != nil {
		writeError(w, apierrors.Invalid("preconditions: Forbidden: a collection delete takes no preconditions (they name one object)"), t)
		return
	}
	q := r.URL.Query()
	list, err := filters.Unary(ctx, s.chain, "List", &apipb.ListRequest{Resource: t.resource, Namespace: t.namespace, LabelSelector: q.Get("labelSelector"), FieldSelector: q.Get("fieldSelector")}, s.registry.List)
	if err != nil {
		writeError(w, err, t)
		return
	}
	for _, it := range list.Items {
		var m struct {
			Metadata struct{ Name, Namespace string } `json:"metadata"`
		}
		if err := json.Unmarshal(it, &m); err != nil {
			writeError(w, status.Errorf(codes.Internal, "decode: %v", err), t)
			return
		}
		_, err := filters.Unary(ctx, s.chain, "Delete", &apipb.DeleteRequest{Resource: t.resource, Namespace: m.Metadata.Namespace, Name: m.Metadata.Name,
			GracePeriodSeconds: opts.GracePeriodSeconds, PropagationPolicy: opts.PropagationPolicy}, s.registry.Delete)
		if err != nil && status.Code(err) != codes.NotFound {
			writeError(w, err, t)
			return
		}
	}
	w.Header().Set("Content-Type", contentJSON)
	w.WriteHeader(http.StatusOK)
	fmt.Fprintf(w, `{"kind":%q,"apiVersion":%q,"metadata":{"resourceVersion":"%d"},"items":[]}`+"\n", t.kind.Kind+"List", t.kind.APIVersion, list.ResourceVersion)
}

// deleteOptionsBody is metav1.DeleteOptions as clients send it.
type deleteOptionsBody struct {
	GracePeriodSeconds *int64 `json:"gracePeriodSeconds"`
	Preconditions      *struct {
		UID             *string `json:"uid"`
		ResourceVersion *string `json:"resourceVersion"`
	} `json:"preconditions"`
	PropagationPolicy *string  `json:"propagationPolicy"`
	OrphanDependents  *bool    `json:"orphanDependents"`
	DryRun            []string `json:"dryRun"`
}

func (s *Handler) restDelete(ctx context.Context, w http.ResponseWriter, r *http.Request, t *restTarget) {
	req, err := deleteRequest(r, t)
	if err != nil {
		writeError(w, err, t)
		return
	}
	req.Name = t.name
	resp, err := filters.Unary(ctx, s.chain, "Delete", req, s.registry.Delete)
	if err != nil {
		writeError(w, err, t)
		return
	}
	writeJSON(w, http.StatusOK, t.fromStored(resp.Object))
}

// deleteRequest reads a delete's options — the DeleteOptions body (JSON,
// YAML or protobuf: client-go's typed clients send it as protobuf when
// they speak it, as Kubernetes' e2e framework does) and the query
// parameters, which win — into the request every object is deleted with.
func deleteRequest(r *http.Request, t *restTarget) (*apipb.DeleteRequest, error) {
	var opts deleteOptionsBody
	b, err := readBodyUpTo(r, 64<<10)
	if err != nil {
		return nil, err
	}
	if len(bytes.TrimSpace(b)) > 0 {
		if err = json.Unmarshal(b, &opts); err != nil {
			return nil, statusWithCode(http.StatusBadRequest, "BadRequest", "DeleteOptions: "+err.Error())
		}
	}
	q := r.URL.Query()
	if v := q.Get("gracePeriodSeconds"); v != "" {
		g, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return nil, apierrors.Invalid("gracePeriodSeconds: Invalid value: %q", v)
		}
		opts.GracePeriodSeconds = &g
	}
	if v := q.Get("propagationPolicy"); v != "" {
		opts.PropagationPolicy = &v
	}
	if len(opts.DryRun) > 0 || q.Get("dryRun") != "" {
		// Refused rather than done for real: nothing is deleted.
		return nil, apierrors.Invalid("dryRun: delete with dryRun is not supported by kobune (nothing was deleted)")
	}
	req := &apipb.DeleteRequest{Resource: t.resource, Namespace: t.namespace, GracePeriodSeconds: opts.GracePeriodSeconds}
	switch {
	case opts.PropagationPolicy != nil:
		req.PropagationPolicy = *opts.PropagationPolicy
	case opts.OrphanDependents != nil && *opts.OrphanDependents:
		req.PropagationPolicy = "Orphan"
	}
	if p := opts.Preconditions; p != nil {
		req.Preconditions = &apipb.Preconditions{}
		if p.UID != nil {
			req.Preconditions.Uid = *p.UID
		}
		if p.ResourceVersion != nil {
			req.Preconditions.ResourceVersion = *p.ResourceVersion
		}
	}
	return req, nil
}

// dryRun reads the dryRun query parameter: "All" or nothing.
func dryRun(v string) (bool, error) {
	switch v {
	case "":
		return false, nil
	case "All":
		return true, nil
	}
	return false, apierrors.Invalid("dryRun: Unsupported value: %q: supported values: \"All\"", v)
}

// tokenRequestFor gives a TokenRequest body the ServiceAccount's name from
// the URL (serviceaccounts/NAME/token), as the Create RPC expects.
func tokenRequestFor(body []byte, account string) ([]byte, error) {
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil {
		return nil, apierrors.Invalid("TokenRequest: %v", err)
	}
	md, _ := m["metadata"].(map[string]any)
	if md == nil {
		md = map[string]any{}
	}
	md["name"] = account
	m["metadata"] = md
	return json.Marshal(m)
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
