package controllermanager_test

import (
	"context"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kobune/kobune/agent"
	"github.com/kobune/kobune/api/certificates"
	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/client"
	"github.com/kobune/kobune/client/pki"
	testcluster "github.com/kobune/kobune/test/cluster"
)

// TestNodeJoinsWithABootstrapToken: the kubelet's TLS bootstrap. With a
// bootstrap token an agent asks for its client certificate; the
// certificate controller approves and signs it; as system:node:<name> it
// then gets its node API's serving certificate for its name. The token
// itself may do nothing else, cannot approve its own requests, and a
// request for another identity is left pending; an expired token
// authenticates nobody.
func TestNodeJoinsWithABootstrapToken(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cl := testcluster.Start(t, ctx, testcluster.Options{})
	admin := cl.Client
	tok, err := admin.CreateBootstrapToken(ctx, time.Hour, "test join")
	if err != nil {
		t.Fatal(err)
	}
	caPEM, _ := os.ReadFile(filepath.Join(cl.PKIDir, "ca.crt"))
	dir := t.TempDir()
	bootKC := filepath.Join(dir, "bootstrap.kubeconfig")
	b, _ := pki.TokenKubeconfig("https://"+cl.Addr(), caPEM, tok, "system:bootstrap:"+tok[:6])
	if err := os.WriteFile(bootKC, b, 0o600); err != nil {
		t.Fatal(err)
	}
	boot, err := client.Dial("", bootKC)
	if err != nil {
		t.Fatal(err)
	}
	defer boot.Close()
	if u, err := boot.WhoAmI(ctx); err != nil || u.Username != "system:bootstrap:"+tok[:6] || !slices.Contains(u.Groups, "system:bootstrappers") {
		t.Fatalf("whoami with the bootstrap token: %+v %v", u, err)
	}
	if _, _, err := client.For[*core.Secret](boot).List(ctx, "kube-system", client.ListOptions{}); status.Code(err) != codes.PermissionDenied {
		t.Errorf("the bootstrap token lists Secrets: %v, want PermissionDenied", err)
	}
	// A request for another identity is not approved by the controller,
	// and the token cannot approve it itself.
	sctx, scancel := context.WithTimeout(ctx, 3*time.Second)
	_, _, err = boot.RequestCertificate(sctx, "sneaky", certificates.KubeletClientSigner, pkix.Name{CommonName: "kubernetes-admin", Organization: []string{"system:masters"}},
		nil, []string{"digital signature", "client auth"})
	scancel()
	if err == nil {
		t.Fatal("a bootstrap token got a certificate for kubernetes-admin (system:masters)")
	}
	csrs, _, _ := client.For[*certificates.CertificateSigningRequest](admin).List(ctx, "", client.ListOptions{})
	for _, r := range csrs {
		if strings.HasPrefix(r.Name, "sneaky-") {
			if r.Has(certificates.Approved) || len(r.Status.Certificate) > 0 {
				t.Errorf("the request for kubernetes-admin was approved or signed: %+v", r.Status)
			}
			r.Status.Conditions = append(r.Status.Conditions, certificates.Condition{Type: certificates.Approved, Status: "True", Reason: "Self"})
			if _, err := client.For[*certificates.CertificateSigningRequest](boot).UpdateStatus(ctx, r); status.Code(err) != codes.PermissionDenied {
				t.Errorf("the bootstrap token approves its own request: %v, want PermissionDenied", err)
			}
			if r.Spec.Username != "system:bootstrap:"+tok[:6] {
				t.Errorf("spec.username is %q, want the requester's", r.Spec.Username)
			}
		}
	}

	// The join.
	kc, certFile, keyFile, caFile := filepath.Join(dir, "agent.kubeconfig"), filepath.Join(dir, "serving.crt"), filepath.Join(dir, "serving.key"), filepath.Join(dir, "ca.crt")
	if err := agent.Bootstrap(ctx, agent.BootstrapConfig{BootstrapKubeconfig: bootKC, Kubeconfig: kc, NodeName: "node-9",
		CertFile: certFile, KeyFile: keyFile, ClientCAFile: caFile, Logf: t.Logf}); err != nil {
		t.Fatal(err)
	}
	node, err := client.Dial("", kc)
	if err != nil {
		t.Fatal(err)
	}
	defer node.Close()
	if u, err := node.WhoAmI(ctx); err != nil || u.Username != "system:node:node-9" || !slices.Contains(u.Groups, "system:nodes") {
		t.Errorf("whoami with the bootstrapped kubeconfig: %+v %v", u, err)
	}
	cb, _ := os.ReadFile(certFile)
	block, _ := pem.Decode(cb)
	if block == nil {
		t.Fatalf("no serving certificate in %s", certFile)
	}
	cert, _ := x509.ParseCertificate(block.Bytes)
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(caPEM)
	if _, err := cert.Verify(x509.VerifyOptions{Roots: roots, DNSName: "node-9", KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
		t.Errorf("the serving certificate does not verify for node-9: %v", err)
	}
	if _, err := os.Stat(caFile); err != nil {
		t.Errorf("the node API's client CA was not written: %v", err)
	}

	// An expired token authenticates nobody.
	sec, _ := client.For[*core.Secret](admin).Get(ctx, "kube-system", "bootstrap-token-"+tok[:6])
	sec.Data["expiration"] = []byte(time.Now().Add(-time.Minute).UTC().Format(time.RFC3339))
	if _, err := client.For[*core.Secret](admin).Update(ctx, sec); err != nil {
		t.Fatal(err)
	}
	if _, err := boot.WhoAmI(ctx); status.Code(err) != codes.Unauthenticated || !strings.Contains(err.Error(), "expired") {
		t.Errorf("an expired bootstrap token: %v, want Unauthenticated (expired)", err)
	}
}
