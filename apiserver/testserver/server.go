package testserver

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/kobune/kobune/apiserver"
	"github.com/kobune/kobune/client"
	"github.com/kobune/kobune/client/pki"
	"github.com/kobune/kobune/proto/apipb"
)

// Server is a running in-process API server and a client connected to it.
type Server struct {
	*apiserver.Server
	Client  *client.Client
	DataDir string
	// PKIDir, for a server from StartSecure, holds the CA and the
	// kubeconfigs of `kobectl pki init` (Kubeconfig names them).
	PKIDir string
	cancel context.CancelFunc
	done   chan struct{}
	again  func() (*Server, error)
}

// Start runs a plaintext API server (InsecurePlaintext) on a free
// loopback port with its etcd data in dataDir. listen may be "" (a free port) or an address to reuse one.
func Start(dataDir, listen string, mutate ...func(*apiserver.Config)) (*Server, error) {
	return start(dataDir, listen, "", append([]func(*apiserver.Config){func(c *apiserver.Config) { c.InsecurePlaintext = true }}, mutate...)...)
}

// StartTLS is Start for a server with TLS (the mutations set its
// certificate files); the client connects with kubeconfig.
func StartTLS(dataDir, listen, kubeconfig string, mutate ...func(*apiserver.Config)) (*Server, error) {
	return start(dataDir, listen, kubeconfig, mutate...)
}

// StartSecure is the secure server Kobune's lab runs: the certificates of
// `kobectl pki init` in pkiDir (with a kubeconfig for each of nodes'
// agents and CSI provisioners; names are extra server names and IPs), TLS
// 1.3, client-certificate authentication, Node,RBAC authorization. The
// client is the admin's (system:masters). listen must be a fixed address
// (the kubeconfigs name it).
func StartSecure(dataDir, listen, pkiDir string, nodes, names []string, mutate ...func(*apiserver.Config)) (*Server, error) {
	host, _, err := net.SplitHostPort(listen)
	if err != nil {
		return nil, fmt.Errorf("StartSecure needs a fixed address: %w", err)
	}
	if _, err := os.Stat(filepath.Join(pkiDir, "ca.crt")); err != nil {
		if _, err := pki.Init(pkiDir, pki.Options{Server: "https://" + listen, Names: append([]string{host}, names...), Nodes: nodes}); err != nil {
			return nil, err
		}
	}
	secure := func(c *apiserver.Config) {
		c.TLSCertFile, c.TLSPrivateKeyFile = filepath.Join(pkiDir, "apiserver.crt"), filepath.Join(pkiDir, "apiserver.key")
		c.ClientCAFile = filepath.Join(pkiDir, "ca.crt")
		c.KubeletClientCertFile, c.KubeletClientKeyFile = filepath.Join(pkiDir, "apiserver-kubelet-client.crt"), filepath.Join(pkiDir, "apiserver-kubelet-client.key")
		c.KubeletCertificateAuthority = filepath.Join(pkiDir, "ca.crt")
		c.ServiceAccountSigningKeyFile, c.ServiceAccountKeyFiles = filepath.Join(pkiDir, "sa.key"), []string{filepath.Join(pkiDir, "sa.pub")}
	}
	s, err := start(dataDir, listen, filepath.Join(pkiDir, "admin.kubeconfig"), append([]func(*apiserver.Config){secure}, mutate...)...)
	if err == nil {
		s.PKIDir = pkiDir
	}
	return s, err
}

// Kubeconfig is the path of one of the PKI's kubeconfigs ("admin",
// "scheduler", "controller", "agent-node-1", "csi-node-1").
func (s *Server) Kubeconfig(name string) string { return filepath.Join(s.PKIDir, name+".kubeconfig") }

// Again starts a new server like this one (same data, address and
// settings), after Stop.
func (s *Server) Again() (*Server, error) {
	n, err := s.again()
	if err == nil {
		n.PKIDir = s.PKIDir
	}
	return n, err
}

