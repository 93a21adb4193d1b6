package apiserver_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/apiserver"
	"github.com/kobune/kobune/client"
)

// TestRESTProxiesToPodsAndServices: pods/NAME[:port]/proxy/PATH and
// services/[scheme:]NAME[:port]/proxy/PATH reach the pod (a Service: a
// ready endpoint of the port named, or of the Service port numbered), with
// the method, path, query and body, and bring back its status, headers and
// body; the client's credentials stay behind; the proxy subresource is
// authorized with the method's verb; a pod without an address, a loopback
// one, and a Service without endpoints are refused by name.
func TestRESTProxiesToPodsAndServices(t *testing.T) {
	// The "pod": a local server that says what it was asked. The API
	// server's dialer is pointed at it (the addresses below are not
	// reachable from a unit test), and records where it was sent.
	var mu sync.Mutex
	var dialled []string
	pod := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/page":
			// Links the proxy must put under its path (absolute paths of
			// the pod's), and others it must leave.
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			w.Header().Set("Connection", "close")
			fmt.Fprint(w, `<html><body><a href="/rewriteme?x=1">test</a><img src="/img.png"/><a href="relative">r</a><a href="http://elsewhere/y">e</a></body></html>`)
			return
		case "/moved":
			w.Header().Set("Connection", "close")
			http.Redirect(w, r, "/new-place", http.StatusFound)
			return
		}
		b, _ := io.ReadAll(r.Body)
		w.Header().Set("X-Pod", "yes")
		w.Header().Set("Connection", "close") // each request dials again: the test sees where it went
		w.WriteHeader(http.StatusTeapot)
		fmt.Fprintf(w, "%s %s?%s body=%s auth=%q", r.Method, r.URL.Path, r.URL.RawQuery, b, r.Header.Get("Authorization"))
	}))
	defer pod.Close()
	s := startSecured(t, func(c *apiserver.Config) {
		c.PodDial = func(ctx context.Context, network, addr string) (net.Conn, error) {
			mu.Lock()
			dialled = append(dialled, addr)
			mu.Unlock()
			return (&net.Dialer{}).DialContext(ctx, network, strings.TrimPrefix(pod.URL, "http://"))
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pods := client.For[*core.Pod](s.Client)
	mkPod := func(name, ip string) {
		p, err := pods.Create(ctx, &core.Pod{ObjectMeta: meta.ObjectMeta{Name: name, Namespace: "default", Labels: map[string]string{"app": "web"}},
			Spec: core.PodSpec{NodeName: "node-1", Containers: []core.Container{{Name: "c", Image: "i", Ports: []core.ContainerPort{{ContainerPort: 8080}}}}}})
		if err != nil {
			t.Fatal(err)
		}
		if ip != "" {
			p.Status.PodIP, p.Status.PodIPs = ip, []core.PodIP{{IP: ip}}
			if _, err := pods.UpdateStatus(ctx, p); err != nil {
				t.Fatal(err)
			}
		}
	}
	mkPod("web", "10.244.9.9")
	mkPod("pending", "")
	mkPod("local", "127.0.0.1")
	if _, err := client.For[*core.Service](s.Client).Create(ctx, &core.Service{ObjectMeta: meta.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: core.ServiceSpec{Selector: map[string]string{"app": "web"}, Ports: []core.ServicePort{{Name: "http", Port: 80, TargetPort: meta.FromInt(8080)}}}}); err != nil {
		t.Fatal(err)
	}
	// The endpoints: the pod's address, and an address that is no pod's
	// (which the proxy must never be sent to).
	if _, err := client.For[*core.Endpoints](s.Client).Create(ctx, &core.Endpoints{ObjectMeta: meta.ObjectMeta{Name: "web", Namespace: "default"},
		Subsets: []core.EndpointSubset{{Addresses: []core.EndpointAddress{{IP: "10.244.9.9", TargetRef: &core.ObjectReference{Kind: "Pod", Name: "web"}}, {IP: "10.0.0.1"}},
			Ports: []core.EndpointPort{{Name: "http", Port: 8080}}}}}); err != nil {
		t.Fatal(err)
	}
	c := newRESTClient(t, s.admin, s.Addr())
	for _, tt := range []struct{ method, path, want, host string }{
		{"GET", "/api/v1/namespaces/default/pods/web/proxy/some/path?x=1", "GET /some/path?x=1 body= auth=\"\"", "10.244.9.9:8080"},
		{"POST", "/api/v1/namespaces/default/pods/web:9090/proxy/", "POST /? body=hello auth=\"\"", "10.244.9.9:9090"},
		{"PUT", "/api/v1/namespaces/default/services/web:http/proxy/put", "PUT /put? body=hello auth=\"\"", "10.244.9.9:8080"},
		{"DELETE", "/api/v1/namespaces/default/services/http:web:80/proxy/gone", "DELETE /gone? body=hello auth=\"\"", "10.244.9.9:8080"},
	} {
		body := ""
		if tt.method != "GET" {
			body = "hello"
		}
		mu.Lock()
		dialled = nil
		mu.Unlock()
		code, h, b := c.do(tt.method, tt.path, "", body, "Authorization", "Bearer secret")
		if code != http.StatusTeapot || h.Get("X-Pod") != "yes" || string(b) != tt.want {
			t.Errorf("%s %s: %d %q %q; want the pod's 418 and %q", tt.method, tt.path, code, h.Get("X-Pod"), b, tt.want)
		}
		mu.Lock()
		if len(dialled) != 1 || dialled[0] != tt.host {
			t.Errorf("%s %s: dialled %v, want %s", tt.method, tt.path, dialled, tt.host)
		}
		mu.Unlock()
	}
	for _, tt := range []struct {
		path string
		code int
		want string
	}{
		{"/api/v1/namespaces/default/pods/pending/proxy/", 503, "the pod has no IP address yet"},
		{"/api/v1/namespaces/default/pods/local/proxy/", 400, "address not allowed"},
		{"/api/v1/namespaces/default/pods/nope/proxy/", 404, `nope\" not found`},
		{"/api/v1/namespaces/default/pods/ftp:web:21/proxy/", 400, "want [http|https:]name[:port]"},
		{"/api/v1/namespaces/default/services/web:81/proxy/", 503, "no service port 81 found for service"},
		{"/api/v1/namespaces/default/services/web:metrics/proxy/", 503, "no endpoints available for service"},
	} {
		code, _, b := c.do("GET", tt.path, "", "")
		if code != tt.code || !strings.Contains(string(b), tt.want) {
			t.Errorf("GET %s: %d %s; want %d saying %q", tt.path, code, b, tt.code, tt.want)
		}
	}
	// An HTML answer's links and a redirect's Location, put under the
	// proxy path as kube-apiserver's proxy puts them.
	const prefix = "/api/v1/namespaces/default/pods/web:8080/proxy"
	if code, _, b := c.do("GET", prefix+"/page", "", ""); code != 200 ||
		string(b) != `<html><body><a href="`+prefix+`/rewriteme?x=1">test</a><img src="`+prefix+`/img.png"/><a href="relative">r</a><a href="http://elsewhere/y">e</a></body></html>` {
		t.Errorf("an HTML answer through the proxy: %d %s", code, b)
	}
	noFollow := &http.Client{Transport: c.http.Transport, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	if resp, err := noFollow.Get(c.base + prefix + "/moved"); err != nil || resp.StatusCode != 302 || resp.Header.Get("Location") != prefix+"/new-place" {
		t.Errorf("a redirect through the proxy: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}
	// .../proxy without its slash: GET and HEAD are sent to .../proxy/
	// (301), other methods go on to the pod's /.
	noRedirect := &http.Client{Transport: c.http.Transport, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	req, _ := http.NewRequest("GET", c.base+"/api/v1/namespaces/default/pods/web/proxy?method=GET", nil)
	if resp, err := noRedirect.Do(req); err != nil || resp.StatusCode != 301 || resp.Header.Get("Location") != "/api/v1/namespaces/default/pods/web/proxy/?method=GET" {
		t.Errorf("GET .../proxy without a slash: %v %v, want 301 to .../proxy/?method=GET", resp, err)
	} else {
		resp.Body.Close()
	}
	if code, _, b := c.do("DELETE", "/api/v1/namespaces/default/pods/web/proxy?method=DELETE", "", ""); code != http.StatusTeapot || !strings.HasPrefix(string(b), "DELETE /?method=DELETE") {
		t.Errorf("DELETE .../proxy without a slash: %d %s", code, b)
	}
	// Authorized as the proxy subresource with the method's verb.
	code, _, b := c.do("POST", "/api/v1/namespaces/default/pods/web/proxy/", "", "x", "Impersonate-User", "dev")
	if code != 403 || !strings.Contains(string(b), `cannot create resource \"pods/proxy\"`) {
		t.Errorf("POST as dev: %d %s; want 403 naming create pods/proxy", code, b)
	}
}
