package agent

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/kobune/kobune/client/pki"
	"github.com/kobune/kobune/proto/nodepb"
)

// TestNodeAPIAcceptsOnlyTheAPIServer: with the PKI's files the node API
// answers the API server's kubelet-client certificate, and nobody else —
// not plaintext (a pod on the node network), not a TLS client without a
// certificate, not another node's or a user's certificate of the same CA,
// not the right name from another CA.
func TestNodeAPIAcceptsOnlyTheAPIServer(t *testing.T) {
	dir := t.TempDir()
	if _, err := pki.Init(dir, pki.Options{Server: "https://127.0.0.1:6443", Nodes: []string{"node-1", "node-2"}}); err != nil {
		t.Fatal(err)
	}
	p := func(f string) string { return filepath.Join(dir, f) }
	tc, err := NodeAPITLSConfig(p("agent-node-1-serving.crt"), p("agent-node-1-serving.key"), p("ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	a := &Agent{cfg: Config{NodeAPITLS: tc, Logf: t.Logf}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go a.serveNodeAPI(ctx, lis)

	caPEM, _ := os.ReadFile(p("ca.crt"))
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(caPEM)
	ca, caKey, err := pki.LoadCA(dir)
	if err != nil {
		t.Fatal(err)
	}
	issue := func(cn string, groups ...string) tls.Certificate {
		cert, key, err := pki.Issue(ca, caKey, &x509.Certificate{Subject: pkix.Name{CommonName: cn, Organization: groups}, NotBefore: time.Now().Add(-time.Minute),
			NotAfter: time.Now().Add(time.Hour), KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
		if err != nil {
			t.Fatal(err)
		}
		pair, err := tls.X509KeyPair(cert, key)
		if err != nil {
			t.Fatal(err)
		}
		return pair
	}
	kubeletClient, err := tls.LoadX509KeyPair(p("apiserver-kubelet-client.crt"), p("apiserver-kubelet-client.key"))
	if err != nil {
		t.Fatal(err)
	}
	other := t.TempDir()
	if _, err := pki.Init(other, pki.Options{Server: "https://127.0.0.1:6443"}); err != nil {
		t.Fatal(err)
	}
	foreign, _ := tls.LoadX509KeyPair(filepath.Join(other, "apiserver-kubelet-client.crt"), filepath.Join(other, "apiserver-kubelet-client.key"))

	call := func(creds credentials.TransportCredentials) error {
		conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(creds))
		if err != nil {
			return err
		}
		defer conn.Close()
		cctx, ccancel := context.WithTimeout(ctx, 5*time.Second)
		defer ccancel()
		_, err = nodepb.NewNodeAPIClient(conn).ServicePath(cctx, &nodepb.ServicePathRequest{Ip: "10.96.0.1", Protocol: "TCP", Port: 443})
		return err
	}
	withCert := func(certs ...tls.Certificate) credentials.TransportCredentials {
		return credentials.NewTLS(&tls.Config{MinVersion: tls.VersionTLS13, RootCAs: roots, ServerName: "node-1", Certificates: certs})
	}
	// The API server: past TLS, into the handler (this agent runs no proxy).
	if err := call(withCert(kubeletClient)); status.Code(err) != codes.FailedPrecondition {
		t.Errorf("the API server's kubelet-client certificate: %v, want the handler's FailedPrecondition", err)
	}
	for name, creds := range map[string]credentials.TransportCredentials{
		"plaintext (a pod on the node network)":        insecure.NewCredentials(),
		"TLS without a client certificate":             withCert(),
		"another node's certificate of the cluster CA": withCert(issue("system:node:node-2", "system:nodes")),
		"the admin's certificate (system:masters)":     withCert(issue("kubernetes-admin", "system:masters")),
		"the right name from another CA":               withCert(foreign),
	} {
		if err := call(creds); status.Code(err) != codes.Unavailable {
			t.Errorf("%s: %v, want the connection refused (Unavailable)", name, err)
		}
	}
}
