package rest

import (
	"context"
	"net/http"
	"net/http/httputil"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kobune/kobune/apiserver/filters"
	"github.com/kobune/kobune/proto/apipb"
)

// restProxy serves pods/NAME/proxy/PATH and services/NAME/proxy/PATH
// (kube-apiserver's proxy subresources): the request passes the handler
// chain as the proxy subresource with its method's verb (pods/proxy get,
// create ...), then the API server sends it on to the pod, or to a ready
// endpoint of the Service (nodeproxy.Locate), and streams the answer back
// — status, headers and body as the pod wrote them, but for the links of
// an HTML answer and a redirect's Location, put under the proxy path
// (proxyrewrite.go). The client's credentials are not passed on.
func (s *Handler) restProxy(ctx context.Context, w http.ResponseWriter, r *http.Request, namespace, resource, id, path string) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		bodyDeadline(w, r)
	}
	req := &apipb.ProxyRequest{Namespace: namespace, Resource: resource, Name: id, Method: r.Method, Path: path}
	_, err := filters.Unary(ctx, s.chain, "Proxy", req, func(ctx context.Context, req *apipb.ProxyRequest) (struct{}, error) {
		loc, err := s.proxy.Locate(ctx, namespace, resource, id)
		if err != nil {
			return struct{}{}, err
		}
		if (r.Method == http.MethodGet || r.Method == http.MethodHead) && strings.HasSuffix(r.URL.Path, "/proxy") {
			// .../proxy without its slash: a browser is sent to .../proxy/,
			// so that the pod's relative links resolve under it (as
			// kube-apiserver's proxy handler does); other methods go on
			// to the pod's /.
			u := *r.URL
			u.Path += "/"
			http.Redirect(w, r, u.RequestURI(), http.StatusMovedPermanently)
			return struct{}{}, nil
		}
		rp := &httputil.ReverseProxy{
			Rewrite: func(pr *httputil.ProxyRequest) {
				pr.Out.URL.Scheme, pr.Out.URL.Host, pr.Out.Host = loc.Scheme, loc.Host, loc.Host
				pr.Out.URL.Path, pr.Out.URL.RawPath, pr.Out.URL.RawQuery = path, "", r.URL.RawQuery
				for h := range pr.Out.Header {
					if h == "Authorization" || strings.HasPrefix(h, "Impersonate-") {
						pr.Out.Header.Del(h)
					}
				}
			},
			Transport: s.proxy.PodTransport,
			ModifyResponse: func(resp *http.Response) error {
				rewriteResponse(resp, loc.Host, "/api/v1/namespaces/"+namespace+"/"+resource+"/"+id+"/proxy")
				return nil
			},
			ErrorHandler: func(w http.ResponseWriter, _ *http.Request, err error) {
				writeError(w, status.Errorf(codes.Unavailable, "error trying to reach %s %s at %s: %v", strings.TrimSuffix(resource, "s"), id, loc.Host, err), nil)
			},
		}
		rp.ServeHTTP(w, r.WithContext(ctx))
		return struct{}{}, nil
	})
	if err != nil {
		writeError(w, err, nil)
	}
}
