package netpol

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"testing"

	"sigs.k8s.io/knftables"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/api/networking"
	"github.com/kobune/kobune/test/reachability"
)

// TestRulesHoldTheReachabilityModelInAKernel loads the rules into a real
// kernel and sends real packets: a network namespace for a node with a
// bridge, nine more for the model's pods (x/a ... z/c) on that bridge,
// each serving 80 and 81 over TCP and UDP; for every case of the
// reachability model, every one of the 81 connections is tried from
// inside the source pod (1 s timeout) and the table must be the one
// written by hand. Pods on one bridge are the path br_netfilter must
// hand to the IPv4 hooks; the lab test covers pods on two nodes and
// Services. All namespaces are the test's own, removed after.
func TestRulesHoldTheReachabilityModelInAKernel(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: makes network namespaces and loads nftables rules into one")
	}
	if _, err := exec.LookPath("nft"); err != nil {
		t.Skip("nft is not installed (apt-get install -y nftables)")
	}
	cases, err := reachability.Cases()
	if err != nil {
		t.Fatal(err)
	}
	lab := newBridgeLab(t)
	for _, tc := range cases {
		t.Run(tc.Name, func(t *testing.T) {
			nps, err := tc.Build("10.244.2.0/24")
			if err != nil {
				t.Fatal(err)
			}
			rs := Build("node-1", State{Pods: lab.pods, Namespaces: lab.namespaces, Policies: nps})
			lab.load(t, rs)
			got := lab.table(t, tc.Protocol, tc.Port)
			if tc.Name == "policies add up" {
				lab.explain(t)
			}
			if got != tc.Want {
				t.Errorf("%s %d: the kernel's table (! where it differs)\n%swant\n%s\nrules:\n%s", tc.Protocol, tc.Port, reachability.Diff(got, tc.Want), tc.Want, rs)
			}
		})
	}
	// SCTP ports load too (the model's probes are TCP and UDP only).
	sctp := "SCTP"
	port := meta.FromInt(9899)
	lab.load(t, Build("node-1", State{Pods: lab.pods, Namespaces: lab.namespaces, Policies: []*networking.NetworkPolicy{{ObjectMeta: meta.ObjectMeta{Namespace: "x", Name: "sctp"},
		Spec: networking.NetworkPolicySpec{PolicyTypes: []string{networking.PolicyTypeIngress},
			Ingress: []networking.NetworkPolicyIngressRule{{Ports: []networking.NetworkPolicyPort{{Protocol: &sctp, Port: &port}}}}}}}}))
	out, err := exec.Command("ip", "netns", "exec", lab.node, "nft", "list", "table", "ip", Table).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "sctp . 9899") {
		t.Errorf("the SCTP policy's elements: %v\n%s", err, out)
	}
	// Back to no policy: an empty table lets everything through again.
	lab.load(t, Build("node-1", State{Pods: lab.pods, Namespaces: lab.namespaces}))
	if got := lab.table(t, "TCP", 81); strings.Contains(got, "X") {
		t.Errorf("with every policy gone, connections are still dropped:\n%s", got)
	}
}

// bridgeLab is a node namespace with a bridge and the model's pods.
type bridgeLab struct {
	node       string
	pods       []*core.Pod
	namespaces []*core.Namespace
	netns      map[string]string // "x/a" → network namespace
}

func newBridgeLab(t *testing.T) *bridgeLab {
	t.Helper()
	prefix := fmt.Sprintf("kobune-np%d", os.Getpid())
	run := func(args ...string) {
		t.Helper()
		if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
			t.Fatalf("%s: %v: %s", strings.Join(args, " "), err, out)
		}
	}
	l := &bridgeLab{node: prefix + "-node", netns: map[string]string{}}
	run("ip", "netns", "add", l.node)
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "delete", l.node).Run() })
	run("ip", "-n", l.node, "link", "add", "br0", "type", "bridge")
	run("ip", "-n", l.node, "addr", "add", "10.244.0.1/16", "dev", "br0")
	run("ip", "-n", l.node, "link", "set", "br0", "up")
	run("ip", "netns", "exec", l.node, "sysctl", "-qw", "net.ipv4.ip_forward=1")
	// Bridged IPv4 goes through the IPv4 hooks only with this set (the
	// agent checks it on a node).
	run("ip", "netns", "exec", l.node, "sysctl", "-qw", "net.bridge.bridge-nf-call-iptables=1")
	for _, ns := range reachability.Namespaces {
		l.namespaces = append(l.namespaces, &core.Namespace{ObjectMeta: meta.ObjectMeta{Name: ns, Labels: reachability.NamespaceLabels(ns)}})
		for i, pod := range reachability.Pods {
			name := fmt.Sprintf("%s-%s%s", prefix, ns, pod)
			run("ip", "netns", "add", name)
			t.Cleanup(func() { _ = exec.Command("ip", "netns", "delete", name).Run() })
			veth := fmt.Sprintf("v%s%d", ns, i)
			ip := reachability.ModelIP(ns, pod)
			run("ip", "-n", l.node, "link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", name)
			run("ip", "-n", l.node, "link", "set", veth, "master", "br0", "up")
			run("ip", "-n", name, "addr", "add", ip.String()+"/16", "dev", "eth0")
			run("ip", "-n", name, "link", "set", "eth0", "up")
			run("ip", "-n", name, "link", "set", "lo", "up")
			l.netns[ns+"/"+pod] = name
			p := &core.Pod{ObjectMeta: meta.ObjectMeta{Namespace: ns, Name: pod, Labels: reachability.Labels(pod)},
				Spec:   core.PodSpec{NodeName: "node-1"},
				Status: core.PodStatus{Phase: core.PodRunning, PodIP: ip.String()}}
			c := core.Container{Name: "serve"}
			for _, np := range reachability.NamedPorts() {
				c.Ports = append(c.Ports, core.ContainerPort{Name: np.Name, Protocol: core.Protocol(np.Protocol), ContainerPort: np.Port})
			}
			p.Spec.Containers = []core.Container{c}
			l.pods = append(l.pods, p)
			serve(t, name)
		}
	}
	return l
}

