package controllermanager_test

import (
	"context"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kobune/kobune/agent"
	"github.com/kobune/kobune/api/certificates"
	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
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
	updated, err := client.For[*core.Secret](admin).Update(ctx, sec)
	if err != nil {
		t.Fatal(err)
	}
	// (the token cleaner may have deleted it already: then it is no token)
	if _, err := boot.WhoAmI(ctx); status.Code(err) != codes.Unauthenticated || !strings.Contains(err.Error(), "expired") && !strings.Contains(err.Error(), "no such token") {
		t.Errorf("an expired bootstrap token: %v, want Unauthenticated (expired)", err)
	}
	// The token cleaner deletes it.
	if _, err := client.WaitFor(ctx, client.For[*core.Secret](admin), "kube-system", sec.Name, rv(updated.ResourceVersion), func(_ *core.Secret, deleted bool) bool { return deleted }); err != nil {
		t.Errorf("the expired token's Secret was not deleted by the token cleaner: %v", err)
	}
}

// TestClusterInfoIsSignedWithEachToken: the bootstrap signer signs
// kube-public's cluster-info with every token that may sign (a joining
// machine checks the signature with its token before it trusts the CA it
// reads there), not with a token that may not, and drops a signature when
// its token is deleted; a changed cluster-info is signed again.
func TestClusterInfoIsSignedWithEachToken(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cl := testcluster.Start(t, ctx, testcluster.Options{})
	admin := cl.Client
	configMaps, secrets := client.For[*core.ConfigMap](admin), client.For[*core.Secret](admin)
	kc := "apiVersion: v1\nkind: Config\nclusters:\n- name: \"\"\n  cluster:\n    server: https://10.0.0.1:6443\n"
	if _, err := configMaps.Create(ctx, &core.ConfigMap{ObjectMeta: meta.ObjectMeta{Namespace: "kube-public", Name: "cluster-info"},
		Data: map[string]string{"kubeconfig": kc}}); err != nil {
		t.Fatal(err)
	}
	signs, plain := client.NewBootstrapToken(time.Hour, "signs"), client.NewBootstrapToken(time.Hour, "does not sign")
	plain.Usages = []string{"authentication"}
	for _, b := range []client.BootstrapToken{signs, plain} {
		if _, err := secrets.Create(ctx, client.BootstrapTokenSecret(b)); err != nil {
			t.Fatal(err)
		}
	}
	// signed: cluster-info holds content, signed (verifiably) by exactly these tokens.
	signed := func(content string, tokens ...client.BootstrapToken) func(*core.ConfigMap, bool) bool {
		return func(cm *core.ConfigMap, _ bool) bool {
			if cm.Data["kubeconfig"] != content {
				return false
			}
			n := 0
			for k := range cm.Data {
				if strings.HasPrefix(k, "jws-kubeconfig-") {
					n++
				}
			}
			for _, b := range tokens {
				if client.VerifyClusterInfo(content, cm.Data["jws-kubeconfig-"+b.ID], b) != nil {
					return false
				}
			}
			return n == len(tokens)
		}
	}
	cm, err := client.WaitFor(ctx, configMaps, "kube-public", "cluster-info", 0, signed(kc, signs))
	if err != nil {
		t.Fatalf("cluster-info not signed with the signing token (and only with it): %v", err)
	}
	if err := client.VerifyClusterInfo(kc+"# changed\n", cm.Data["jws-kubeconfig-"+signs.ID], signs); err == nil {
		t.Error("the signature verifies a changed kubeconfig")
	}
	other := signs
	other.Secret = "0123456789abcdef"
	if err := client.VerifyClusterInfo(kc, cm.Data["jws-kubeconfig-"+signs.ID], other); err == nil {
		t.Error("the signature verifies with a wrong token secret")
	}
	// A new address is signed again.
	kc2 := strings.Replace(kc, "10.0.0.1", "10.0.0.2", 1)
	retryUpdate(t, ctx, configMaps, "kube-public", "cluster-info", func(cm *core.ConfigMap) { cm.Data["kubeconfig"] = kc2 })
	if _, err := client.WaitFor(ctx, configMaps, "kube-public", "cluster-info", 0, signed(kc2, signs)); err != nil {
		t.Fatalf("a changed cluster-info was not signed again: %v", err)
	}
	// The token deleted: its signature goes.
	if err := secrets.Delete(ctx, "kube-system", "bootstrap-token-"+signs.ID, client.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.WaitFor(ctx, configMaps, "kube-public", "cluster-info", 0, signed(kc2)); err != nil {
		t.Errorf("the deleted token's signature stayed: %v", err)
	}
}

// rv is a resourceVersion as the revision a watch starts from.
func rv(s string) int64 {
	n, _ := strconv.ParseInt(s, 10, 64)
	return n
}

// TestAgentRenewsItsCertificates: the kubelet's certificate rotation. An
// agent whose client and serving certificates live 8 s renews both
// before they expire, through CertificateSigningRequests that
// kobune-controller approves (a node asking for its own name), and keeps
// talking to the API server with the same client after its first
// certificate has expired — what keeps a cluster alive past its first
// year.
func TestAgentRenewsItsCertificates(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cl := testcluster.Start(t, ctx, testcluster.Options{})
	ca, caKey, err := pki.LoadCA(cl.PKIDir)
	if err != nil {
		t.Fatal(err)
	}
	caPEM, _ := os.ReadFile(filepath.Join(cl.PKIDir, "ca.crt"))
	now := time.Now()
	subject := pkix.Name{CommonName: "system:node:node-r", Organization: []string{"system:nodes"}}
	short := func(eku x509.ExtKeyUsage, dns []string) ([]byte, []byte) {
		c, k, err := pki.Issue(ca, caKey, &x509.Certificate{Subject: subject, NotBefore: now.Add(-time.Second), NotAfter: now.Add(8 * time.Second),
			KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{eku}, DNSNames: dns})
		if err != nil {
			t.Fatal(err)
		}
		return c, k
	}
	dir := t.TempDir()
	kcFile, certFile, keyFile := filepath.Join(dir, "agent.conf"), filepath.Join(dir, "serving.crt"), filepath.Join(dir, "serving.key")
	cc, ck := short(x509.ExtKeyUsageClientAuth, nil)
	kc, _ := pki.Kubeconfig("https://"+cl.Addr(), caPEM, cc, ck, subject.CommonName)
	sc, sk := short(x509.ExtKeyUsageServerAuth, []string{"node-r"})
	os.WriteFile(kcFile, kc, 0o600)
	os.WriteFile(certFile, sc, 0o600)
	os.WriteFile(keyFile, sk, 0o600)
	node, err := client.Dial("", kcFile)
	if err != nil {
		t.Fatal(err)
	}
	defer node.Close()
	go (&agent.Rotation{Kubeconfig: kcFile, CertFile: certFile, KeyFile: keyFile, NodeName: "node-r", Client: node, Logf: t.Logf}).Run(ctx)

	// Both renewed (at 70-90% of 8 s, plus a CSR's round trip, which a
	// loaded machine makes slower), and the first ones expired.
	renewed := func(b []byte) bool {
		block, _ := pem.Decode(b)
		if block == nil {
			return false
		}
		c, err := x509.ParseCertificate(block.Bytes)
		return err == nil && c.NotAfter.After(now.Add(time.Hour))
	}
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		cfg, err := client.LoadKubeconfig(kcFile, "")
		served, _ := os.ReadFile(certFile)
		if err == nil && renewed(cfg.Cert) && renewed(served) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	time.Sleep(time.Until(now.Add(9 * time.Second)))
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(caPEM)
	check := func(what string, b []byte, eku x509.ExtKeyUsage, dns string) {
		t.Helper()
		block, _ := pem.Decode(b)
		if block == nil {
			t.Fatalf("%s: no certificate", what)
		}
		c, _ := x509.ParseCertificate(block.Bytes)
		if _, err := c.Verify(x509.VerifyOptions{Roots: roots, DNSName: dns, KeyUsages: []x509.ExtKeyUsage{eku}}); err != nil || c.Subject.CommonName != subject.CommonName {
			t.Errorf("%s after rotation: %v, subject %s", what, err, c.Subject)
		}
		if c.NotAfter.Before(time.Now().Add(24 * time.Hour)) {
			t.Errorf("%s was not renewed: it expires at %s", what, c.NotAfter)
		}
	}
	cfg, err := client.LoadKubeconfig(kcFile, "")
	if err != nil {
		t.Fatal(err)
	}
	check("the client certificate", cfg.Cert, x509.ExtKeyUsageClientAuth, "")
	served, _ := os.ReadFile(certFile)
	check("the serving certificate", served, x509.ExtKeyUsageServerAuth, "node-r")
	if u, err := node.WhoAmI(ctx); err != nil || u.Username != subject.CommonName {
		t.Errorf("the agent's client after its first certificate expired: %+v %v", u, err)
	}
	fresh, err := client.Dial("", kcFile) // a new connection: a new handshake with the renewed certificate
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close()
	if u, err := fresh.WhoAmI(ctx); err != nil || u.Username != subject.CommonName {
		t.Errorf("a new connection with the renewed kubeconfig: %+v %v", u, err)
	}
}

// TestNodeGetsItsCSIIdentity: a node asks for its kobune-csi-local's
// client certificate (what kobeadm join does) and gets it, approved and
// signed; the same request for another node's driver, or from a user who
// is not that node, stays pending.
func TestNodeGetsItsCSIIdentity(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl := testcluster.Start(t, ctx, testcluster.Options{Nodes: 1})
	node, err := client.Dial("", cl.Kubeconfig("agent-node-1"))
	if err != nil {
		t.Fatal(err)
	}
	defer node.Close()
	usages := []string{"digital signature", "client auth"}
	subject := func(n string) pkix.Name {
		return pkix.Name{CommonName: certificates.CSIUserPrefix + n, Organization: []string{certificates.CSIProvisioners}}
	}
	certPEM, keyPEM, err := node.RequestCertificate(ctx, "csi-node-1", certificates.APIServerClientSigner, subject("node-1"), nil, usages)
	if err != nil {
		t.Fatalf("node-1 asking for its CSI identity: %v", err)
	}
	caPEM, _ := os.ReadFile(filepath.Join(cl.PKIDir, "ca.crt"))
	kc, _ := pki.Kubeconfig("https://"+cl.Addr(), caPEM, certPEM, keyPEM, "csi")
	f := filepath.Join(t.TempDir(), "csi.conf")
	os.WriteFile(f, kc, 0o600)
	csi, err := client.Dial("", f)
	if err != nil {
		t.Fatal(err)
	}
	defer csi.Close()
	if u, err := csi.WhoAmI(ctx); err != nil || u.Username != "system:kobune-csi-local:node-1" || !slices.Contains(u.Groups, certificates.CSIProvisioners) {
		t.Errorf("the CSI identity: %+v %v", u, err)
	}
	for what, c := range map[string]*client.Client{"node-1 for node-2's driver": node, "the CSI driver for itself": csi} {
		sctx, scancel := context.WithTimeout(ctx, 3*time.Second)
		n := "node-2"
		if c == csi {
			n = "node-1"
		}
		_, _, err := c.RequestCertificate(sctx, "csi-other", certificates.APIServerClientSigner, subject(n), nil, usages)
		scancel()
		if err == nil {
			t.Errorf("%s: a certificate was issued without a person approving it", what)
		}
	}
}
