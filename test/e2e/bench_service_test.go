package e2e

import (
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/client"
	"github.com/kobune/kobune/test/benchreport"
)

// TestBenchEndpointPropagation is `make bench`'s endpoint propagation
// benchmark (as root, only when KOBUNE_BENCH_REPORT names the report): on
// two real nodes, 20 pods of a Service start one after another; each is
// timed from the moment a watch sees it Ready to the moment its address
// is in the nftables rules of both nodes (an element of the map
// service-endpoints; each node's table is read every
// 10 ms).
func TestBenchEndpointPropagation(t *testing.T) {
	report := benchreport.Path(t)
	requireRoot(t)
	srv, nodes, ctx := startWithControllers(t, 6*time.Minute, "10.244.97.0/24", "10.244.98.0/24")
	pods := client.For[*core.Pod](srv.Client)
	if _, err := client.For[*core.Service](srv.Client).Create(ctx, &core.Service{ObjectMeta: meta.ObjectMeta{Name: "prop", Namespace: "default"},
		Spec: core.ServiceSpec{Selector: map[string]string{"app": "prop"}, Ports: []core.ServicePort{{Name: "http", Port: 80, TargetPort: meta.FromString("http")}}}}); err != nil {
		t.Fatal(err)
	}
	inRules := func(n *node, ip string) bool {
		out, err := n.exec(ctx, "nft", "list", "table", "ip", "kobune-proxy")
		return err == nil && strings.Contains(out, ": "+ip+" . 8080") // an element of the map service-endpoints
	}
	var lat []time.Duration
	for i := range 20 {
		name := fmt.Sprintf("prop-%02d", i)
		p := &core.Pod{ObjectMeta: meta.ObjectMeta{Name: name, Namespace: "default", Labels: map[string]string{"app": "prop"}},
			Spec: core.PodSpec{NodeName: nodes[i%2].name, Containers: []core.Container{{Name: "app", Image: "kobune.local/labapp:1.0", ImagePullPolicy: core.PullNever,
				Ports: []core.ContainerPort{{Name: "http", ContainerPort: 8080}}, ReadinessProbe: httpProbe("/readyz")}}}}
		if _, err := pods.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
		ready := waitForPod(t, ctx, pods, name, 0, func(p *core.Pod, _ bool) bool { return core.PodIsReady(p) })
		seen := time.Now()
		ip := ready.Status.PodIP
		pending := map[*node]bool{nodes[0]: true, nodes[1]: true}
		for deadline := seen.Add(30 * time.Second); len(pending) > 0; time.Sleep(10 * time.Millisecond) {
			for n := range pending {
				if inRules(n, ip) {
					delete(pending, n)
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s (%s) not in every node's rules 30 s after it was Ready", name, ip)
			}
		}
		lat = append(lat, time.Since(seen))
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	p50, p99 := lat[len(lat)/2], lat[len(lat)-1]
	benchreport.Append(t, report, fmt.Sprintf(`
## Endpoint propagation

Written by `+"`make bench`"+` (test/e2e TestBenchEndpointPropagation, as root) on %s: two real nodes; 20 pods of one Service (a readiness probe every second) started one after another, alternating nodes; each timed from a watch seeing it Ready to its address being in the nftables table of both nodes (an element of the map service-endpoints; each read with `+"`nft list table`"+` every 10 ms, which adds up to about 10 ms).

| p50 | p99 (the slowest of 20) | goal |
|---|---|---|
| %d ms | %d ms | p99 < 1 s (%s) |
`, time.Now().UTC().Format("2006-01-02 15:04 MST"), p50.Milliseconds(), p99.Milliseconds(), benchreport.Verdict(p99 < time.Second)))
}
