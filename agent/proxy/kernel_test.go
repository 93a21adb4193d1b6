package proxy

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strings"
	"testing"

	gnft "github.com/google/nftables"
	"sigs.k8s.io/knftables"

	"github.com/kobune/kobune/api/core"
)

// The transactions the proxy writes are accepted by the real kernel: a
// full sync and an incremental one are loaded with nft into a network
// namespace made for the test (never the host's), which is removed after.
func TestTransactionsLoadIntoTheKernel(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: loads nftables rules into a network namespace of its own")
	}
	if _, err := exec.LookPath("nft"); err != nil {
		t.Skip("nft is not installed (apt-get install -y nftables)")
	}
	ns := fmt.Sprintf("kobune-proxytest-%d", os.Getpid())
	if out, err := exec.Command("ip", "netns", "add", ns).CombinedOutput(); err != nil {
		t.Fatalf("ip netns add: %v: %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "delete", ns).Run() })
	load := func(tx *knftables.Transaction) {
		t.Helper()
		cmd := exec.Command("ip", "netns", "exec", ns, "nft", "-f", "-")
		cmd.Stdin = strings.NewReader(tx.String())
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("nft -f: %v: %s\n%s", err, out, tx.String())
		}
	}
	fake := knftables.NewFake(knftables.IPv4Family, Table)
	p := New(Config{NodeName: "node-1", PodCIDR: "10.244.1.0/24"}, fake)
	svcs, slices := sample()
	ctx := context.Background()
	tx := fake.NewTransaction()
	if err := p.full(ctx, tx, p.build(svcs, slices)); err != nil {
		t.Fatal(err)
	}
	load(tx)
	sync(t, p, svcs, slices)
	slices[0] = slice("web", 8080, ep{"10.244.2.3", "node-2", true})
	svcs = svcs[1:]
	w := &nftWriter{tx: fake.NewTransaction()}
	plan(p, w, svcs, slices)
	load(w.tx)
	out, err := exec.Command("ip", "netns", "exec", ns, "nft", "list", "table", "ip", Table).CombinedOutput()
	if err != nil {
		t.Fatalf("nft list: %v: %s", err, out)
	}
	for _, want := range []string{"10.96.0.12 . tcp . 80 : goto lb-tcp-1", "tcp . 30080 : goto lb-tcp-1-nodeport", "chain lb-tcp-1-nodeport {\n\t\tjump mark-for-masquerade\n\t\tdnat ip to meta l4proto . tcp dport . numgen random mod 1 map @nodeport-endpoints", "10.96.0.12 . tcp . 80 . 0 : 10.244.2.3 . 8080", "tcp . 30080 . 0 : 10.244.2.3 . 8080", "ct status dnat jump mark-for-masquerade"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the kernel's table lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(string(out), "10.96.0.10 ") || strings.Contains(string(out), "10.244.1.2") {
		t.Errorf("the incremental sync left the deleted Service or endpoint:\n%s", out)
	}
}

