package rest

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/gorilla/websocket"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kobune/kobune/apiserver/apierrors"
	"github.com/kobune/kobune/apiserver/filters"
	"github.com/kobune/kobune/apiserver/registry"
	"github.com/kobune/kobune/proto/apipb"
)

// The read verbs over REST: get, list (as JSON or Tables), watch (JSON
// lines) and a pod's log. Each passes the handler chain to the registry's
// verb of the same name.

func (s *Handler) restGet(ctx context.Context, w http.ResponseWriter, r *http.Request, t *restTarget) {
	resp, err := filters.Unary(ctx, s.chain, "Get", &apipb.GetRequest{Resource: t.resource, Namespace: t.namespace, Name: t.name, Subresource: t.sub}, s.registry.Get)
	if err != nil {
		writeError(w, err, t)
		return
	}
	obj := resp.Object
	if wantsTable(r) && t.sub == "" {
		writeTable(w, r, t.kind, [][]byte{obj}, "", "", nil)
		return
	}
	obj, err = t.fromStored(ctx, obj)
	if err != nil {
		writeError(w, err, t)
		return
	}
	writeJSON(w, http.StatusOK, obj)
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
	vs, err := t.versionFields(req.FieldSelector)
	if err != nil {
		writeError(w, err, t)
		return
	}
	if vs != nil {
		withoutFields(req)
	}
	// The list is written inside the chain, so that the seat API Priority
	// and Fairness gave it is held until the last byte is sent (as
	// kube-apiserver's handler writes inside its filters): a client that
	// reads slowly cannot make the server hold many large lists at once.
	if _, err := filters.Unary(ctx, s.chain, "List", req, func(ctx context.Context, req *apipb.ListRequest) (*apipb.ListResponse, error) {
		list, err := s.registry.List(ctx, req)
		if err == nil && (!wantsTable(r) || vs != nil) {
			// Converted before the first byte is sent: a conversion
			// webhook's failure is the list's answer.
			list.Items, err = t.fromStoredAll(ctx, list.Items)
		}
		if err == nil && vs != nil {
			list.Items, list.Continue, list.RemainingItemCount = vs.keep(list.Items), "", nil
		}
		if err == nil {
			writeList(w, r, t, list)
		}
		return list, err
	}); err != nil {
		writeError(w, err, t)
	}
}

// writeList answers a list: a Table when asked for one, else the kind's
// List in JSON, written item by item.
func writeList(w http.ResponseWriter, r *http.Request, t *restTarget, list *apipb.ListResponse) {
	rv := strconv.FormatInt(list.ResourceVersion, 10)
	if wantsTable(r) {
		writeTable(w, r, t.kind, list.Items, rv, list.Continue, list.RemainingItemCount)
		return
	}
	w.Header().Set("Content-Type", contentJSON)
	w.WriteHeader(http.StatusOK)
	apiVersion := t.apiVersion()
	cont := ""
	if list.Continue != "" {
		cont = fmt.Sprintf(`,"continue":%q`, list.Continue)
	}
	if list.RemainingItemCount != nil {
		cont += fmt.Sprintf(`,"remainingItemCount":%d`, *list.RemainingItemCount)
	}
	fmt.Fprintf(w, `{"kind":%q,"apiVersion":%q,"metadata":{"resourceVersion":%q%s},"items":[`, t.kind.Kind+"List", apiVersion, rv, cont)
	for i, it := range list.Items {
		if i > 0 {
			_, _ = w.Write([]byte{','})
		}
		_, _ = w.Write(it)
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
	vs, err := t.versionFields(req.FieldSelector)
	if err != nil {
		writeError(w, err, t)
		return
	}
	var wf *watchFilter
	if vs != nil {
		req.FieldSelector, req.PreviousObjects, wf = "", true, &watchFilter{sel: vs, matched: map[string]bool{}}
	}
	if sec, _ := strconv.Atoi(q.Get("timeoutSeconds")); sec > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Duration(sec)*time.Second)
		defer cancel()
	}
	flusher, _ := w.(http.Flusher)
	asTable, columnsSent := wantsTable(r) && t.kind != nil, false
	// Every write to the client has WatchWriteTimeout to go out: a
	// watcher that stops reading is closed instead of holding its handler
	// — and every event queued behind the blocked write — for good (20
	// such watchers held 1 GB). The deadline is lifted once the write is
	// out, so a quiet watch stays open.
	rc := http.NewResponseController(w)
	writeFailed := false
	write := func(f func() error) error {
		if writeFailed {
			return errWatcherGone
		}
		_ = rc.SetWriteDeadline(time.Now().Add(WatchWriteTimeout))
		err := f()
		if err == nil && flusher != nil {
			err = rc.Flush()
		}
		if err == nil {
			_ = rc.SetWriteDeadline(time.Time{})
		}
		writeFailed = err != nil
		return err
	}
	started := false
	start := func() {
		if !started {
			started = true
			w.Header().Set("Content-Type", contentJSON)
			_ = write(func() error { w.WriteHeader(http.StatusOK); return nil })
		}
	}
	send := func(ev *apipb.WatchEvent) error {
		obj := ev.Object
		if wf != nil && ev.Type != registry.Bookmark {
			objs := [][]byte{obj}
			if ev.PrevObject != nil {
				objs = append(objs, ev.PrevObject)
			}
			both, err := t.fromStoredAll(ctx, objs) // one review for the two
			if err != nil {
				return err
			}
			conv, prev := both[0], []byte(nil)
			if len(both) > 1 {
				prev = both[1]
			}
			typ := wf.event(ev.Type, conv, prev)
			if typ == "" {
				return nil // not selected at the URL's version
			}
			ev, obj = &apipb.WatchEvent{Type: typ, Object: conv, ResourceVersion: ev.ResourceVersion}, conv // at the URL's version already
		}
		start()
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
			var err error
			if obj, err = t.fromStored(ctx, obj); err != nil {
				return err
			}
		}
		return write(func() error {
			_, err := fmt.Fprintf(w, `{"type":%q,"object":%s}`+"\n", ev.Type, obj)
			return err
		})
	}
	err = filters.Stream(ctx, s.chain, "Watch", req, func(ctx context.Context) error {
		return s.registry.Watch(ctx, req, restSender[apipb.WatchEvent]{send: send, header: start})
	})
	if err == nil || ctx.Err() != nil || writeFailed {
		start()
		return // done, or the client is gone or stopped reading
	}
	if !started && status.Code(err) != codes.OutOfRange {
		writeError(w, err, t)
		return
	}
	// An expired revision ends the watch with an ERROR event holding a
	// 410 Status, which makes informers list again (Kubernetes does the
	// same).
	start()
	_ = write(func() error {
		_, err := fmt.Fprintf(w, `{"type":"ERROR","object":%s}`+"\n", statusJSON(err, t))
		return err
	})
}

