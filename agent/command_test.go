package agent_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kobune/kobune/agent"
	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/apiserver/testserver"
	"github.com/kobune/kobune/client"
)

// Issue #10 defect 12: the agent had no /readyz. It is not ready until its
// node is registered, and then it is. Under systemd (kobeadm's unit is
// Type=notify) it says READY=1 once it has started — before the API
// server answers, as the kubelet does, so a machine whose control plane is
// away still comes up — and unsets $NOTIFY_SOCKET for what it starts.
func TestAgentCommandServesReadyz(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "notify")
	notify, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: sock, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer notify.Close()
	t.Setenv("NOTIFY_SOCKET", sock)
	apiAddr := testserver.StableAddr()
	cmd := agent.Command{Server: apiAddr, NodeName: "node-r", Runtime: "fake", PodCIDR: "10.244.50.0/24",
		MetricsListen: testserver.StableAddr(), Workers: 2, LeaseInterval: time.Second}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- cmd.Run(ctx) }()
	get := func(path string) (int, string) {
		resp, err := http.Get("http://" + cmd.MetricsListen + path)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	await := func(path string, code int, want string) {
		t.Helper()
		var got string
		for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			c, body := get(path)
			if got = body; c == code && strings.Contains(body, want) {
				return
			}
		}
		t.Fatalf("GET %s: %q, want %d with %q", path, got, code, want)
	}
	// No API server yet: alive, not ready; systemd was told it started.
	await("/readyz", 503, "[-]node-registered failed: node node-r is not registered yet")
	await("/healthz", 200, "ok")
	buf := make([]byte, 64)
	notify.SetReadDeadline(time.Now().Add(20 * time.Second))
	if n, err := notify.Read(buf); err != nil || string(buf[:n]) != "READY=1" {
		t.Errorf("on $NOTIFY_SOCKET: %q, %v; want READY=1", buf[:n], err)
	}
	if v, ok := os.LookupEnv("NOTIFY_SOCKET"); ok {
		t.Errorf("NOTIFY_SOCKET=%s is still set after the agent told systemd", v)
	}
	srv, err := testserver.Start(t.TempDir(), apiAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()
	await("/readyz", 200, "[+]node-registered ok")
	await("/metrics", 200, "kobune_agent_running_pods")
	cancel()
	if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
		t.Errorf("agent: %v", err)
	}
}

// A node's pod CIDR outlives the agent: kept in its state directory, it is
// what the agent runs with after a restart even while the API server does
// not answer (a worker rebooting while the control plane is down), so
// the pods come back in the range the other nodes route to it. Before,
// the agent waited 30 s for the API and then made one up from the node's
// name. A Node whose pod CIDR changed meanwhile wins over the kept one.
func TestAgentKeepsItsPodCIDR(t *testing.T) {
	state := t.TempDir()
	file := filepath.Join(state, "pod-cidr")
	if err := os.WriteFile(file, []byte("10.244.7.0/24\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	apiAddr := testserver.StableAddr()
	run := func() (stop func()) {
		cmd := agent.Command{Server: apiAddr, NodeName: "node-k", Runtime: "fake", StateDir: state, Workers: 2, LeaseInterval: time.Second}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- cmd.Run(ctx) }()
		return func() {
			cancel()
			if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
				t.Errorf("agent: %v", err)
			}
		}
	}
	stop := run() // the API server is not there yet
	time.Sleep(time.Second)
	srv, err := testserver.Start(t.TempDir(), apiAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()
	nodes := client.For[*core.Node](srv.Client)
	podCIDR := func(want string) {
		t.Helper()
		var got string
		for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
			if n, err := nodes.Get(context.Background(), "", "node-k"); err == nil {
				if got = n.Spec.PodCIDR; got == want {
					return
				}
			}
		}
		t.Fatalf("node-k's pod CIDR: %q, want %q", got, want)
	}
	podCIDR("10.244.7.0/24")
	stop()

	// The Node was made again with another pod CIDR while the agent was
	// away (a pod CIDR never changes on a Node): the agent takes it, and
	// keeps it.
	if err := nodes.Delete(context.Background(), "", "node-k", client.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := nodes.Create(context.Background(), &core.Node{ObjectMeta: meta.ObjectMeta{Name: "node-k"},
		Spec: core.NodeSpec{PodCIDR: "10.244.9.0/24", PodCIDRs: []string{"10.244.9.0/24"}}}); err != nil {
		t.Fatal(err)
	}
	stop = run()
	kept := func(want string) {
		t.Helper()
		var got string
		for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
			b, _ := os.ReadFile(file)
			if got = strings.TrimSpace(string(b)); got == want {
				return
			}
		}
		t.Fatalf("%s: %q, want %q", file, got, want)
	}
	kept("10.244.9.0/24")
	stop()

	// Nothing kept (a first start): the Node's is asked for, then kept.
	os.Remove(file)
	stop = run()
	kept("10.244.9.0/24")
	stop()
}
