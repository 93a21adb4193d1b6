package serviceaccount

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kobune/kobune/client/pki"
)

func keys(t *testing.T) (keyFile, pubFile string) {
	t.Helper()
	dir := t.TempDir()
	if _, err := pki.Init(dir, pki.Options{Server: "https://127.0.0.1:6443"}); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, "sa.key"), filepath.Join(dir, "sa.pub")
}

func TestTokens(t *testing.T) {
	key, pub := keys(t)
	const iss = "https://kubernetes.default.svc.cluster.local"
	signer, err := LoadSigner(key, iss)
	if err != nil {
		t.Fatal(err)
	}
	verifier, err := LoadVerifier([]string{pub}, iss)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	c := Claims{Namespace: "shop", ServiceAccount: "reader", ServiceAccountUID: "sa-uid", PodName: "web-1", PodUID: "pod-uid", NodeName: "node-1",
		Audiences: []string{iss}, IssuedAt: now, Expiry: now.Add(time.Hour)}
	tok, err := signer.Sign(c)
	if err != nil {
		t.Fatal(err)
	}
	got, err := verifier.Verify(tok, []string{iss}, now)
	if err != nil {
		t.Fatal(err)
	}
	if got.Subject() != "system:serviceaccount:shop:reader" || got.PodUID != "pod-uid" || got.ServiceAccountUID != "sa-uid" || got.NodeName != "node-1" {
		t.Errorf("claims: %+v", got)
	}
	if _, err := verifier.Verify(tok, []string{"vault"}, now); err == nil || !strings.Contains(err.Error(), "audiences") {
		t.Errorf("another audience: %v", err)
	}
	if _, err := verifier.Verify(tok, []string{iss}, now.Add(2*time.Hour)); err == nil || !strings.Contains(err.Error(), "expired") {
		t.Errorf("expired: %v", err)
	}
	otherKey, _ := keys(t)
	other, _ := LoadSigner(otherKey, iss)
	forged, _ := other.Sign(c)
	if _, err := verifier.Verify(forged, []string{iss}, now); err == nil || !strings.Contains(err.Error(), "signature") {
		t.Errorf("signed by another key: %v", err)
	}
	foreign, _ := LoadSigner(key, "https://elsewhere")
	ft, _ := foreign.Sign(c)
	if _, err := verifier.Verify(ft, []string{iss}, now); !errors.Is(err, ErrNotAToken) {
		t.Errorf("another issuer: %v", err)
	}
	if _, err := verifier.Verify("not-a-jwt", []string{iss}, now); !errors.Is(err, ErrNotAToken) {
		t.Errorf("garbage: %v", err)
	}
	// A token whose payload was edited fails its signature.
	parts := strings.Split(tok, ".")
	b := []byte(parts[1])
	i := len(b) / 2
	if b[i] == 'A' {
		b[i] = 'B'
	} else {
		b[i] = 'A'
	}
	parts[1] = string(b)
	if _, err := verifier.Verify(strings.Join(parts, "."), []string{iss}, now); err == nil {
		t.Error("an edited token verified")
	}
}