var errWatcherGone = errors.New("the watcher stopped reading")

// WatchWriteTimeout is how long one event may take to reach a REST
// watcher before the watch is closed (the client resumes from its last
// resourceVersion, as after any closed watch).
var WatchWriteTimeout = 10 * time.Second

// restLogs serves pods/log: the container's output as text/plain,
// streamed as it comes with follow=true.
// The WebSocket subprotocols of pods/log (kube-apiserver's wsstream
// reader protocols).
const (
	logsBinary = "binary.k8s.io"
	logsBase64 = "base64.binary.k8s.io"
)

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
	// Over a WebSocket (as kube-apiserver serves logs too): each chunk a
	// binary message, or a text message of its base64 with
	// base64.binary.k8s.io; the end a close.
	var ws *websocket.Conn
	var wsFailed bool
	start := func() {
		if started {
			return
		}
		started = true
		if isWebSocket(r) {
			up := websocketUpgrader
			up.Subprotocols = []string{logsBinary, logsBase64}
			var err error
			if ws, err = up.Upgrade(w, r, nil); err != nil {
				wsFailed = true // the upgrader answered
			}
			return
		}
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(http.StatusOK)
		if flusher != nil {
			flusher.Flush()
		}
	}
	defer func() {
		if ws != nil {
			_ = ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""), time.Now().Add(time.Second))
			ws.Close()
		}
	}()
	errLimit := errors.New("limitBytes reached")
	send := func(m *apipb.LogChunk) error {
		start()
		data := m.Data
		if limit >= 0 && int64(len(data)) > limit {
			data = data[:limit]
		}
		switch {
		case wsFailed:
			return errUpgradeAnswered
		case ws != nil && ws.Subprotocol() == logsBase64:
			if err := ws.WriteMessage(websocket.TextMessage, []byte(base64.StdEncoding.EncodeToString(data))); err != nil {
				return err
			}
		case ws != nil:
			if err := ws.WriteMessage(websocket.BinaryMessage, data); err != nil {
				return err
			}
		default:
			if _, err := w.Write(data); err != nil {
				return err
			}
		}
		if flusher != nil && ws == nil {
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
	case ws != nil || wsFailed:
		// the stream broke after the upgrade: the close says it ended
	default:
		fmt.Fprintf(w, "\nerror: %s\n", status.Convert(err).Message()) // the stream broke after the headers went out
	}
}
