package e2e

import (
	"bufio"
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
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/networking"
	"github.com/kobune/kobune/client"
	"github.com/kobune/kobune/test/reachability"
)

// labAnswer is one request through the lab's ingress controller.
type labAnswer struct {
	status int
	body   string
	cn     string // the HTTPS certificate's common name
}

// labRequest sends GET path with Host host to addr ("ip:port") from
// inside the network namespace netns, over TLS with SNI sni when sni is
// set; everything happens on the namespace's thread (net/http would dial
// from goroutines of its own, outside the namespace).
func labRequest(netns, addr, host, path, sni string) (labAnswer, error) {
	var a labAnswer
	err := reachability.InNetns("/run/netns/"+netns, func() error {
		conn, err := net.DialTimeout("tcp", addr, 2*time.Second)
		if err != nil {
			return err
		}
		defer conn.Close()
		_ = conn.SetDeadline(time.Now().Add(3 * time.Second))
		if sni != "" {
			tc := tls.Client(conn, &tls.Config{ServerName: sni, InsecureSkipVerify: true})
			if err := tc.Handshake(); err != nil {
				return err
			}
			a.cn = tc.ConnectionState().PeerCertificates[0].Subject.CommonName
			conn = tc
		}
		req, _ := http.NewRequest(http.MethodGet, "http://"+host+path, nil)
		req.Close = true
		if err := req.Write(conn); err != nil {
			return err
		}
		resp, err := http.ReadResponse(bufio.NewReader(conn), req)
		if err != nil {
			return err
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		a.status, a.body = resp.StatusCode, string(b)
		return nil
	})
	return a, err
}

// ingressOnTheLab checks kobune-ingress as the lab installs it (a
// DaemonSet on the nodes' host network, with its own ServiceAccount):
// two hosts and two paths to two Services, over HTTP and over HTTPS with
// SNI, the status addresses, 503 while a backend is scaled to zero, and
// a rolling update behind the Ingress during which no request fails.
// Requests go from node-1's network namespace to node-2's address (the
// controller there forwards to pods on either node).
func ingressOnTheLab(t *testing.T, ctx context.Context, c *client.Client) {
	kobectl := func(args ...string) string {
		t.Helper()
		out, err := exec.Command(filepath.Join(repoRoot(), "bin", "kobectl"), append([]string{"--kubeconfig", labKubeconfig}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("kobectl %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	// The controller's identity holds what it needs, nothing more.
	sa := "system:serviceaccount:kobune-ingress:kobune-ingress"
	for _, q := range []struct {
		args []string
		want string
	}{{[]string{"list", "endpointslices.discovery.k8s.io"}, "yes"}, {[]string{"update", "ingresses", "--subresource", "status", "-n", "shop"}, "yes"},
		{[]string{"create", "pods", "-n", "kobune-ingress"}, "no"}, {[]string{"update", "ingresses", "-n", "shop"}, "no"}} {
		cmd := exec.Command(filepath.Join(repoRoot(), "bin", "kobectl"), append(append([]string{"--kubeconfig", labKubeconfig, "auth", "can-i"}, q.args...), "--as", sa)...)
		out, _ := cmd.CombinedOutput()
		if strings.TrimSpace(string(out)) != q.want {
			t.Errorf("kobune-ingress can-i %v: %q, want %s", q.args, out, q.want)
		}
	}
	secret := labTLSSecret(t, "a.lab.test")
	manifest := `apiVersion: v1
kind: Namespace
metadata: {name: shop}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: front, namespace: shop}
spec:
  replicas: 2
  selector: {matchLabels: {app: front}}
  strategy: {rollingUpdate: {maxUnavailable: 0, maxSurge: 1}}
  template:
    metadata: {labels: {app: front}}
    spec:
      containers:
      - name: web
        image: kobune.local/labapp:1.0
        args: [--term-delay=2s]
        ports: [{containerPort: 8080}]
        readinessProbe: {httpGet: {path: /readyz, port: 8080}, periodSeconds: 1}
---
apiVersion: v1
kind: Service
metadata: {name: front, namespace: shop}
spec: {selector: {app: front}, ports: [{port: 80, targetPort: 8080}]}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: api, namespace: shop}
spec:
  replicas: 1
  selector: {matchLabels: {app: api}}
  template:
    metadata: {labels: {app: api}}
    spec:
      containers:
      - name: api
        image: kobune.local/labapp:2.0
        ports: [{containerPort: 8080}]
        readinessProbe: {httpGet: {path: /readyz, port: 8080}, periodSeconds: 1}
---
apiVersion: v1
kind: Service
metadata: {name: api, namespace: shop}
spec: {selector: {app: api}, ports: [{name: http, port: 80, targetPort: 8080}]}
---
` + secret + `
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: shop, namespace: shop}
spec:
  tls: [{hosts: [a.lab.test], secretName: a-tls}]
  rules:
  - host: a.lab.test
    http:
      paths:
      - {path: /, pathType: Prefix, backend: {service: {name: front, port: {number: 80}}}}
      - {path: /page/api, pathType: Prefix, backend: {service: {name: api, port: {name: http}}}}
  - host: b.lab.test
    http:
      paths:
      - {path: /, pathType: Prefix, backend: {service: {name: api, port: {number: 80}}}}
`
	apply := exec.Command(filepath.Join(repoRoot(), "bin", "kobectl"), "--kubeconfig", labKubeconfig, "apply", "-f", "-")
	apply.Stdin = strings.NewReader(manifest)
	if out, err := apply.CombinedOutput(); err != nil {
		t.Fatalf("apply the shop: %v\n%s", err, out)
	}
	kobectl("rollout", "status", "deployment/front", "-n", "shop", "--timeout=120s")
	kobectl("rollout", "status", "deployment/api", "-n", "shop", "--timeout=120s")
	nodeIP := map[string]string{}
	nodes, _, err := client.For[*core.Node](c).List(ctx, "", client.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes {
		for _, a := range n.Status.Addresses {
			if a.Type == "InternalIP" {
				nodeIP[n.Name] = a.Address
			}
		}
	}
	http80, https443 := net.JoinHostPort(nodeIP["node-2"], "80"), net.JoinHostPort(nodeIP["node-2"], "443")
	ask := func(host, path, sni string) labAnswer {
		addr := http80
		if sni != "" {
			addr = https443
		}
		a, err := labRequest("kobune-lab-node-1", addr, host, path, sni)
		if err != nil {
			a.body = err.Error()
		}
		return a
	}
	until := func(what string, ok func() bool) {
		t.Helper()
		for deadline := time.Now().Add(60 * time.Second); !ok(); time.Sleep(200 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: not within 60 s", what)
			}
		}
	}
	until("a.lab.test served", func() bool { return strings.Contains(ask("a.lab.test", "/", "").body, "labapp 1.0 on front-") })
	for _, tc := range []struct {
		host, path, sni, want, cn string
	}{
		{"a.lab.test", "/page/shop", "", "labapp 1.0 on front-", ""},
		{"a.lab.test", "/page/api/items", "", "labapp 2.0 on api-", ""},
		{"b.lab.test", "/page/x", "", "labapp 2.0 on api-", ""},
		{"a.lab.test", "/page/secure", "a.lab.test", "labapp 1.0 on front-", "a.lab.test"},
		{"b.lab.test", "/page/x", "b.lab.test", "labapp 2.0 on api-", "kobune-ingress default certificate"},
	} {
		if a := ask(tc.host, tc.path, tc.sni); a.status != 200 || !strings.Contains(a.body, tc.want) || a.cn != tc.cn {
			t.Errorf("GET %s%s (SNI %q): %d %q certificate %q, want 200 %q certificate %q", tc.host, tc.path, tc.sni, a.status, a.body, a.cn, tc.want, tc.cn)
		}
	}
	if a := ask("c.lab.test", "/", ""); a.status != 404 {
		t.Errorf("GET c.lab.test/: %d %q, want 404 (no rule, no default backend)", a.status, a.body)
	}
	until("the Ingress's status names both nodes", func() bool {
		in, err := client.For[*networking.Ingress](c).Get(ctx, "shop", "shop")
		if err != nil || len(in.Status.LoadBalancer.Ingress) != 2 {
			return false
		}
		return in.Status.LoadBalancer.Ingress[0].IP == nodeIP["node-1"] && in.Status.LoadBalancer.Ingress[1].IP == nodeIP["node-2"]
	})
	if out := kobectl("get", "ingress", "-n", "shop"); !strings.Contains(out, nodeIP["node-1"]+","+nodeIP["node-2"]) {
		t.Errorf("kobectl get ingress shows no addresses:\n%s", out)
	}
	// A backend scaled to zero answers 503, and comes back.
	kobectl("scale", "deployment/api", "-n", "shop", "--replicas=0")
	until("503 with api at zero", func() bool { return ask("b.lab.test", "/page/x", "").status == 503 })
	if a := ask("b.lab.test", "/page/x", ""); !strings.Contains(a.body, "shop/api:80 has no ready endpoint") {
		t.Errorf("503 body: %q", a.body)
	}
	kobectl("scale", "deployment/api", "-n", "shop", "--replicas=1")
	until("api back", func() bool { return ask("b.lab.test", "/page/x", "").status == 200 })

	// A rolling update behind the Ingress: requests all the way through,
	// none fails.
	var sent, failed atomic.Int64
	var lastFail atomic.Value
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			a := ask("a.lab.test", "/page/rolling", "")
			sent.Add(1)
			if a.status != 200 || !strings.Contains(a.body, "labapp") {
				failed.Add(1)
				lastFail.Store(fmt.Sprintf("%d %q", a.status, a.body))
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	kobectl("set", "image", "deployment/front", "-n", "shop", "web=kobune.local/labapp:2.0")
	kobectl("rollout", "status", "deployment/front", "-n", "shop", "--timeout=180s")
	time.Sleep(3 * time.Second) // the old pods' term-delay: they leave while requests flow
	close(stop)
	<-done
	if failed.Load() > 0 {
		t.Errorf("rolling update behind the Ingress: %d of %d requests failed (last: %v)", failed.Load(), sent.Load(), lastFail.Load())
	}
	if a := ask("a.lab.test", "/", ""); !strings.Contains(a.body, "labapp 2.0 on front-") {
		t.Errorf("after the rollout a.lab.test answers %q", a.body)
	}
	t.Logf("rolling update behind the Ingress: %d requests, %d failed", sent.Load(), failed.Load())
	// node-2's controller logged the requests.
	pods, _, err := client.For[*core.Pod](c).List(ctx, "kobune-ingress", client.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods {
		if p.Spec.NodeName != "node-2" {
			continue
		}
		if logs := kobectl("logs", "-n", "kobune-ingress", p.Name, "--tail=500"); !strings.Contains(logs, `"a.lab.test" "GET /page/rolling HTTP/1.1" 200`) || !strings.Contains(logs, "shop/front:80 -> 10.244.") {
			t.Errorf("node-2's kobune-ingress access log lacks the rolling requests:\n%s", logs)
		}
	}
	if os.Getenv("KOBUNE_BENCH_REPORT") != "" {
		benchIngressOnTheLab(t, ctx, c, nodeIP["node-2"])
	}
	// Gone before the next check, which watches every pod of the lab
	// through a control-plane outage.
	kobectl("delete", "namespace", "shop", "--wait=false")
	until("namespace shop deleted", func() bool {
		_, err := client.For[*core.Namespace](c).Get(ctx, "", "shop")
		return client.IsNotFound(err)
	})
}

// benchIngressOnTheLab is make bench's Ingress figure on real pods: from
// node-1's namespace, 8 keep-alive connections at once send 500 requests
// each straight to a front pod, and the same through kobune-ingress on
// node-2 (host a.lab.test); the two take turns in 5 rounds.
func benchIngressOnTheLab(t *testing.T, ctx context.Context, c *client.Client, ingressIP string) {
	pods, _, err := client.For[*core.Pod](c).List(ctx, "shop", client.ListOptions{LabelSelector: "app=front"})
	if err != nil || len(pods) == 0 {
		t.Fatalf("front pods: %v", err)
	}
	podAddr := net.JoinHostPort(pods[0].Status.PodIP, "8080")
	const conns, per, rounds = 8, 500, 5
	run := func(addr, host string) (time.Duration, []time.Duration, error) {
		lat := make([][]time.Duration, conns)
		errs := make(chan error, conns)
		start := time.Now()
		for i := range conns {
			go func() {
				errs <- reachability.InNetns("/run/netns/kobune-lab-node-1", func() error {
					conn, err := net.DialTimeout("tcp", addr, 2*time.Second)
					if err != nil {
						return err
					}
					defer conn.Close()
					br := bufio.NewReader(conn)
					for range per {
						req, _ := http.NewRequest(http.MethodGet, "http://"+host+"/", nil)
						t0 := time.Now()
						if err := req.Write(conn); err != nil {
							return err
						}
						resp, err := http.ReadResponse(br, req)
						if err != nil {
							return err
						}
						_, _ = io.Copy(io.Discard, resp.Body)
						resp.Body.Close()
						if resp.StatusCode != 200 {
							return fmt.Errorf("status %d", resp.StatusCode)
						}
						lat[i] = append(lat[i], time.Since(t0))
					}
					return nil
				})
			}()
		}
		for range conns {
			if err := <-errs; err != nil {
				return 0, nil, err
			}
		}
		var all []time.Duration
		for _, l := range lat {
			all = append(all, l...)
		}
		return time.Since(start), all, nil
	}
	var dt, pt time.Duration
	var dl, pl []time.Duration
	for range rounds {
		d, l, err := run(podAddr, "a.lab.test")
		if err != nil {
			t.Errorf("ingress benchmark, straight to the pod: %v", err)
			return
		}
		dt, dl = dt+d, append(dl, l...)
		d, l, err = run(net.JoinHostPort(ingressIP, "80"), "a.lab.test")
		if err != nil {
			t.Errorf("ingress benchmark, through kobune-ingress: %v", err)
			return
		}
		pt, pl = pt+d, append(pl, l...)
	}
	pct := func(d []time.Duration, p float64) time.Duration {
		sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
		return d[int(float64(len(d)-1)*p)]
	}
	n := float64(conns * per * rounds)
	ms := func(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d.Microseconds())/1000) }
	appendReport(t, fmt.Sprintf(`
## Ingress on the lab

Written by `+"`make bench`"+` (test/e2e TestLabUpAndDown, as root) on %s: from node-1's network namespace, %d keep-alive connections at once, %d requests each, to a labapp pod straight (its address, port 8080) and through kobune-ingress on node-2 (its address, port 80, Host a.lab.test, which sends each request to one of two pods on either node); the two took turns in %d rounds. Both nodes, the proxy and labapp share this machine's 2 cores.

| | requests/s | p50 | p99 |
|---|---|---|---|
| straight to a pod | %.0f | %s | %s |
| through kobune-ingress | %.0f | %s | %s |

Through the controller: %.0f %% of the direct requests per second; p99 %.1f× the direct one.
`, time.Now().UTC().Format("2006-01-02 15:04 MST"), conns, per, rounds, n/dt.Seconds(), ms(pct(dl, 0.5)), ms(pct(dl, 0.99)),
		n/pt.Seconds(), ms(pct(pl, 0.5)), ms(pct(pl, 0.99)), 100*(n/pt.Seconds())/(n/dt.Seconds()), float64(pct(pl, 0.99))/float64(pct(dl, 0.99))))
}

// labTLSSecret is a kubernetes.io/tls Secret a-tls for host, as YAML.
func labTLSSecret(t *testing.T, host string) string {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(7), Subject: pkix.Name{CommonName: host}, DNSNames: []string{host},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kb, _ := x509.MarshalECPrivateKey(key)
	crt := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	k := pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb})
	indent := func(b []byte) string {
		return "    " + strings.ReplaceAll(strings.TrimSpace(string(b)), "\n", "\n    ")
	}
	return "apiVersion: v1\nkind: Secret\nmetadata: {name: a-tls, namespace: shop}\ntype: kubernetes.io/tls\nstringData:\n  tls.crt: |\n" + indent(crt) + "\n  tls.key: |\n" + indent(k) + "\n"
}
