package netpol

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"sort"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/knftables"

	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/api/networking"
	"github.com/kobune/kobune/test/benchreport"
	"github.com/kobune/kobune/test/reachability"
)

// TestBenchPolicyRules is `make bench`'s NetworkPolicy datapath benchmark
// (as root, only when KOBUNE_BENCH_REPORT names the report): on the kernel
// test's bridge of nine pod namespaces, TCP connection setup from x/b to
// x/a (port 80) is timed with no policy at all and then with 1,000
// NetworkPolicies that all select x/a (each allowing an address and a
// port of its own, so x/a's part of the allowed set has 1,000 elements;
// the last allows x/b), each time interleaved connection by connection
// with x/b to x/c, which no policy selects (the same moment's baseline).
// Also timed: building the 1,000 policies' table and loading it with nft.
func TestBenchPolicyRules(t *testing.T) {
	report := benchreport.Path(t)
	if os.Geteuid() != 0 {
		t.Skip("needs root: makes network namespaces and loads nftables rules into one")
	}
	if _, err := exec.LookPath("nft"); err != nil {
		t.Skip("nft is not installed (apt-get install -y nftables)")
	}
	lab := newBridgeLab(t)
	// On a node connection tracking is always on (the node proxy's NAT
	// rules need it); a chain that only counts new connections stands in
	// for those rules here, in both states.
	ct := exec.Command("ip", "netns", "exec", lab.node, "nft", "-f", "-")
	ct.Stdin = strings.NewReader("table ip kobune-bench-conntrack {\n chain forward {\n  type filter hook forward priority -50; policy accept;\n  ct state new counter\n }\n}\n")
	if out, err := ct.CombinedOutput(); err != nil {
		t.Fatalf("nft: %v: %s", err, out)
	}
	const rounds, perRound = 40, 100
	measure := func(n int) (selected, open []time.Duration) {
		t.Helper()
		// Let the kernel finish with the table just loaded (freeing the
		// old one) before timing.
		time.Sleep(300 * time.Millisecond)
		a, c := reachability.ModelIP("x", "a").String()+":80", reachability.ModelIP("x", "c").String()+":80"
		err := reachability.InNetns("/var/run/netns/"+lab.netns["x/b"], func() error {
			dial := func(addr string) (time.Duration, error) {
				begin := time.Now()
				conn, err := net.DialTimeout("tcp", addr, time.Second)
				d := time.Since(begin)
				if err != nil {
					return 0, err
				}
				conn.Close()
				return d, nil
			}
			for i := 0; i < n+50; i++ {
				da, err := dial(a)
				if err != nil {
					return err
				}
				dc, err := dial(c)
				if err != nil {
					return err
				}
				if i >= 50 { // warm-up
					selected, open = append(selected, da), append(open, dc)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatalf("connections from x/b: %v", err)
		}
		return selected, open
	}
	var nps []*networking.NetworkPolicy
	for i := 0; i < 1000; i++ {
		// Each policy allows an address of its own on a port of its own,
		// so x/a's set holds an element per policy; the last allows x/b.
		peer := networking.NetworkPolicyPeer{IPBlock: &networking.IPBlock{CIDR: fmt.Sprintf("172.%d.%d.1/32", 16+i/250, i%250)}}
		port, name := meta.FromInt(int32(1000+i)), fmt.Sprintf("p-%04d", i)
		if i == 999 {
			peer, port, name = networking.NetworkPolicyPeer{PodSelector: &meta.LabelSelector{MatchLabels: map[string]string{"pod": "b"}}}, meta.FromInt(80), "zz-allow-b"
		}
		nps = append(nps, &networking.NetworkPolicy{ObjectMeta: meta.ObjectMeta{Namespace: "x", Name: name},
			Spec: networking.NetworkPolicySpec{PodSelector: meta.LabelSelector{MatchLabels: map[string]string{"pod": "a"}},
				PolicyTypes: []string{networking.PolicyTypeIngress},
				Ingress: []networking.NetworkPolicyIngressRule{{
					From:  []networking.NetworkPolicyPeer{peer},
					Ports: []networking.NetworkPolicyPort{{Port: &port}}}}}})
	}
	start := time.Now()
	rs := Build("node-1", State{Pods: lab.pods, Namespaces: lab.namespaces, Policies: nps})
	build := time.Since(start)
	tx := knftables.NewFake(knftables.IPv4Family, Table).NewTransaction()
	rs.write(tx)
	none := Build("node-1", State{Pods: lab.pods, Namespaces: lab.namespaces})
	one := Build("node-1", State{Pods: lab.pods, Namespaces: lab.namespaces, Policies: nps[999:]})
	// The two states take turns, so that the machine's drift (this
	// shared VM's speed moves by tens of percent within minutes) falls
	// on both alike.
	pct := func(d []time.Duration, p float64) time.Duration {
		s := append([]time.Duration(nil), d...)
		sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
		return s[int(float64(len(s)-1)*p)]
	}
	var noneA, noneC, withA, withC []time.Duration
	var load time.Duration
	var paired, pairedOne []float64 // per round: p50 with 1,000 (1) policies / p50 without
	var oneA []time.Duration
	for r := 0; r < rounds; r++ {
		lab.load(t, one)
		a1, _ := measure(perRound)
		oneA = append(oneA, a1...)
		lab.load(t, none)
		a, c := measure(perRound)
		noneA, noneC = append(noneA, a...), append(noneC, c...)
		before := pct(a, 0.5)
		pairedOne = append(pairedOne, float64(pct(a1, 0.5))/float64(before))
		start = time.Now()
		cmd := exec.Command("ip", "netns", "exec", lab.node, "nft", "-f", "-")
		cmd.Stdin = strings.NewReader(tx.String())
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("nft -f: %v: %s", err, out)
		}
		load = time.Since(start)
		a, c = measure(perRound)
		withA, withC = append(withA, a...), append(withC, c...)
		paired = append(paired, float64(pct(a, 0.5))/float64(before))
	}
	sort.Float64s(paired)
	sort.Float64s(pairedOne)
	us := func(d time.Duration) string { return fmt.Sprintf("%d µs", d.Microseconds()) }
	ratio := paired[len(paired)/2]
	same := float64(pct(withA, 0.5)) / float64(pct(withC, 0.5))
	benchreport.Append(t, report, fmt.Sprintf(`
## NetworkPolicy datapath

Written by `+"`make bench`"+` (agent/netpol TestBenchPolicyRules, as root) on %s: nine pod network namespaces on one bridge in a node namespace (the kernel test's), TCP connection setup (connect until established) from x/b, alternating between x/a and x/c (which no policy selects), with no NetworkPolicy (the agent's table then has no chains; connection tracking is on in both states, as the node proxy's NAT rules keep it on every node — here a chain that counts new connections stands in for them) and with 1,000 NetworkPolicies that all select x/a (each allowing an address and a port of its own, so x/a's part of the allowed set has an element per policy; the last allows x/b): a new connection is one lookup in that set whatever the number of policies. The states took turns, %d rounds of %d connections to each destination in each (after each load a pause of 300 ms, for the kernel to finish freeing the table it replaced: without it the first connections after a load are slower whatever was loaded), so the machine's drift falls on both. Building the 1,000 policies' table took %d ms, loading it with nft %d ms (%d set elements).

| | x/b → x/a p50 | p99 | x/b → x/c (not selected) p50 | p99 |
|---|---|---|---|---|
| no NetworkPolicy | %s | %s | %s | %s |
| 1,000 NetworkPolicies selecting x/a | %s | %s | %s | %s |
| 1 NetworkPolicy selecting x/a | %s | %s | | |

Connection setup to x/a with 1,000 policies against none: %.0f %% (the median over the rounds of each round's p50 against the p50 of the round just before it, without policies; goal ≤ 110 %%: %s); to x/a against x/c, with the policies, at the same moments: %.0f %%. With a single policy selecting x/a (a third state in each round): %.0f %% against none — what a pod pays for being isolated at all, whatever the number of policies.
`, time.Now().UTC().Format("2006-01-02 15:04 MST"), rounds, perRound, build.Milliseconds(), load.Milliseconds(), len(rs.Allowed[dirIngress]),
		us(pct(noneA, 0.5)), us(pct(noneA, 0.99)), us(pct(noneC, 0.5)), us(pct(noneC, 0.99)),
		us(pct(withA, 0.5)), us(pct(withA, 0.99)), us(pct(withC, 0.5)), us(pct(withC, 0.99)),
		us(pct(oneA, 0.5)), us(pct(oneA, 0.99)),
		100*ratio, benchreport.Verdict(ratio <= 1.10), 100*same, 100*pairedOne[len(pairedOne)/2]))
}
