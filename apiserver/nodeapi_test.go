package apiserver_test

import (
	"context"
	"crypto/tls"
	"io"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/apiserver"
	"github.com/kobune/kobune/client"
)

// handshakeCounter is a TLS listener that counts completed handshakes and
// the bytes it was sent after one.
type handshakeCounter struct {
	lis        net.Listener
	handshakes atomic.Int32
	bytes      atomic.Int64
}

func newHandshakeCounter(t *testing.T, certFile, keyFile string) *handshakeCounter {
	t.Helper()
	pair, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	lis, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{MinVersion: tls.VersionTLS13, Certificates: []tls.Certificate{pair}})
	if err != nil {
		t.Fatal(err)
	}
	h := &handshakeCounter{lis: lis}
	go func() {
		for {
			c, err := lis.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				if c.(*tls.Conn).Handshake() != nil {
					return
				}
				h.handshakes.Add(1)
				n, _ := io.Copy(io.Discard, c)
				h.bytes.Add(n)
			}()
		}
	}()
	t.Cleanup(func() { lis.Close() })
	return h
}

func (h *handshakeCounter) port() int32 {
	_, p, _ := net.SplitHostPort(h.lis.Addr().String())
	n, _ := strconv.Atoi(p)
	return int32(n)
}

// TestFakeNodeAddressGetsNoExec: a Node whose published address is not
// its agent's — here a listener with node-2's certificate, as a hijacked
// or fake node would have — gets no TLS session from the API server, so
// no exec and none of the user's stdin; the node's own certificate does.
func TestFakeNodeAddressGetsNoExec(t *testing.T) {
	s := startSecured(t, func(c *apiserver.Config) {
		c.KubeletClientCertFile, c.KubeletClientKeyFile = filepath.Join(filepath.Dir(c.ClientCAFile), "apiserver-kubelet-client.crt"), filepath.Join(filepath.Dir(c.ClientCAFile), "apiserver-kubelet-client.key")
		c.KubeletCertificateAuthority = c.ClientCAFile
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p := func(f string) string { return filepath.Join(s.dir, "pki", f) }
	impostor := newHandshakeCounter(t, p("agent-node-2-serving.crt"), p("agent-node-2-serving.key"))
	genuine := newHandshakeCounter(t, p("agent-node-1-serving.crt"), p("agent-node-1-serving.key"))
	nodes, pods := client.For[*core.Node](s.Client), client.For[*core.Pod](s.Client)
	node := &core.Node{ObjectMeta: meta.ObjectMeta{Name: "node-1"}}
	node.Status.Addresses = []core.NodeAddress{{Type: "InternalIP", Address: "127.0.0.1"}}
	node.Status.DaemonEndpoints.KubeletEndpoint.Port = impostor.port()
	if _, err := nodes.Create(ctx, node); err != nil {
		t.Fatal(err)
	}
	if _, err := pods.Create(ctx, &core.Pod{ObjectMeta: meta.ObjectMeta{Namespace: "default", Name: "web"}, Spec: core.PodSpec{NodeName: "node-1",
		Containers: []core.Container{{Name: "app", Image: "kobune.local/labapp:1.0"}}}}); err != nil {
		t.Fatal(err)
	}
	exec := func() error {
		_, err := s.Client.Exec(ctx, "default", "web", client.ExecOptions{Command: []string{"sh"}, Stdin: strings.NewReader("cat /etc/shadow\n"), Stdout: io.Discard, Stderr: io.Discard})
		return err
	}
	if err := exec(); err == nil {
		t.Fatal("exec through a node address with another node's certificate succeeded")
	}
	if n := impostor.handshakes.Load(); n != 0 {
		t.Errorf("the impostor completed %d TLS handshakes with the API server (%d bytes of the session reached it)", n, impostor.bytes.Load())
	}
	// The same Node pointed at a listener with its own certificate: the
	// API server connects (the listener is no agent, so exec still fails).
	n, _ := nodes.Get(ctx, "", "node-1")
	n.Status.DaemonEndpoints.KubeletEndpoint.Port = genuine.port()
	if _, err := nodes.UpdateStatus(ctx, n); err != nil {
		t.Fatal(err)
	}
	_ = exec()
	// The listener counts a handshake once its side of it returns, which
	// may be a moment after the API server's exec has already failed.
	for deadline := time.Now().Add(5 * time.Second); genuine.handshakes.Load() == 0 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	if genuine.handshakes.Load() == 0 {
		t.Error("the API server made no TLS session with a listener holding node-1's own certificate")
	}
	// By now a handshake with the impostor would have been counted too.
	if n := impostor.handshakes.Load(); n != 0 {
		t.Errorf("the impostor completed %d TLS handshakes with the API server", n)
	}
}
