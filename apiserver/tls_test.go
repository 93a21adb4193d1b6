package apiserver_test

import (
	"bytes"
	"context"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/apiserver"
	"github.com/kobune/kobune/apiserver/testserver"
	"github.com/kobune/kobune/client"
	"github.com/kobune/kobune/client/pki"
	"github.com/kobune/kobune/ctl"
)

// TestTLSAndClientCertificates: with the certificates of `kobectl pki
// init`, the API server speaks only TLS 1.3; a kubeconfig's client
// certificate authenticates (the audit log names the user); a client
// without a certificate, with an expired one, with one of another CA, or
// in plaintext gets nothing; a server certificate the client's CA did not
// sign is refused by the client.
func TestTLSAndClientCertificates(t *testing.T) {
	dir := t.TempDir()
	addr := testserver.StableAddr()
	var out, errOut bytes.Buffer
	if code := ctl.RunContext(context.Background(), []string{"pki", "init", "--dir", filepath.Join(dir, "pki"), "--apiserver-url", "https://" + addr, "--node", "node-1"},
		strings.NewReader(""), &out, &errOut); code != 0 {
		t.Fatalf("kobectl pki init: %s%s", out.String(), errOut.String())
	}
	p := func(f string) string { return filepath.Join(dir, "pki", f) }
	for _, f := range []string{"ca.key", "apiserver.key", "admin.kubeconfig", "agent-node-1.kubeconfig"} {
		if fi, err := os.Stat(p(f)); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v %v, want 0600", f, fi, err)
		}
	}
	policy := filepath.Join(dir, "policy.yaml")
	os.WriteFile(policy, []byte("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n"), 0o600)
	srv, err := testserver.StartTLS(filepath.Join(dir, "etcd"), addr, p("admin.kubeconfig"), func(c *apiserver.Config) {
		c.TLSCertFile, c.TLSPrivateKeyFile, c.ClientCAFile = p("apiserver.crt"), p("apiserver.key"), p("ca.crt")
		c.AuditPolicyFile, c.AuditLogPath = policy, filepath.Join(dir, "audit.log")
	})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := client.For[*core.ConfigMap](srv.Client).Create(ctx, &core.ConfigMap{ObjectMeta: meta.ObjectMeta{Namespace: "default", Name: "by-admin"}}); err != nil {
		t.Fatalf("admin create: %v", err)
	}
	// A second connection as the same user (leader election's) works too.
	second, err := srv.Client.Another()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := second.Version(ctx); err != nil {
		t.Errorf("Another(): %v", err)
	}
	second.Close()
	// kobectl with the kubeconfig.
	out.Reset()
	errOut.Reset()
	if code := ctl.RunContext(ctx, []string{"--kubeconfig", p("admin.kubeconfig"), "get", "configmap", "by-admin"}, strings.NewReader(""), &out, &errOut); code != 0 {
		t.Errorf("kobectl --kubeconfig: %s%s", out.String(), errOut.String())
	}
	refused := func(what string, c *client.Client, want codes.Code) {
		t.Helper()
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		_, _, err := client.For[*core.ConfigMap](c).List(cctx, "default", client.ListOptions{})
		if err == nil || (want != codes.Unknown && status.Code(err) != want) {
			t.Errorf("%s: %v, want it refused (%v)", what, err, want)
		}
		c.Close()
	}
	admin, _ := client.LoadKubeconfig(p("admin.kubeconfig"), "")
	noCert := admin
	noCert.Cert, noCert.Key = nil, nil
	c, err := client.NewFromConfig(noCert)
	if err != nil {
		t.Fatal(err)
	}
	refused("no client certificate", c, codes.Unauthenticated)
	// An expired certificate of the same CA.
	ca, caKey, err := pki.LoadCA(filepath.Join(dir, "pki"))
	if err != nil {
		t.Fatal(err)
	}
	cert, key, _ := pki.Issue(ca, caKey, &x509.Certificate{Subject: pkix.Name{CommonName: "old"}, NotBefore: time.Now().Add(-48 * time.Hour),
		NotAfter: time.Now().Add(-24 * time.Hour), ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
	expired := admin
	expired.Cert, expired.Key = cert, key
	c, _ = client.NewFromConfig(expired)
	refused("an expired certificate", c, codes.Unavailable)
	// A certificate of another CA.
	other := filepath.Join(dir, "other")
	if _, err := pki.Init(other, pki.Options{Server: "https://" + addr}); err != nil {
		t.Fatal(err)
	}
	foreign, _ := client.LoadKubeconfig(filepath.Join(other, "admin.kubeconfig"), "")
	mixed := admin
	mixed.Cert, mixed.Key = foreign.Cert, foreign.Key
	c, _ = client.NewFromConfig(mixed)
	refused("a certificate of another CA", c, codes.Unavailable)
	// The other CA does not vouch for this server: the client refuses it.
	c, _ = client.NewFromConfig(foreign)
	refused("a server the client's CA did not sign", c, codes.Unavailable)
	// Plaintext.
	c, _ = client.New(addr)
	refused("plaintext", c, codes.Unavailable)
	// The audit log names the admin.
	b, _ := os.ReadFile(filepath.Join(dir, "audit.log"))
	found := false
	for _, line := range strings.Split(string(b), "\n") {
		var ev struct {
			Verb string
			User struct {
				Username string
				Groups   []string
			}
			ObjectRef struct{ Name string }
		}
		if json.Unmarshal([]byte(line), &ev) == nil && ev.Verb == "create" && ev.ObjectRef.Name == "by-admin" {
			found = ev.User.Username == "kubernetes-admin" && strings.Contains(strings.Join(ev.User.Groups, ","), "system:masters")
		}
	}
	if !found {
		t.Errorf("the audit log does not name kubernetes-admin (system:masters) for the create:\n%s", b)
	}
}

// TestNoPlaintextByDefault: without TLS files the API server does not
// start unless told --insecure-plaintext, and the refusal says what to do.
func TestNoPlaintextByDefault(t *testing.T) {
	_, err := apiserver.New(context.Background(), apiserver.Config{Listen: "127.0.0.1:0", DataDir: t.TempDir(), Logf: t.Logf})
	if err == nil || !strings.Contains(err.Error(), "--insecure-plaintext") || !strings.Contains(err.Error(), "kobectl pki init") {
		t.Errorf("an API server without TLS files: %v, want a refusal naming kobectl pki init and --insecure-plaintext", err)
	}
}
