package apiserver_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/kobune/kobune/client"
	"github.com/kobune/kobune/client/pki"
)

// TestCertificatesRotateWithoutRestart: `kobectl pki init` run again
// writes new certificates from the same CA; the running API server serves
// its new certificate from the next handshake on, connections already open
// go on, and a client whose kubeconfig changed presents its new
// certificate on its next connection — nothing restarts.
func TestCertificatesRotateWithoutRestart(t *testing.T) {
	s := startSecured(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pkiDir := filepath.Join(s.dir, "pki")
	caPEM, _ := os.ReadFile(filepath.Join(pkiDir, "ca.crt"))
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(caPEM)
	served := func() string {
		t.Helper()
		conn, err := tls.Dial("tcp", s.Addr(), &tls.Config{RootCAs: roots, ServerName: "127.0.0.1", MinVersion: tls.VersionTLS13})
		if err != nil {
			t.Fatalf("TLS to the API server: %v", err)
		}
		defer conn.Close()
		return conn.ConnectionState().PeerCertificates[0].SerialNumber.String()
	}
	kubeconfig := filepath.Join(pkiDir, "admin.kubeconfig")
	c, err := client.Dial("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if u, err := c.WhoAmI(ctx); err != nil || u.Username != "kubernetes-admin" {
		t.Fatalf("whoami: %+v %v", u, err)
	}
	before := served()
	time.Sleep(1100 * time.Millisecond) // files are looked at again at most once a second
	if _, err := pki.Init(pkiDir, pki.Options{Server: "https://" + s.Addr(), Nodes: []string{"node-1", "node-2"}}); err != nil {
		t.Fatal(err)
	}
	if after := served(); after == before {
		t.Errorf("the API server still serves certificate %s after the renewal", before)
	}
	if _, err := c.WhoAmI(ctx); err != nil {
		t.Errorf("the connection opened before the renewal: %v", err)
	}
	// The admin's kubeconfig now holds another identity: a new connection
	// of the running client presents it.
	ca, caKey, _ := pki.LoadCA(pkiDir)
	cert, key, _ := pki.Issue(ca, caKey, &x509.Certificate{Subject: pkix.Name{CommonName: "rotated-admin", Organization: []string{"system:masters"}},
		NotBefore: time.Now().Add(-time.Minute), NotAfter: time.Now().Add(time.Hour), KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
	b, _ := pki.Kubeconfig("https://"+s.Addr(), caPEM, cert, key, "rotated-admin")
	time.Sleep(10 * time.Millisecond)
	if err := os.WriteFile(kubeconfig, b, 0o600); err != nil {
		t.Fatal(err)
	}
	again, err := c.Another()
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	if u, err := again.WhoAmI(ctx); err != nil || u.Username != "rotated-admin" {
		t.Errorf("a new connection after the kubeconfig changed is %+v (%v), want rotated-admin", u, err)
	}
}
