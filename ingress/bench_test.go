package ingress

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/discovery"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/api/networking"
	"github.com/kobune/kobune/apiserver/testserver"
	"github.com/kobune/kobune/client"
	"github.com/kobune/kobune/test/benchreport"
)

// TestBenchIngress is `make bench`'s ingress benchmark (only when
// KOBUNE_BENCH_REPORT names the report): requests per second and latency
// through the controller (routing, endpoint choice, httputil's proxy,
// access log, metrics) against the same requests sent straight to the
// backend, in the same run, over loopback TCP with keep-alive, 16
// clients at once; the two take turns in 10 rounds.
func TestBenchIngress(t *testing.T) {
	report := benchreport.Path(t)
	s := testserver.New(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c := s.Client
	backend, port := backendServer(t, "B")
	for _, err := range []error{
		func() error {
			_, err := client.For[*core.Service](c).Create(ctx, &core.Service{ObjectMeta: meta.ObjectMeta{Namespace: "default", Name: "b"},
				Spec: core.ServiceSpec{Selector: map[string]string{"app": "b"}, Ports: []core.ServicePort{{Name: "http", Port: 80, TargetPort: meta.FromInt(8080)}}}})
			return err
		}(),
		func() error {
			_, err := client.For[*discovery.EndpointSlice](c).Create(ctx, slice("default", "b", "b-1", port, endpoint("127.0.0.1", true)))
			return err
		}(),
		func() error {
			_, err := client.For[*networking.IngressClass](c).Create(ctx, &networking.IngressClass{ObjectMeta: meta.ObjectMeta{Name: "kobune"}, Spec: networking.IngressClassSpec{Controller: DefaultControllerName}})
			return err
		}(),
		func() error {
			class := "kobune"
			_, err := client.For[*networking.Ingress](c).Create(ctx, &networking.Ingress{ObjectMeta: meta.ObjectMeta{Namespace: "default", Name: "b"},
				Spec: networking.IngressSpec{IngressClassName: &class, DefaultBackend: &networking.IngressBackend{Service: &networking.IngressServiceBackend{Name: "b", Port: networking.ServiceBackendPort{Number: 80}}}}})
			return err
		}(),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	ic, err := New(Config{AccessLog: func(string) {}}, c, NewMetrics())
	if err != nil {
		t.Fatal(err)
	}
	go ic.Run(ctx)
	addrs := make(chan net.Addr, 1)
	go func() { _ = ic.Serve(ctx, Listeners{HTTP: "127.0.0.1:0"}, func(h, _, _ net.Addr) { addrs <- h }) }()
	through := (<-addrs).String()
	for deadline := time.Now().Add(10 * time.Second); len(ic.state.Load().endpoints["default/b:80"]) == 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the controller never listed the backend")
		}
	}
	const clients, perClient, rounds = 16, 200, 10
	run := func(addr string) (time.Duration, []time.Duration) {
		tr := &http.Transport{MaxIdleConnsPerHost: clients}
		defer tr.CloseIdleConnections()
		hc := &http.Client{Transport: tr}
		var mu sync.Mutex
		var lat []time.Duration
		var wg sync.WaitGroup
		start := time.Now()
		for range clients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var mine []time.Duration
				for range perClient {
					req, _ := http.NewRequest(http.MethodGet, "http://"+addr+"/x", nil)
					req.Host = "shop.example.com"
					t0 := time.Now()
					resp, err := hc.Do(req)
					if err != nil {
						t.Error(err)
						return
					}
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode != 200 {
						t.Errorf("status %d", resp.StatusCode)
						return
					}
					mine = append(mine, time.Since(t0))
				}
				mu.Lock()
				lat = append(lat, mine...)
				mu.Unlock()
			}()
		}
		wg.Wait()
		return time.Since(start), lat
	}
	var directTime, proxyTime time.Duration
	var directLat, proxyLat []time.Duration
	run(backend) // warm-up
	run(through)
	for range rounds {
		d, l := run(backend)
		directTime, directLat = directTime+d, append(directLat, l...)
		d, l = run(through)
		proxyTime, proxyLat = proxyTime+d, append(proxyLat, l...)
	}
	pct := func(d []time.Duration, p float64) time.Duration {
		sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
		return d[int(float64(len(d)-1)*p)]
	}
	n := float64(clients * perClient * rounds)
	directRPS, proxyRPS := n/directTime.Seconds(), n/proxyTime.Seconds()
	us := func(d time.Duration) string { return fmt.Sprintf("%d µs", d.Microseconds()) }
	benchreport.Append(t, report, fmt.Sprintf(`
## Ingress

Written by `+"`make bench`"+` (ingress TestBenchIngress) on %s: %d clients at once, %d requests each, keep-alive, over loopback TCP, to a Go HTTP backend — straight, and through kobune-ingress (routing, endpoint choice, net/http/httputil's proxy, access log and metrics) serving an Ingress of that backend; the two took turns in %d rounds. This machine has 2 cores: the clients, the proxy and the backend share them.

| | requests/s | p50 | p99 |
|---|---|---|---|
| straight to the backend | %.0f | %s | %s |
| through kobune-ingress | %.0f | %s | %s |

Through the controller: %.0f %% of the direct requests per second; p99 %.1f× the direct one.
`, time.Now().UTC().Format("2006-01-02 15:04 MST"), clients, perClient, rounds,
		directRPS, us(pct(directLat, 0.5)), us(pct(directLat, 0.99)), proxyRPS, us(pct(proxyLat, 0.5)), us(pct(proxyLat, 0.99)),
		100*proxyRPS/directRPS, float64(pct(proxyLat, 0.99))/float64(pct(directLat, 0.99))))
}
