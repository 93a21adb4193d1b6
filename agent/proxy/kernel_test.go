package proxy

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"sigs.k8s.io/knftables"
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
	tx = fake.NewTransaction()
	p.incremental(tx, p.build(svcs, slices))
	load(tx)
	out, err := exec.Command("ip", "netns", "exec", ns, "nft", "list", "table", "ip", Table).CombinedOutput()
	if err != nil {
		t.Fatalf("nft list: %v: %s", err, out)
	}
	for _, want := range []string{"10.96.0.12 . tcp . 80 : goto service-", "tcp . 30080 : goto external-", "dnat to 10.244.2.3:8080", "goto endpoint-"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the kernel's table lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(string(out), "10.96.0.10 ") || strings.Contains(string(out), "10.244.1.2") {
		t.Errorf("the incremental sync left the deleted Service or endpoint:\n%s", out)
	}
}
