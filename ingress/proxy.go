package ingress

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"
)

// ServeHTTP routes one request: match, pick a ready endpoint, proxy, log.
func (ic *Controller) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	st := ic.state.Load()
	host := r.Host
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	rec := &recorder{ResponseWriter: w, status: http.StatusOK}
	b, ok := st.table.Match(host, r.URL.Path)
	upstream := "-"
	switch {
	case !ok:
		http.Error(rec, "404 Not Found: no Ingress rule matches "+host+r.URL.Path+" and no Ingress has a default backend", http.StatusNotFound)
	case len(st.endpoints[b.String()]) == 0:
		http.Error(rec, "503 Service Unavailable: "+b.String()+" has no ready endpoint", http.StatusServiceUnavailable)
	default:
		pick := &picked{eps: st.endpoints[b.String()], next: ic.counter(b.String())}
		ic.proxy.ServeHTTP(rec, r.WithContext(context.WithValue(r.Context(), pickKey{}, pick)))
		upstream = pick.last
	}
	d := time.Since(start)
	ingressName, service := "", ""
	if ok {
		ingressName, service = b.Ingress, b.String()
	}
	if ic.metrics != nil {
		ic.metrics.Requests.WithLabelValues(ingressName, service, strconv.Itoa(rec.status)).Inc()
		ic.metrics.Duration.WithLabelValues(ingressName).Observe(d.Seconds())
	}
	if service == "" {
		service = "-"
	}
	ic.cfg.AccessLog(fmt.Sprintf("%s %q %q %d %d %.3fms %s -> %s",
		r.RemoteAddr, r.Host, r.Method+" "+r.URL.RequestURI()+" "+r.Proto, rec.status, rec.bytes, float64(d.Microseconds())/1000, service, upstream))
}

// pickKey carries a request's endpoint choice to the transport.
type pickKey struct{}

// newProxy is the one reverse proxy of the controller: the request's
// context carries the endpoints to try (the transport picks), so nothing
// is built per request.
func newProxy(base http.RoundTripper, m *Metrics) *httputil.ReverseProxy {
	return &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.Out.URL.Scheme, pr.Out.URL.Host = "http", "backend" // the transport picks the endpoint
			pr.Out.Host = pr.In.Host
			pr.SetXForwarded()
		},
		Transport: &retrying{base: base, metrics: m},
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			http.Error(w, "502 Bad Gateway: "+err.Error(), http.StatusBadGateway)
		},
		FlushInterval: -1,
	}
}

func (ic *Controller) counter(key string) *atomic.Uint64 {
	if c, ok := ic.next.Load(key); ok {
		return c.(*atomic.Uint64)
	}
	c, _ := ic.next.LoadOrStore(key, new(atomic.Uint64))
	return c.(*atomic.Uint64)
}

// picked hands out a backend's endpoints in turn, for one request.
type picked struct {
	eps  []string
	next *atomic.Uint64
	last string
}

func (p *picked) pick() string {
	p.last = p.eps[int(p.next.Add(1)-1)%len(p.eps)]
	return p.last
}

// retrying sends a request to an endpoint and, when the endpoint refuses
// the connection (a pod that just went away) and the request can be sent
// again (no body, or one that can be replayed), to the next one — at most
// once per endpoint.
type retrying struct {
	base    http.RoundTripper
	metrics *Metrics
}

func (t *retrying) RoundTrip(r *http.Request) (*http.Response, error) {
	pick, ok := r.Context().Value(pickKey{}).(*picked)
	if !ok || len(pick.eps) == 0 {
		return nil, errors.New("no endpoint chosen")
	}
	var err error
	for i := 0; i < len(pick.eps); i++ {
		r.URL.Host = pick.pick()
		if i > 0 {
			if r.Body != nil && r.Body != http.NoBody {
				if r.GetBody == nil {
					break
				}
				body, gerr := r.GetBody()
				if gerr != nil {
					break
				}
				r.Body = body
			}
			if t.metrics != nil {
				t.metrics.UpstreamRetries.Inc()
			}
		}
		var resp *http.Response
		resp, err = t.base.RoundTrip(r)
		if err == nil || !refused(err) || r.Context().Err() != nil {
			return resp, err
		}
	}
	return nil, err
}

// refused: the connection was never made (nothing was sent).
func refused(err error) bool {
	var op *net.OpError
	return errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.EHOSTUNREACH) ||
		(errors.As(err, &op) && op.Op == "dial" && !errors.Is(err, context.Canceled))
}

// recorder notes the status and size of the answer for the access log.
type recorder struct {
	http.ResponseWriter
	status int
	bytes  int64
	wrote  bool
}

func (r *recorder) WriteHeader(code int) {
	if !r.wrote {
		r.status, r.wrote = code, true
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(b []byte) (int, error) {
	r.wrote = true
	n, err := r.ResponseWriter.Write(b)
	r.bytes += int64(n)
	return n, err
}

// Flush passes streaming answers on.
func (r *recorder) Flush() {
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection (upgrades).
func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

var _ io.Writer = (*recorder)(nil)