func start(dataDir, listen, kubeconfig string, mutate ...func(*apiserver.Config)) (*Server, error) {
	s, err := startOnce(dataDir, listen, kubeconfig, mutate...)
	if err == nil {
		s.again = func() (*Server, error) { return start(dataDir, s.Addr(), kubeconfig, mutate...) }
	}
	return s, err
}

func startOnce(dataDir, listen, kubeconfig string, mutate ...func(*apiserver.Config)) (*Server, error) {
	if listen == "" {
		listen = "127.0.0.1:0"
	}
	cfg := apiserver.Config{Listen: listen, DataDir: dataDir, MetricsListen: "127.0.0.1:0", Logf: func(string, ...any) {}}
	for _, m := range mutate {
		m(&cfg)
	}
	ctx, cancel := context.WithCancel(context.Background())
	srv, err := apiserver.New(ctx, cfg)
	if err != nil {
		cancel()
		return nil, err
	}
	s := &Server{Server: srv, DataDir: dataDir, cancel: cancel, done: make(chan struct{})}
	go func() { defer close(s.done); _ = srv.Serve(ctx) }()
	s.Client, err = client.New(srv.Addr())
	if kubeconfig != "" {
		s.Client.Close()
		s.Client, err = client.Dial("", kubeconfig)
	}
	if err != nil {
		s.Stop()
		return nil, err
	}
	wctx, wcancel := context.WithTimeout(ctx, 10*time.Second)
	defer wcancel()
	if _, err := s.Client.API.Version(wctx, &apipb.VersionRequest{}, grpc.WaitForReady(true)); err != nil {
		s.Stop()
		return nil, err
	}
	return s, nil
}

// Stop shuts the server down and closes etcd; the data directory stays.
func (s *Server) Stop() {
	if s.Client != nil {
		s.Client.Close()
	}
	s.cancel()
	s.Close()
	<-s.done
}

// New starts a server for a test and stops it when the test ends.
func New(t testing.TB, mutate ...func(*apiserver.Config)) *Server {
	t.Helper()
	s, err := Start(t.TempDir(), "", mutate...)
	if err != nil {
		t.Fatalf("start apiserver: %v", err)
	}
	t.Cleanup(s.Stop)
	return s
}

// StableAddr returns a loopback address for a server that a test restarts
// on the same address, or starts only after its clients. Its port is below
// Linux's ephemeral range (32768-60999), so that no other process's
// outgoing connection can take it while the server is down, and it is
// reserved for the life of the test process by a lock file (see
// reservePort): test binaries of other packages run at the same time and
// pick ports in the same range, and one once took the port of a server that
// was not up yet (TestAgentCommandServesReadyz saw an HTTP server there).
func StableAddr() string { return StableAddrOn("127.0.0.1") }

// StableAddrOn is StableAddr on another local address.
func StableAddrOn(ip string) string {
	for {
		port := 20000 + rand.IntN(10000)
		if !reservePort(port) {
			continue
		}
		addr := net.JoinHostPort(ip, strconv.Itoa(port))
		if l, err := net.Listen("tcp", addr); err == nil {
			l.Close()
			return addr
		}
	}
}

var (
	reservedMu sync.Mutex
	reserved   = map[int]*os.File{} // held open: the kernel drops the locks when the process ends
)

// reservePort takes an exclusive lock on a file named after the port, in a
// directory every test process of this user shares; another process holding
// it means the port is taken. Locks die with their process, so a killed
// test leaves nothing reserved.
func reservePort(port int) bool {
	reservedMu.Lock()
	defer reservedMu.Unlock()
	if _, ok := reserved[port]; ok {
		return false // this process has it already
	}
	dir := filepath.Join(os.TempDir(), fmt.Sprintf("kobune-test-ports-%d", os.Getuid()))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return true // no lock directory: fall back to the listen check alone
	}
	f, err := os.OpenFile(filepath.Join(dir, strconv.Itoa(port)), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return true
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return false
	}
	reserved[port] = f
	return true
}
