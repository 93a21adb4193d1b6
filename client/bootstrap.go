package client

import (
	"context"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"time"

	"crypto/ecdsa"
	"crypto/elliptic"

	"github.com/kobune/kobune/api/certificates"
	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
)

// CreateBootstrapToken makes a bootstrap token valid for ttl (a Secret
// kube-system/bootstrap-token-<id>, as `kubeadm token create`), for an
// agent to join with: it may only ask for its certificates.
func (c *Client) CreateBootstrapToken(ctx context.Context, ttl time.Duration, description string) (string, error) {
	id, secret := randomToken(6), randomToken(16)
	sec := &core.Secret{ObjectMeta: meta.ObjectMeta{Namespace: "kube-system", Name: "bootstrap-token-" + id}, Type: "bootstrap.kubernetes.io/token",
		StringData: map[string]string{"token-id": id, "token-secret": secret, "usage-bootstrap-authentication": "true",
			"expiration": time.Now().Add(ttl).UTC().Format(time.RFC3339), "description": description}}
	if _, err := For[*core.Secret](c).Create(ctx, sec); err != nil {
		return "", err
	}
	return id + "." + secret, nil
}

func randomToken(n int) string {
	const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
	out := make([]byte, n)
	for i := range out {
		k, _ := rand.Int(rand.Reader, big.NewInt(int64(len(alphabet))))
		out[i] = alphabet[k.Int64()]
	}
	return string(out)
}

// RequestCertificate asks for a certificate for a new key through a
// CertificateSigningRequest and waits for it to be signed: the agent's
// TLS bootstrap. It returns the certificate and key as PEM; a request
// that is denied, or fails, says so.
func (c *Client) RequestCertificate(ctx context.Context, name, signer string, subject pkix.Name, dnsNames []string, usages []string) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: subject, DNSNames: dnsNames}, key)
	if err != nil {
		return nil, nil, err
	}
	csrs := For[*certificates.CertificateSigningRequest](c)
	r := &certificates.CertificateSigningRequest{ObjectMeta: meta.ObjectMeta{Name: name + "-" + randomToken(5)},
		Spec: certificates.CertificateSigningRequestSpec{Request: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}),
			SignerName: signer, Usages: usages}}
	created, err := csrs.Create(ctx, r)
	if err != nil {
		return nil, nil, fmt.Errorf("certificate signing request: %w", err)
	}
	got, err := WaitFor(ctx, csrs, "", created.Name, 0, func(r *certificates.CertificateSigningRequest, _ bool) bool {
		return len(r.Status.Certificate) > 0 || r.Has(certificates.Denied) || r.Has(certificates.Failed)
	})
	if err != nil {
		return nil, nil, fmt.Errorf("certificate signing request %s was not signed (is kobune-controller running with --cluster-signing-cert-file? kobectl get csr): %w", created.Name, err)
	}
	if len(got.Status.Certificate) == 0 {
		return nil, nil, fmt.Errorf("certificate signing request %s was denied or failed: %+v", created.Name, got.Status.Conditions)
	}
	kder, _ := x509.MarshalECPrivateKey(key)
	return got.Status.Certificate, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), nil
}
