package e2e

import (
	"context"
	"fmt"
	"net"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/api/networking"
	"github.com/kobune/kobune/client"
	"github.com/kobune/kobune/test/reachability"
)

// TestNetworkPoliciesOnTheNodes holds the agents' NetworkPolicy rules to
// the reachability model on two real nodes: namespaces x, y, z with pods
// a, b, c spread over both nodes, each serving 80 and 81 over TCP and UDP
// (labapp). For every case of test/reachability/cases.yaml the case's
// policies replace the last case's, and all 81 connections are tried from
// inside the source pods' network namespaces (1 s timeout each) until the
// table is the one written by hand — while the other cases' policies are
// being deleted, so policies are added and removed under traffic — and
// `kobectl explain-path` gives the same verdict for every cell. Then: a
// pod and a namespace relabelled into and out of an allowing policy, a connection through
// a Service judged against the pod it was sent to, and DNS under an
// egress policy that allows only the cluster DNS.
func TestNetworkPoliciesOnTheNodes(t *testing.T) {
	requireRoot(t)
	srv, nodes, ctx := startWithControllers(t, 12*time.Minute, "10.244.93.0/24", "10.244.94.0/24")
	c := srv.Client
	pods := client.For[*core.Pod](c)
	nps := client.For[*networking.NetworkPolicy](c)
	for _, ns := range reachability.Namespaces {
		if _, err := client.For[*core.Namespace](c).Create(ctx, &core.Namespace{ObjectMeta: meta.ObjectMeta{Name: ns, Labels: map[string]string{"ns": ns}}}); err != nil {
			t.Fatal(err)
		}
	}
	k := 0
	for _, ns := range reachability.Namespaces {
		for _, name := range reachability.Pods {
			p := &core.Pod{ObjectMeta: meta.ObjectMeta{Namespace: ns, Name: name, Labels: reachability.Labels(name)},
				Spec: core.PodSpec{NodeName: nodes[k%2].name}}
			k++
			for _, port := range reachability.Ports {
				p.Spec.Containers = append(p.Spec.Containers, core.Container{Name: fmt.Sprint("serve-", port), Image: "kobune.local/labapp:1.0", ImagePullPolicy: core.PullNever,
					Args: []string{fmt.Sprintf("--listen=:%d", port), fmt.Sprintf("--udp-listen=:%d", port)},
					Ports: []core.ContainerPort{{Name: reachability.PortName(port, "TCP"), ContainerPort: port, Protocol: core.ProtocolTCP},
						{Name: reachability.PortName(port, "UDP"), ContainerPort: port, Protocol: core.ProtocolUDP}}})
			}
			if _, err := pods.Create(ctx, p); err != nil {
				t.Fatal(err)
			}
		}
	}
	netns, ips := map[string]string{}, map[string]string{}
	for _, ns := range reachability.Namespaces {
		for _, name := range reachability.Pods {
			wctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
			p, err := client.WaitFor(wctx, pods, ns, name, 0, func(p *core.Pod, _ bool) bool {
				return p.Status.Phase == core.PodRunning && core.PodIsReady(p) && p.Status.PodIP != ""
			})
			cancel()
			if err != nil {
				t.Fatalf("pod %s/%s: %v", ns, name, err)
			}
			netns[ns+"/"+name], ips[ns+"/"+name] = podNetns(p), p.Status.PodIP
		}
	}
	var yPods []string
	for _, name := range reachability.Pods {
		yPods = append(yPods, ips["y/"+name]+"/32")
	}

	probe := func(src, ip, proto string, port int32) bool {
		return reachability.InNetns(netns[src], func() error {
			return reachability.Probe(proto, net.JoinHostPort(ip, fmt.Sprint(port)))
		}) == nil
	}
	table := func(proto string, port int32) string {
		var mu sync.Mutex
		ok := map[string]bool{}
		var wg sync.WaitGroup
		for src := range netns {
			for dst := range netns {
				wg.Add(1)
				go func() {
					defer wg.Done()
					pass := probe(src, ips[dst], proto, port)
					mu.Lock()
					ok[src+" "+dst] = pass
					mu.Unlock()
				}()
			}
		}
		wg.Wait()
		return reachability.Table(func(src, dst string) bool { return ok[src+" "+dst] })
	}
	// expect tries the table until it is want (the agents apply policies
	// within a second or two); it fails with the last table.
	expect := func(what, want, proto string, port int32) time.Duration {
		t.Helper()
		start := time.Now()
		var got string
		for deadline := start.Add(30 * time.Second); time.Now().Before(deadline); {
			if got = table(proto, port); got == want {
				return time.Since(start)
			}
			time.Sleep(100 * time.Millisecond)
		}
		t.Errorf("%s, %s %d: the nodes' table (! where it differs)\n%swant\n%s", what, proto, port, reachability.Diff(got, want), want)
		return 0
	}
	clearPolicies := func() {
		t.Helper()
		list, _, err := nps.List(ctx, "", client.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, np := range list {
			if err := nps.Delete(ctx, np.Namespace, np.Name, client.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	apply := func(list []*networking.NetworkPolicy) {
		t.Helper()
		for _, np := range list {
			if _, err := nps.Create(ctx, np); err != nil {
				t.Fatalf("create policy %s/%s: %v", np.Namespace, np.Name, err)
			}
		}
	}
	// explain asks kobectl explain-path for every cell.
	explain := func(proto string, port int32) string {
		var mu sync.Mutex
		ok := map[string]bool{}
		var wg sync.WaitGroup
		sem := make(chan struct{}, 8)
		for src := range netns {
			for dst := range netns {
				wg.Add(1)
				go func() {
					defer wg.Done()
					sem <- struct{}{}
					defer func() { <-sem }()
					out, errOut, code := kobectl(ctx, srv.Addr(), "explain-path", "-n", src[:1], "pod/"+src[2:], "--to", "pod/"+dst[2:], "--to-namespace", dst[:1],
						"--port", fmt.Sprint(port), "--protocol", proto)
					if code != 0 {
						t.Errorf("explain-path %s → %s: exit %d: %s", src, dst, code, errOut)
					}
					mu.Lock()
					ok[src+" "+dst] = strings.Contains(out, "Verdict: allowed")
					mu.Unlock()
				}()
			}
		}
		wg.Wait()
		return reachability.Table(func(src, dst string) bool { return ok[src+" "+dst] })
	}

	cases, err := reachability.Cases()
	if err != nil {
		t.Fatal(err)
	}
	var took []time.Duration
	for _, tc := range cases {
		list, err := tc.Build(strings.Join(yPods, ", "))
		if err != nil {
			t.Fatal(err)
		}
		clearPolicies()
		apply(list)
		took = append(took, expect(tc.Name, tc.Want, tc.Protocol, tc.Port))
		if got := explain(tc.Protocol, tc.Port); got != tc.Want {
			t.Errorf("%s: explain-path's verdicts (! where they differ from the table)\n%swant\n%s", tc.Name, reachability.Diff(got, tc.Want), tc.Want)
		}
	}
	t.Logf("%d cases: each table held %v after its policies were written", len(cases), took)

	// A pod relabelled into and out of an allowing policy.
	clearPolicies()
	apply([]*networking.NetworkPolicy{{ObjectMeta: meta.ObjectMeta{Namespace: "x", Name: "from-clients"},
		Spec: networking.NetworkPolicySpec{Ingress: []networking.NetworkPolicyIngressRule{{From: []networking.NetworkPolicyPeer{{
			NamespaceSelector: &meta.LabelSelector{}, PodSelector: &meta.LabelSelector{MatchLabels: map[string]string{"role": "client"}}}}}}}}})
	denyX := "" +
		".XX ... ...\nX.X ... ...\nXX. ... ...\n" +
		"XXX ... ...\nXXX ... ...\nXXX ... ...\n" +
		"XXX ... ...\nXXX ... ...\nXXX ... ...\n"
	expect("x isolated, no client yet", denyX, "TCP", 80)
	relabel := func(labels map[string]string) {
		t.Helper()
		// The agent may write the pod's status meanwhile.
		if _, err := pods.Modify(ctx, "y", "b", func(p *core.Pod) error { p.Labels = labels; return nil }); err != nil {
			t.Fatal(err)
		}
	}
	relabel(map[string]string{"pod": "b", "role": "client"})
	expect("y/b relabelled role=client", ""+
		".XX ... ...\nX.X ... ...\nXX. ... ...\n"+
		"XXX ... ...\n... ... ...\nXXX ... ...\n"+
		"XXX ... ...\nXXX ... ...\nXXX ... ...\n", "TCP", 80)
	relabel(map[string]string{"pod": "b"})
	expect("y/b's role label removed", denyX, "TCP", 80)

	// A namespace relabelled into and out of a namespaceSelector.
	clearPolicies()
	apply([]*networking.NetworkPolicy{{ObjectMeta: meta.ObjectMeta{Namespace: "x", Name: "from-trusted"},
		Spec: networking.NetworkPolicySpec{Ingress: []networking.NetworkPolicyIngressRule{{From: []networking.NetworkPolicyPeer{{
			NamespaceSelector: &meta.LabelSelector{MatchLabels: map[string]string{"trusted": "yes"}}}}}}}}})
	expect("x isolated, no namespace trusted", denyX, "TCP", 80)
	relabelNS := func(labels map[string]string) {
		t.Helper()
		n, err := client.For[*core.Namespace](c).Get(ctx, "", "z")
		if err != nil {
			t.Fatal(err)
		}
		n.Labels = labels
		if _, err := client.For[*core.Namespace](c).Update(ctx, n); err != nil {
			t.Fatal(err)
		}
	}
	relabelNS(map[string]string{"ns": "z", "trusted": "yes"})
	expect("namespace z labelled trusted", ""+
		".XX ... ...\nX.X ... ...\nXX. ... ...\n"+
		"XXX ... ...\nXXX ... ...\nXXX ... ...\n"+
		"... ... ...\n... ... ...\n... ... ...\n", "TCP", 80)
	relabelNS(map[string]string{"ns": "z"})
	expect("namespace z's trusted label removed", denyX, "TCP", 80)

	// Through a Service: judged after the DNAT, against the pod chosen.
	svc, err := client.For[*core.Service](c).Create(ctx, &core.Service{ObjectMeta: meta.ObjectMeta{Namespace: "x", Name: "xa"},
		Spec: core.ServiceSpec{Selector: map[string]string{"pod": "a"}, Ports: []core.ServicePort{{Port: 8000, TargetPort: meta.FromInt(80)}}}})
	if err != nil {
		t.Fatal(err)
	}
	clearPolicies()
	apply([]*networking.NetworkPolicy{{ObjectMeta: meta.ObjectMeta{Namespace: "x", Name: "from-y"},
		Spec: networking.NetworkPolicySpec{Ingress: []networking.NetworkPolicyIngressRule{{From: []networking.NetworkPolicyPeer{{
			NamespaceSelector: &meta.LabelSelector{MatchLabels: map[string]string{"ns": "y"}}}}}}}}})
	// The policy is in force on x/a's node once z/b's direct connection is
	// dropped (before that, with no policy, everything passes and the
	// probes below would prove nothing).
	if !eventually(func() bool { return !probe("z/b", ips["x/a"], "TCP", 80) }) {
		t.Fatalf("z/b → x/a:80 directly still passes under x/from-y")
	}
	for _, src := range []string{"y/b", "y/c"} { // across nodes and on x/a's own
		if !eventually(func() bool { return probe(src, svc.Spec.ClusterIP, "TCP", 8000) }) {
			t.Errorf("%s → Service x/xa (%s:8000 → x/a): dropped; the policy allows namespace y", src, svc.Spec.ClusterIP)
		}
	}
	for _, src := range []string{"z/b", "z/a"} {
		if probe(src, svc.Spec.ClusterIP, "TCP", 8000) {
			t.Errorf("%s → Service x/xa (%s:8000 → x/a): passed; only namespace y is allowed", src, svc.Spec.ClusterIP)
		}
	}

	// explain-path through the Service: the endpoint, the route between
	// the nodes, the policy, and x/a's node's rules read from its kernel
	// (the drop counter has counted z's probes above).
	out, errOut, code := kobectl(ctx, srv.Addr(), "explain-path", "-n", "z", "pod/b", "--to", "svc/xa", "--to-namespace", "x", "--port", "8000")
	for _, want := range []string{"DNS: xa.x.svc answers " + svc.Spec.ClusterIP, "Service rules (table ip kobune-proxy):", "map service-ips",
		svc.Spec.ClusterIP + " . tcp . 8000 : goto", "Endpoint 1 of 1:", "pod x/a (" + ips["x/a"], "route: ",
		"selected by x/from-y; no rule of theirs allows this connection: denied", "rules (table ip kobune-netpol):", "map ingress-pods",
		ips["x/a"] + " : goto ingress-", `comment "x/from-y ingress[0]"`, "Verdict: denied"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("explain-path z/b → svc/xa lacks %q (exit %d):\n%s%s", want, code, out, errOut)
			break
		}
	}
	if m := regexp.MustCompile(`counter packets (\d+) bytes \d+ drop`).FindStringSubmatch(out); m == nil || m[1] == "0" {
		t.Errorf("explain-path z/b → svc/xa: x/a's drop counter should count z's dropped probes:\n%s", out)
	}

	// DNS under an egress policy that allows only the cluster DNS, written
	// as for CoreDNS.
	clearPolicies()
	udp, tcp := "UDP", "TCP"
	dnsPort := meta.FromInt(53)
	apply([]*networking.NetworkPolicy{{ObjectMeta: meta.ObjectMeta{Namespace: "x", Name: "dns-only"},
		Spec: networking.NetworkPolicySpec{PolicyTypes: []string{networking.PolicyTypeEgress}, Egress: []networking.NetworkPolicyEgressRule{{
			To: []networking.NetworkPolicyPeer{{NamespaceSelector: &meta.LabelSelector{MatchLabels: map[string]string{core.LabelMetadataName: "kube-system"}},
				PodSelector: &meta.LabelSelector{MatchLabels: map[string]string{"k8s-app": "kube-dns"}}}},
			Ports: []networking.NetworkPolicyPort{{Protocol: &udp, Port: &dnsPort}, {Protocol: &tcp, Port: &dnsPort}}}}}}})
	expect("x may only ask the cluster DNS", ""+
		".XX XXX XXX\nX.X XXX XXX\nXX. XXX XXX\n"+strings.Repeat("... ... ...\n", 6), "UDP", 81)
	resolve := func(src string) error {
		// One exchange on the namespace's thread (net.Resolver would ask
		// from goroutines of its own, outside the namespace).
		return reachability.InNetns(netns[src], func() error {
			q := new(dns.Msg)
			q.SetQuestion("xa.x.svc.cluster.local.", dns.TypeA)
			r, _, err := (&dns.Client{Timeout: 2 * time.Second}).Exchange(q, "10.96.0.10:53")
			if err != nil {
				return err
			}
			if len(r.Answer) != 1 || !strings.Contains(r.Answer[0].String(), svc.Spec.ClusterIP) {
				return fmt.Errorf("answered %v, want %s", r.Answer, svc.Spec.ClusterIP)
			}
			return nil
		})
	}
	for _, src := range []string{"x/a", "x/b"} { // one on each node
		var err error
		if !eventually(func() bool { err = resolve(src); return err == nil }) {
			t.Errorf("%s asks the cluster DNS under its egress policy: %v", src, err)
		}
	}
}

// eventually polls f for up to 15 s.
func eventually(f func() bool) bool {
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if f() {
			return true
		}
	}
	return false
}
