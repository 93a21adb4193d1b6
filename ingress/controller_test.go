package ingress

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/discovery"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/api/networking"
	"github.com/kobune/kobune/apiserver/testserver"
	"github.com/kobune/kobune/client"
)

// backendServer answers every request with its name.
func backendServer(t *testing.T, name string) (addr string, port int32) {
	t.Helper()
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "%s %s host=%s xff=%s", name, r.URL.Path, r.Host, r.Header.Get("X-Forwarded-For"))
	}))
	t.Cleanup(s.Close)
	_, p, _ := net.SplitHostPort(s.Listener.Addr().String())
	var n int32
	fmt.Sscan(p, &n)
	return s.Listener.Addr().String(), n
}

func tlsSecret(t *testing.T, ns, name, host string) *core.Secret {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: host}, DNSNames: []string{host},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kb, _ := x509.MarshalECPrivateKey(key)
	return &core.Secret{ObjectMeta: meta.ObjectMeta{Namespace: ns, Name: name}, Type: "kubernetes.io/tls",
		Data: map[string][]byte{"tls.crt": pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
			"tls.key": pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb})}}
}

func slice(ns, svc, name string, port int32, eps ...discovery.Endpoint) *discovery.EndpointSlice {
	pn := "http"
	return &discovery.EndpointSlice{ObjectMeta: meta.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{discovery.LabelServiceName: svc}},
		AddressType: discovery.AddressTypeIPv4, Ports: []discovery.EndpointPort{{Name: &pn, Port: &port}}, Endpoints: eps}
}

func endpoint(ip string, ready bool) discovery.Endpoint {
	return discovery.Endpoint{Addresses: []string{ip}, Conditions: discovery.EndpointConditions{Ready: &ready}}
}

