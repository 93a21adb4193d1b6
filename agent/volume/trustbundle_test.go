package volume

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"strings"
	"testing"

	"github.com/kobune/kobune/api/certificates"
	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
)

func caPEM(t *testing.T, cn string) string {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: cn}, IsCA: true, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, pub, priv)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
}

// TestTrustBundleFile: a clusterTrustBundle projection picks bundles by
// name, or by signer and label selector (nil: none; {}: all the
// signer's), writes each certificate once, and fails when nothing is
// picked unless optional (an empty file then).
func TestTrustBundleFile(t *testing.T) {
	one, two, three := caPEM(t, "one"), caPEM(t, "two"), caPEM(t, "three")
	bundle := func(name, signer, pems string, labels map[string]string) *certificates.ClusterTrustBundle {
		return &certificates.ClusterTrustBundle{ObjectMeta: meta.ObjectMeta{Name: name, Labels: labels},
			Spec: certificates.ClusterTrustBundleSpec{SignerName: signer, TrustBundle: pems}}
	}
	bundles := []*certificates.ClusterTrustBundle{
		bundle("plain", "", "comment before\n"+one, nil),
		bundle("ex.com:s:a", "ex.com/s", one+two, map[string]string{"alive": "true"}),
		bundle("ex.com:s:b", "ex.com/s", three, map[string]string{"alive": "false"}),
	}
	str := func(s string) *string { return &s }
	yes := true
	for _, tc := range []struct {
		name string
		p    core.ClusterTrustBundleProjection
		want []string // certificates in the file; nil: an error
	}{
		{"by name, only the PEM blocks", core.ClusterTrustBundleProjection{Name: str("plain")}, []string{one}},
		{"by signer and labels", core.ClusterTrustBundleProjection{SignerName: str("ex.com/s"), LabelSelector: &meta.LabelSelector{MatchLabels: map[string]string{"alive": "true"}}}, []string{one, two}},
		{"every bundle of the signer, each certificate once", core.ClusterTrustBundleProjection{SignerName: str("ex.com/s"), LabelSelector: &meta.LabelSelector{}}, []string{one, two, three}},
		{"nil selector, optional", core.ClusterTrustBundleProjection{SignerName: str("ex.com/s"), Optional: &yes}, []string{}},
		{"missing, optional", core.ClusterTrustBundleProjection{Name: str("nope"), Optional: &yes}, []string{}},
		{"missing", core.ClusterTrustBundleProjection{Name: str("nope")}, nil},
		{"nothing matches", core.ClusterTrustBundleProjection{SignerName: str("ex.com/s"), LabelSelector: &meta.LabelSelector{MatchLabels: map[string]string{"alive": "unknown"}}}, nil},
	} {
		tc.p.Path = "ca.pem"
		files, err := trustBundleFile(bundles, &tc.p, 0o644)
		if tc.want == nil {
			if err == nil {
				t.Errorf("%s: no error", tc.name)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		got := string(files["ca.pem"].Data)
		if want := strings.Join(tc.want, ""); len(got) != len(want) {
			t.Errorf("%s: %d bytes, want %d:\n%s", tc.name, len(got), len(want), got)
		}
		for _, c := range tc.want {
			if strings.Count(got, c) != 1 {
				t.Errorf("%s: a certificate is not in the file exactly once", tc.name)
			}
		}
	}
}
