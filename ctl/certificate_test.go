package ctl_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"strings"
	"testing"

	"github.com/kobune/kobune/api/certificates"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/apiserver/testserver"
	"github.com/kobune/kobune/client"
)

// TestCertificateApproveAndDeny: kobectl certificate approve and deny
// write kubectl's condition (type, reason KubectlApprove or KubectlDeny)
// and say so in kubectl's words; their help says "Approve" and "Deny" (it
// said "Denie" once).
func TestCertificateApproveAndDeny(t *testing.T) {
	s := testserver.New(t)
	c := s.Client
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: "system:node:n1", Organization: []string{"system:nodes"}}}, key)
	if err != nil {
		t.Fatal(err)
	}
	csrs := client.For[*certificates.CertificateSigningRequest](c)
	ctx := context.Background()
	for _, name := range []string{"yes", "no"} {
		r := &certificates.CertificateSigningRequest{ObjectMeta: meta.ObjectMeta{Name: name},
			Spec: certificates.CertificateSigningRequestSpec{Request: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}),
				SignerName: "kubernetes.io/kube-apiserver-client-kubelet", Usages: []string{"digital signature", "client auth"}}}
		if _, err := csrs.Create(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	for _, tt := range []struct{ verb, name, said, condition, reason string }{
		{"approve", "yes", "approved", certificates.Approved, "KubectlApprove"},
		{"deny", "no", "denied", certificates.Denied, "KubectlDeny"},
	} {
		r := kobectl(t, s, "", "certificate", tt.verb, tt.name)
		if want := "certificatesigningrequest.certificates.k8s.io/" + tt.name + " " + tt.said + "\n"; r.code != 0 || r.stdout != want {
			t.Errorf("certificate %s: exit %d, %q %s; want %q", tt.verb, r.code, r.stdout, r.stderr, want)
		}
		got, err := csrs.Get(ctx, "", tt.name)
		if err != nil {
			t.Fatal(err)
		}
		var found bool
		for _, cond := range got.Status.Conditions {
			if cond.Type == tt.condition && cond.Reason == tt.reason && cond.Status == "True" {
				found = true
			}
		}
		if !found {
			t.Errorf("certificate %s: conditions %+v, want %s with reason %s", tt.verb, got.Status.Conditions, tt.condition, tt.reason)
		}
	}
	help := kobectl(t, nil, "", "certificate", "--help").stdout
	if !strings.Contains(help, "Approve a CertificateSigningRequest") || !strings.Contains(help, "Deny a CertificateSigningRequest") {
		t.Errorf("certificate --help:\n%s", help)
	}
}