// TestControllerServesIngresses runs the controller against a real API
// server, with backends on loopback: two hosts and two paths to two
// Services (by port number and by port name), TLS by SNI from
// kubernetes.io/tls Secrets, an Ingress of another class ignored, 404
// without a rule, 503 for a backend scaled to zero, not-ready endpoints
// skipped, a refused connection retried on the next endpoint, the
// status written, an access log line per request and the metrics.
func TestControllerServesIngresses(t *testing.T) {
	s := testserver.New(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := s.Client
	create := func(o meta.Object) {
		t.Helper()
		var err error
		switch v := o.(type) {
		case *core.Namespace:
			_, err = client.For[*core.Namespace](c).Create(ctx, v)
		case *core.Service:
			_, err = client.For[*core.Service](c).Create(ctx, v)
		case *discovery.EndpointSlice:
			_, err = client.For[*discovery.EndpointSlice](c).Create(ctx, v)
		case *core.Secret:
			_, err = client.For[*core.Secret](c).Create(ctx, v)
		case *networking.IngressClass:
			_, err = client.For[*networking.IngressClass](c).Create(ctx, v)
		case *networking.Ingress:
			_, err = client.For[*networking.Ingress](c).Create(ctx, v)
		}
		if err != nil {
			t.Fatalf("create %T %s: %v", o, o.GetObjectMeta().Name, err)
		}
	}
	_, portA := backendServer(t, "A")
	_, portB := backendServer(t, "B")
	_, portB2 := backendServer(t, "B2")
	create(&core.Namespace{ObjectMeta: meta.ObjectMeta{Name: "shop"}})
	svc := func(name string) *core.Service {
		return &core.Service{ObjectMeta: meta.ObjectMeta{Namespace: "shop", Name: name},
			Spec: core.ServiceSpec{Selector: map[string]string{"app": name}, Ports: []core.ServicePort{{Name: "http", Port: 80, TargetPort: meta.FromInt(8080)}}}}
	}
	create(svc("a"))
	create(svc("b"))
	create(slice("shop", "a", "a-1", portA, endpoint("127.0.0.1", true)))
	// b: a not-ready endpoint (never used) and a ready one.
	create(slice("shop", "b", "b-1", portB, endpoint("127.0.0.1", true)))
	create(slice("shop", "b", "b-2", portB2, endpoint("127.0.0.2", false)))
	create(tlsSecret(t, "shop", "a-tls", "a.example.com"))
	create(tlsSecret(t, "shop", "b-tls", "b.example.com"))
	create(&networking.IngressClass{ObjectMeta: meta.ObjectMeta{Name: "kobune", Annotations: map[string]string{networking.DefaultClassAnnotation: "true"}},
		Spec: networking.IngressClassSpec{Controller: DefaultControllerName}})
	create(&networking.IngressClass{ObjectMeta: meta.ObjectMeta{Name: "other"}, Spec: networking.IngressClassSpec{Controller: "example.com/other"}})
	prefix, other := networking.PathTypePrefix, "other"
	path := func(p, svc string, port networking.ServiceBackendPort) networking.HTTPIngressPath {
		return networking.HTTPIngressPath{Path: p, PathType: &prefix, Backend: networking.IngressBackend{Service: &networking.IngressServiceBackend{Name: svc, Port: port}}}
	}
	create(&networking.Ingress{ObjectMeta: meta.ObjectMeta{Namespace: "shop", Name: "web"}, Spec: networking.IngressSpec{ // class from the default
		TLS: []networking.IngressTLS{{Hosts: []string{"a.example.com"}, SecretName: "a-tls"}, {Hosts: []string{"b.example.com"}, SecretName: "b-tls"}},
		Rules: []networking.IngressRule{
			{Host: "a.example.com", HTTP: &networking.HTTPIngressRuleValue{Paths: []networking.HTTPIngressPath{
				path("/", "a", networking.ServiceBackendPort{Number: 80}), path("/b", "b", networking.ServiceBackendPort{Name: "http"})}}},
			{Host: "b.example.com", HTTP: &networking.HTTPIngressRuleValue{Paths: []networking.HTTPIngressPath{path("/", "b", networking.ServiceBackendPort{Number: 80})}}},
		}}})
	create(&networking.Ingress{ObjectMeta: meta.ObjectMeta{Namespace: "shop", Name: "elsewhere"}, Spec: networking.IngressSpec{IngressClassName: &other,
		Rules: []networking.IngressRule{{Host: "c.example.com", HTTP: &networking.HTTPIngressRuleValue{Paths: []networking.HTTPIngressPath{path("/", "a", networking.ServiceBackendPort{Number: 80})}}}}}})

	var logMu sync.Mutex
	var logLines []string
	m := NewMetrics()
	ic, err := New(Config{PublishAddresses: []string{"192.0.2.10", "192.0.2.11"}, AccessLog: func(l string) { logMu.Lock(); logLines = append(logLines, l); logMu.Unlock() }}, c, m)
	if err != nil {
		t.Fatal(err)
	}
	go ic.Run(ctx)
	addrs := make(chan [3]net.Addr, 1)
	go func() {
		if err := ic.Serve(ctx, Listeners{HTTP: "127.0.0.1:0", HTTPS: "127.0.0.1:0", Metrics: "127.0.0.1:0"}, func(h, s, m net.Addr) { addrs <- [3]net.Addr{h, s, m} }); err != nil {
			t.Error(err)
		}
	}()
	a := <-addrs
	httpAddr, httpsAddr, metricsAddr := a[0].String(), a[1].String(), a[2].String()
	get := func(host, path string) (int, string) {
		t.Helper()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+httpAddr+path, nil)
		req.Host = host
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("GET %s%s: %v", host, path, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	eventually := func(what string, f func() bool) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); !f(); time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: not within 10 s", what)
			}
		}
	}
	eventually("the first table", ic.Synced)
	for _, tc := range []struct {
		host, path string
		code       int
		body       string
	}{
		{"a.example.com", "/", 200, "A /"},
		{"a.example.com:80", "/x/y", 200, "A /x/y"},
		{"a.example.com", "/b/c", 200, "B /b/c host=a.example.com xff=127.0.0.1"},
		{"b.example.com", "/", 200, "B /"},
		{"c.example.com", "/", 404, "no Ingress rule matches c.example.com/"},
		{"nope.test", "/", 404, "no Ingress rule matches"},
	} {
		for i := 0; i < 3; i++ { // round robin: B2 (not ready) never answers
			code, body := get(tc.host, tc.path)
			if code != tc.code || !strings.Contains(body, tc.body) {
				t.Errorf("GET %s%s: %d %q, want %d %q", tc.host, tc.path, code, body, tc.code, tc.body)
			}
		}
	}
	// HTTPS: the certificate by SNI; an unknown name gets the default one.
	for _, tc := range []struct{ sni, cn string }{{"a.example.com", "a.example.com"}, {"b.example.com", "b.example.com"}, {"nope.test", "kobune-ingress default certificate"}} {
		conn, err := tls.Dial("tcp", httpsAddr, &tls.Config{ServerName: tc.sni, InsecureSkipVerify: true})
		if err != nil {
			t.Fatalf("TLS to %s: %v", tc.sni, err)
		}
		cn := conn.ConnectionState().PeerCertificates[0].Subject.CommonName
		fmt.Fprintf(conn, "GET / HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", tc.sni)
		b, _ := io.ReadAll(conn)
		conn.Close()
		if cn != tc.cn {
			t.Errorf("SNI %s: certificate %q, want %q", tc.sni, cn, tc.cn)
		}
		if tc.sni == "b.example.com" && !strings.Contains(string(b), "B /") {
			t.Errorf("HTTPS to b.example.com answered %q", b)
		}
	}
	// A refused connection goes to the next endpoint: b gets a dead one.
	dead, _ := net.Listen("tcp", "127.0.0.1:0")
	_, dp, _ := net.SplitHostPort(dead.Addr().String())
	dead.Close()
	var deadPort int32
	fmt.Sscan(dp, &deadPort)
	if _, err := client.For[*discovery.EndpointSlice](c).Create(ctx, slice("shop", "b", "b-3", deadPort, endpoint("127.0.0.1", true))); err != nil {
		t.Fatal(err)
	}
	eventually("the dead endpoint in the table", func() bool { return len(ic.state.Load().endpoints["shop/b:80"]) == 2 })
	for i := 0; i < 6; i++ {
		if code, body := get("b.example.com", "/"); code != 200 || !strings.HasPrefix(body, "B /") {
			t.Errorf("GET b.example.com with a dead endpoint: %d %q, want every request answered by B", code, body)
		}
	}
	// Scaled to zero: 503 naming the backend.
	for _, n := range []string{"a-1"} {
		if err := client.For[*discovery.EndpointSlice](c).Delete(ctx, "shop", n, client.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	eventually("503 for a without endpoints", func() bool { code, _ := get("a.example.com", "/"); return code == 503 })
	if code, body := get("a.example.com", "/"); code != 503 || !strings.Contains(body, "shop/a:80 has no ready endpoint") {
		t.Errorf("a scaled to zero: %d %q", code, body)
	}
	// Status: the publish addresses, on the served Ingress only.
	eventually("status.loadBalancer", func() bool {
		in, err := client.For[*networking.Ingress](c).Get(ctx, "shop", "web")
		return err == nil && len(in.Status.LoadBalancer.Ingress) == 2 && in.Status.LoadBalancer.Ingress[0].IP == "192.0.2.10"
	})
	if in, _ := client.For[*networking.Ingress](c).Get(ctx, "shop", "elsewhere"); len(in.Status.LoadBalancer.Ingress) != 0 {
		t.Errorf("the other class's Ingress got a status: %+v", in.Status)
	}
	// Access log and metrics.
	logMu.Lock()
	joined := strings.Join(logLines, "\n")
	logMu.Unlock()
	for _, want := range []string{`"a.example.com" "GET /b/c HTTP/1.1" 200`, "shop/b:http -> 127.0.0.1:", `"c.example.com" "GET / HTTP/1.1" 404`, "503"} {
		if !strings.Contains(joined, want) {
			t.Errorf("access log lacks %q:\n%s", want, joined)
		}
	}
	resp, err := http.Get("http://" + metricsAddr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{`kobune_ingress_requests_total{ingress="shop/web",service="shop/b:http",status="200"} 3`,
		`kobune_ingress_requests_total{ingress="",service="",status="404"} 7`, `kobune_ingress_requests_total{ingress="shop/web",service="shop/a:80",status="503"}`,
		"kobune_ingress_upstream_retries_total", "kobune_ingress_ingresses 1"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("/metrics lacks %q:\n%s", want, b)
		}
	}
}
