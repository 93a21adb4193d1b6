package e2e

import (
	"fmt"
	"net"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/kobune/kobune/agent/network"
	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/api/networking"
	"github.com/kobune/kobune/client"
	"github.com/kobune/kobune/test/benchreport"
	"github.com/kobune/kobune/test/reachability"
)

// TestBenchPolicyPropagation is `make bench`'s NetworkPolicy propagation
// benchmark (as root, only when KOBUNE_BENCH_REPORT names the report): on
// two real nodes, a server pod on each is isolated by a policy that
// admits pods labelled role=client; 20 times a client pod (on one node,
// then the other) is relabelled into the policy, and the time from the
// API's answer to the update to the client reaching both servers (a new
// TCP connection every 20 ms to each, 20 ms timeout) is measured; then
// the label is removed and both must be unreachable again before the
// next round.
func TestBenchPolicyPropagation(t *testing.T) {
	report := benchreport.Path(t)
	requireRoot(t)
	srv, nodes, ctx := startWithControllers(t, 8*time.Minute, "10.244.95.0/24", "10.244.96.0/24")
	c := srv.Client
	pods := client.For[*core.Pod](c)
	mk := func(name, node string, labels map[string]string) {
		p := &core.Pod{ObjectMeta: meta.ObjectMeta{Name: name, Namespace: "default", Labels: labels},
			Spec: core.PodSpec{NodeName: node, Containers: []core.Container{{Name: "app", Image: "kobune.local/labapp:1.0", ImagePullPolicy: core.PullNever,
				Ports: []core.ContainerPort{{Name: "http", ContainerPort: 8080}}}}}}
		if _, err := pods.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	mk("srv-1", nodes[0].name, map[string]string{"app": "srv"})
	mk("srv-2", nodes[1].name, map[string]string{"app": "srv"})
	mk("cli-1", nodes[0].name, map[string]string{"app": "cli"})
	mk("cli-2", nodes[1].name, map[string]string{"app": "cli"})
	running := map[string]*core.Pod{}
	for _, name := range []string{"srv-1", "srv-2", "cli-1", "cli-2"} {
		running[name] = waitForPod(t, ctx, pods, name, 0, func(p *core.Pod, _ bool) bool { return p.Status.Phase == core.PodRunning && p.Status.PodIP != "" })
	}
	if _, err := client.For[*networking.NetworkPolicy](c).Create(ctx, &networking.NetworkPolicy{ObjectMeta: meta.ObjectMeta{Namespace: "default", Name: "clients"},
		Spec: networking.NetworkPolicySpec{PodSelector: meta.LabelSelector{MatchLabels: map[string]string{"app": "srv"}},
			Ingress: []networking.NetworkPolicyIngressRule{{From: []networking.NetworkPolicyPeer{{PodSelector: &meta.LabelSelector{MatchLabels: map[string]string{"role": "client"}}}}}}}}); err != nil {
		t.Fatal(err)
	}
	targets := []string{net.JoinHostPort(running["srv-1"].Status.PodIP, "8080"), net.JoinHostPort(running["srv-2"].Status.PodIP, "8080")}
	// reach reports, for each server, whether a new connection from the
	// client's network namespace is set up within 20 ms.
	reach := func(cli *core.Pod) []bool {
		out := make([]bool, len(targets))
		var wg sync.WaitGroup
		for i, addr := range targets {
			wg.Add(1)
			go func() {
				defer wg.Done()
				out[i] = inPodNetns(cli, func() error {
					conn, err := net.DialTimeout("tcp", addr, 20*time.Millisecond)
					if err == nil {
						conn.Close()
					}
					return err
				}) == nil
			}()
		}
		wg.Wait()
		return out
	}
	until := func(cli *core.Pod, want bool, limit time.Duration) (time.Duration, bool) {
		start := time.Now()
		for time.Since(start) < limit {
			all := true
			for _, ok := range reach(cli) {
				all = all && ok == want
			}
			if all {
				return time.Since(start), true
			}
			time.Sleep(20 * time.Millisecond)
		}
		return 0, false
	}
	relabel := func(name string, labels map[string]string) time.Time {
		if _, err := pods.Modify(ctx, "default", name, func(p *core.Pod) error { p.Labels = labels; return nil }); err != nil {
			t.Fatal(err)
		}
		return time.Now()
	}
	for _, cli := range []string{"cli-1", "cli-2"} {
		if _, ok := until(running[cli], false, 15*time.Second); !ok {
			t.Fatalf("%s reaches a server before it is labelled a client", cli)
		}
	}
	var lat []time.Duration
	for i := range 20 {
		name := []string{"cli-1", "cli-2"}[i%2]
		relabel(name, map[string]string{"app": "cli", "role": "client"})
		d, ok := until(running[name], true, 15*time.Second)
		if !ok {
			t.Fatalf("round %d: %s relabelled role=client does not reach both servers within 15 s", i, name)
		}
		lat = append(lat, d)
		relabel(name, map[string]string{"app": "cli"})
		if _, ok := until(running[name], false, 15*time.Second); !ok {
			t.Fatalf("round %d: %s still reaches a server 15 s after losing its role label", i, name)
		}
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	p50, p99 := lat[len(lat)/2], lat[len(lat)-1]
	benchreport.Append(t, report, fmt.Sprintf(`
## NetworkPolicy propagation

Written by `+"`make bench`"+` (test/e2e TestBenchPolicyPropagation, as root) on %s: two real nodes, a server pod on each isolated by a policy that admits pods labelled role=client; 20 times a client pod (alternating nodes) was relabelled into the policy, timed from the API's answer to the update until the client set up a new TCP connection to both servers (one tried every 20 ms to each, 20 ms timeout, so the figures are about 20–40 ms coarse); between rounds the label was removed and both servers had to become unreachable again.

| p50 | p99 (the slowest of 20) | goal |
|---|---|---|
| %d ms | %d ms | p99 < 1 s (%s) |
`, time.Now().UTC().Format("2006-01-02 15:04 MST"), p50.Milliseconds(), p99.Milliseconds(), benchreport.Verdict(p99 < time.Second)))
}

// podNetns is the pod's network namespace (the agent names it after the
// first 12 characters of the pod's UID, its sandbox ID).
func podNetns(p *core.Pod) string { return network.NetnsPath(string(p.UID)[:12]) }

// inPodNetns runs f in the pod's network namespace.
func inPodNetns(p *core.Pod, f func() error) error { return reachability.InNetns(podNetns(p), f) }
