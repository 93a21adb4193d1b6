package dns

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/discovery"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/test/benchreport"
)

// TestBenchClusterDNS is `make bench`'s cluster DNS benchmark (run only
// when KOBUNE_BENCH_REPORT names the report to append to): the agent's
// DNS server with 10,000 Services (and their slices) in its caches
// answers A questions for random Service names over UDP on loopback at
// 1,000 queries a second for 10 s, each timed from send to answer.
func TestBenchClusterDNS(t *testing.T) {
	report := benchreport.Path(t)
	const services, rate, seconds = 10000, 1000, 10
	yes := true
	svcs := make([]*core.Service, services)
	slices := make([]*discovery.EndpointSlice, services)
	for i := range services {
		name := fmt.Sprintf("s%05d", i)
		svcs[i] = &core.Service{ObjectMeta: meta.ObjectMeta{Namespace: "default", Name: name},
			Spec: core.ServiceSpec{ClusterIP: fmt.Sprintf("10.96.%d.%d", i/250, i%250+1), Ports: []core.ServicePort{{Name: "http", Port: 80, Protocol: core.ProtocolTCP}}}}
		slices[i] = &discovery.EndpointSlice{ObjectMeta: meta.ObjectMeta{Namespace: "default", Name: name + "-x", Labels: map[string]string{discovery.LabelServiceName: name}},
			Endpoints: []discovery.Endpoint{{Addresses: []string{fmt.Sprintf("10.244.%d.%d", i/250, i%250+1)}, Conditions: discovery.EndpointConditions{Ready: &yes}}}}
	}
	s := &Server{Domain: "cluster.local", Source: Source{Services: func() []*core.Service { return svcs }, Slices: func() []*discovery.EndpointSlice { return slices }}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	addr := serve(t, ctx, s)
	c := &dns.Client{Net: "udp", Timeout: time.Second}
	warm := new(dns.Msg)
	warm.SetQuestion("s00000.default.svc.cluster.local.", dns.TypeA)
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if _, _, err := c.Exchange(warm, addr); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the DNS server never answered")
		}
	}

	var mu sync.Mutex
	var lat []time.Duration
	errs := 0
	var wg sync.WaitGroup
	tick := time.NewTicker(time.Second / rate)
	defer tick.Stop()
	start := time.Now()
	for i := range rate * seconds {
		<-tick.C
		wg.Add(1)
		go func() {
			defer wg.Done()
			m := new(dns.Msg)
			m.SetQuestion(fmt.Sprintf("s%05d.default.svc.cluster.local.", (i*7919)%services), dns.TypeA)
			r, rtt, err := c.Exchange(m, addr)
			mu.Lock()
			defer mu.Unlock()
			if err != nil || r.Rcode != dns.RcodeSuccess || len(r.Answer) != 1 {
				errs++
				return
			}
			lat = append(lat, rtt)
		}()
	}
	wg.Wait()
	took := time.Since(start)
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	q := func(f float64) time.Duration {
		if len(lat) == 0 {
			return 0
		}
		return lat[int(f*float64(len(lat)-1))]
	}
	met := benchreport.Verdict(q(0.99) < 2*time.Millisecond && errs == 0)
	section := fmt.Sprintf(`
## Cluster DNS

Written by `+"`make bench`"+` (agent/dns TestBenchClusterDNS) on %s: the agent's DNS server with %d Services and their EndpointSlices in its caches; A questions for Service names, %d a second for %d s (%d sent in %s), over UDP on loopback, each timed from send to answer.

| p50 | p99 | max | errors | goal |
|---|---|---|---|---|
| %s | %s | %s | %d | p99 < 2 ms, 0 errors (%s) |
`, time.Now().UTC().Format("2006-01-02 15:04 MST"), services, rate, seconds, rate*seconds, took.Round(10*time.Millisecond),
		usf(q(0.5)), usf(q(0.99)), usf(q(1)), errs, met)
	benchreport.Append(t, report, section)
}

func usf(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d.Microseconds())/1000) }