// load replaces the node's table with the ruleset, through nft as the
// agent does.
func (l *bridgeLab) load(t *testing.T, rs *Ruleset) {
	t.Helper()
	tx := knftables.NewFake(knftables.IPv4Family, Table).NewTransaction()
	rs.write(tx)
	cmd := exec.Command("ip", "netns", "exec", l.node, "nft", "-f", "-")
	cmd.Stdin = strings.NewReader(tx.String())
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("nft -f: %v: %s\n%s", err, out, tx.String())
	}
}

// table tries all 81 connections at once.
func (l *bridgeLab) table(t *testing.T, proto string, port int32) string {
	t.Helper()
	var mu sync.Mutex
	ok := map[string]bool{}
	var wg sync.WaitGroup
	for src, ns := range l.netns {
		for dst := range l.netns {
			wg.Add(1)
			go func() {
				defer wg.Done()
				dstIP := reachability.ModelIP(dst[:1], dst[2:])
				err := reachability.InNetns("/var/run/netns/"+ns, func() error {
					return reachability.Probe(proto, net.JoinHostPort(dstIP.String(), fmt.Sprint(port)))
				})
				mu.Lock()
				ok[src+" "+dst] = err == nil
				mu.Unlock()
			}()
		}
	}
	wg.Wait()
	return reachability.Table(func(src, dst string) bool { return ok[src+" "+dst] })
}

// serve listens in the namespace on 80 and 81, TCP (says "ok") and UDP
// (echoes); the sockets stay in that namespace whatever thread serves
// them.
func serve(t *testing.T, netns string) {
	t.Helper()
	var ls []io.Closer
	err := reachability.InNetns("/var/run/netns/"+netns, func() error {
		for _, port := range reachability.Ports {
			tl, err := net.Listen("tcp", fmt.Sprintf(":%d", port))
			if err != nil {
				return err
			}
			ul, err := net.ListenPacket("udp", fmt.Sprintf(":%d", port))
			if err != nil {
				return err
			}
			ls = append(ls, tl, ul)
			go func() {
				for {
					c, err := tl.Accept()
					if err != nil {
						return
					}
					_, _ = c.Write([]byte("ok"))
					_ = c.Close()
				}
			}()
			go func() {
				b := make([]byte, 64)
				for {
					n, from, err := ul.ReadFrom(b)
					if err != nil {
						return
					}
					_, _ = ul.WriteTo(b[:n], from)
				}
			}()
		}
		return nil
	})
	if err != nil {
		t.Fatalf("serve in %s: %v", netns, err)
	}
	t.Cleanup(func() {
		for _, l := range ls {
			_ = l.Close()
		}
	})
}

// explain reads x/a's rules back from the kernel as the node API does
// (both policies of the case "policies add up" select it for ingress):
// the map element, its chain with the drop's counter — which the denied
// probes of the table just made have counted — and each policy's rule.
func (l *bridgeLab) explain(t *testing.T) {
	t.Helper()
	list := func(ctx context.Context, object string) ([]string, error) {
		kind, name, _ := strings.Cut(object, " ")
		out, err := exec.CommandContext(ctx, "ip", "netns", "exec", l.node, "nft", "list", kind, "ip", Table, name).CombinedOutput()
		if err != nil {
			return nil, fmt.Errorf("%v: %s", err, out)
		}
		return parseList(string(out)), nil
	}
	hops, err := Explain(context.Background(), list, reachability.ModelIP("x", "a").String(), "ingress")
	if err != nil {
		t.Fatal(err)
	}
	var text strings.Builder
	for _, h := range hops {
		fmt.Fprintf(&text, "%s\n  %s\n", h.Object, strings.Join(h.Lines, "\n  "))
	}
	got := text.String()
	for _, want := range []string{"map ingress-pods\n  10.244.1.10 : goto ingress-", "\n  10.244.2.10-10.244.2.12 . 0-255 . 0-65535 comment \"x/from-y ingress[0]\"",
		"\n  10.244.3.12 . 0-255 . 0-65535 comment \"x/from-z-c ingress[0]\""} {
		if !strings.Contains(got, want) {
			t.Errorf("explain of x/a's ingress lacks %q:\n%s", want, got)
		}
	}
	if m := regexp.MustCompile(`counter packets (\d+) bytes \d+ drop`).FindStringSubmatch(got); m == nil || m[1] == "0" {
		t.Errorf("explain of x/a's ingress: the drop counter should count the denied probes:\n%s", got)
	}
	hops, err = Explain(context.Background(), list, reachability.ModelIP("y", "a").String(), "egress")
	if err != nil || len(hops) != 1 || !strings.Contains(hops[0].Explain, "no NetworkPolicy selects the pod for egress") {
		t.Errorf("explain of y/a's egress (not isolated): %+v %v", hops, err)
	}
}