// Incremental syncs go to the kernel over netlink, full ones through nft:
// after a series of changes written over netlink, the kernel's table
// lists exactly as the one a fresh proxy loads through nft for the same
// state (every rule form: random picks, affinity lookups and updates, the
// node port's masquerade jump, new and deleted sets, chains and map
// elements). Two network namespaces made for the test, removed after.
func TestNetlinkRulesListAsTheirText(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: loads nftables rules into network namespaces of its own")
	}
	if _, err := exec.LookPath("nft"); err != nil {
		t.Skip("nft is not installed (apt-get install -y nftables)")
	}
	inc, full := testNetns(t, "inc"), testNetns(t, "full")
	fake := knftables.NewFake(knftables.IPv4Family, Table)
	p := New(Config{NodeName: "node-1", PodCIDR: "10.244.1.0/24"}, fake)
	p.Netlink = netlinkIn(t, inc)
	svcs, slices := sample()
	ctx := context.Background()
	tx := fake.NewTransaction()
	if err := p.full(ctx, tx, p.build(svcs, slices)); err != nil {
		t.Fatal(err)
	}
	nftIn(t, inc, tx)
	p.fragments, p.synced = p.fragmentsFor(svcs, slices), true
	p.shared = sharedChains(p.fragments)
	steps := []func(){
		func() {
			slices[0] = slice("web", 8080, ep{"10.244.2.3", "node-2", true}, ep{"10.244.1.7", "node-1", true}, ep{"10.244.2.8", "node-2", true})
		},
		func() { svcs = svcs[1:]; slices = slices[1:] }, // web goes
		func() {
			svcs = append(svcs, svc("sticky2", "10.96.0.14", func(s *core.Service) {
				s.Spec.SessionAffinity, s.Spec.Type = core.ServiceAffinityClientIP, core.ServiceTypeNodePort
				s.Spec.Ports[0].NodePort = 30081
				s.Spec.Ports[0].Protocol = core.ProtocolUDP
			}))
			s := slice("sticky2", 53, ep{"10.244.2.20", "node-2", true}, ep{"10.244.2.21", "node-2", true})
			udp := core.ProtocolUDP
			s.Ports[0].Protocol = &udp
			slices = append(slices, s)
		},
		func() { slices[len(slices)-2] = slice("sticky", 8080, ep{"10.244.2.6", "node-2", true}) }, // its set changes
		func() { svcs[1].Spec.Ports[0].NodePort = 30090 },                                          // np's node port moves
	}
	for i, step := range steps {
		step()
		if err := p.Sync(ctx, svcs, slices); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
	}
	want := New(Config{NodeName: "node-1", PodCIDR: "10.244.1.0/24"}, knftables.NewFake(knftables.IPv4Family, Table))
	tx = fake.NewTransaction()
	if err := want.full(ctx, tx, want.build(svcs, slices)); err != nil {
		t.Fatal(err)
	}
	nftIn(t, full, tx)
	got, wanted := listTable(t, inc), listTable(t, full)
	if got != wanted {
		t.Errorf("after netlink syncs the table differs from a fresh load:\n%s\n--- got:\n%s", lineDiff(got, wanted), got)
	}
	for _, s := range []string{"update @affinity-", "meta l4proto udp dnat to 10.244.2.21:53", "numgen random mod 2 0", "udp . 30081 : goto external-", "10.96.0.12 . tcp . 80 : goto lb-tcp-1", "tcp . 30090 : goto lb-tcp-1-nodeport"} {
		if !strings.Contains(got, s) {
			t.Errorf("the table lacks %q:\n%s", s, got)
		}
	}
}

// testNetns makes a network namespace for the test, removed after it.
func testNetns(t *testing.T, name string) string {
	t.Helper()
	ns := fmt.Sprintf("kobune-proxytest-%s-%d", name, os.Getpid())
	if out, err := exec.Command("ip", "netns", "add", ns).CombinedOutput(); err != nil {
		t.Fatalf("ip netns add: %v: %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "delete", ns).Run() })
	return ns
}

func nftIn(t *testing.T, ns string, tx *knftables.Transaction) {
	t.Helper()
	cmd := exec.Command("ip", "netns", "exec", ns, "nft", "-f", "-")
	cmd.Stdin = strings.NewReader(tx.String())
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("nft -f: %v: %s\n%s", err, out, tx.String())
	}
}

// netlinkIn is a Netlink writer for the namespace ns.
func netlinkIn(t *testing.T, ns string) *Netlink {
	t.Helper()
	f, err := os.Open("/run/netns/" + ns)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	n := NewNetlink()
	n.conn = func() (*gnft.Conn, error) { return gnft.New(gnft.WithNetNSFd(int(f.Fd()))) }
	return n
}

// listTable is `nft list table` in ns with its blocks (chains, sets, maps)
// and each map's elements sorted: their order means nothing.
func listTable(t *testing.T, ns string) string {
	t.Helper()
	out, err := exec.Command("ip", "netns", "exec", ns, "nft", "list", "table", "ip", Table).CombinedOutput()
	if err != nil {
		t.Fatalf("nft list: %v: %s", err, out)
	}
	var blocks []string
	var cur []string
	for _, l := range strings.Split(string(out), "\n") {
		switch {
		case strings.HasPrefix(l, "\tchain ") || strings.HasPrefix(l, "\tset ") || strings.HasPrefix(l, "\tmap "):
			cur = []string{l}
		case l == "\t}" && cur != nil:
			blocks = append(blocks, normalizeElements(strings.Join(append(cur, l), "\n")))
			cur = nil
		case cur != nil:
			cur = append(cur, l)
		}
	}
	sort.Strings(blocks)
	return strings.Join(blocks, "\n")
}

func normalizeElements(block string) string {
	start := strings.Index(block, "elements = { ")
	if start < 0 {
		return block
	}
	end := strings.Index(block[start:], "}") + start
	var elems []string
	for _, e := range strings.Split(block[start+len("elements = { "):end], ",") {
		elems = append(elems, strings.TrimSpace(e))
	}
	sort.Strings(elems)
	return block[:start] + "elements = { " + strings.Join(elems, ", ") + " " + block[end:]
}
