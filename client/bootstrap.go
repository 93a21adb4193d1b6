package client

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"regexp"
	"strings"
	"time"

	"github.com/kobune/kobune/api/certificates"
	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
)

// Bootstrap tokens, as Kubernetes': "<id>.<secret>" (6 and 16 of
// [a-z0-9]), each a Secret kube-system/bootstrap-token-<id> of type
// bootstrap.kubernetes.io/token. A joining machine authenticates with one
// as system:bootstrap:<id> in group system:bootstrappers, and checks the
// cluster it joins with it: the cluster-info ConfigMap in kube-public
// (readable by anyone) carries the cluster's CA and address, signed with
// every token that may sign (jws-kubeconfig-<id>, a detached JWS, HS256
// with the whole token as the key): only a server that knows the token
// can sign, so the joiner trusts the CA it reads there.
const (
	BootstrapTokenSecretType   = "bootstrap.kubernetes.io/token"
	BootstrapTokenSecretPrefix = "bootstrap-token-"
	BootstrapTokenNamespace    = "kube-system"
	BootstrappersGroup         = "system:bootstrappers"
	// DefaultNodeTokenGroup is the extra group of the tokens kobeadm makes
	// (kubeadm's), to which it grants reading nodes: join refuses a name
	// a live node has.
	DefaultNodeTokenGroup = "system:bootstrappers:kubeadm:default-node-token"
	ClusterInfoNamespace  = "kube-public"
	ClusterInfoName       = "cluster-info"
	ClusterInfoKubeconfig = "kubeconfig"
	ClusterInfoJWSPrefix  = "jws-kubeconfig-"
)

// BootstrapTokenRE matches a token: its id and its secret.
var BootstrapTokenRE = regexp.MustCompile(`^([a-z0-9]{6})\.([a-z0-9]{16})$`)

// BootstrapToken is what a token Secret says.
type BootstrapToken struct {
	ID, Secret, Description string
	// Expires is zero for a token that never expires.
	Expires time.Time
	// Usages: "authentication", "signing".
	Usages, Groups []string
}

// ParseBootstrapToken splits "<id>.<secret>"; ok is false for anything
// else.
func ParseBootstrapToken(s string) (BootstrapToken, bool) {
	m := BootstrapTokenRE.FindStringSubmatch(s)
	if m == nil {
		return BootstrapToken{}, false
	}
	return BootstrapToken{ID: m[1], Secret: m[2]}, true
}

// Token is "<id>.<secret>".
func (b BootstrapToken) Token() string { return b.ID + "." + b.Secret }

// Expired reports whether the token has expired at now.
func (b BootstrapToken) Expired(now time.Time) bool {
	return !b.Expires.IsZero() && !now.Before(b.Expires)
}

// NewBootstrapToken is a random token of kubeadm's defaults: it
// authenticates and signs, in group DefaultNodeTokenGroup; ttl 0 never
// expires.
func NewBootstrapToken(ttl time.Duration, description string) BootstrapToken {
	b := BootstrapToken{ID: randomToken(6), Secret: randomToken(16), Description: description,
		Usages: []string{"authentication", "signing"}, Groups: []string{DefaultNodeTokenGroup}}
	if ttl > 0 {
		b.Expires = time.Now().Add(ttl).UTC().Truncate(time.Second)
	}
	return b
}

// BootstrapTokenSecret is the token's Secret.
func BootstrapTokenSecret(b BootstrapToken) *core.Secret {
	data := map[string]string{"token-id": b.ID, "token-secret": b.Secret}
	if b.Description != "" {
		data["description"] = b.Description
	}
	if !b.Expires.IsZero() {
		data["expiration"] = b.Expires.UTC().Format(time.RFC3339)
	}
	for _, u := range b.Usages {
		data["usage-bootstrap-"+u] = "true"
	}
	if len(b.Groups) > 0 {
		data["auth-extra-groups"] = strings.Join(b.Groups, ",")
	}
	return &core.Secret{ObjectMeta: meta.ObjectMeta{Namespace: BootstrapTokenNamespace, Name: BootstrapTokenSecretPrefix + b.ID},
		Type: BootstrapTokenSecretType, StringData: data}
}

// ParseBootstrapTokenSecret reads a token Secret (Data, as stored); ok is
// false for a Secret that is not a well-formed token.
func ParseBootstrapTokenSecret(s *core.Secret) (BootstrapToken, bool) {
	d := func(k string) string {
		if v, ok := s.Data[k]; ok {
			return string(v)
		}
		return s.StringData[k]
	}
	b := BootstrapToken{ID: d("token-id"), Secret: d("token-secret"), Description: d("description")}
	if s.Type != BootstrapTokenSecretType || s.Name != BootstrapTokenSecretPrefix+b.ID || !BootstrapTokenRE.MatchString(b.Token()) {
		return b, false
	}
	if exp := d("expiration"); exp != "" {
		t, err := time.Parse(time.RFC3339, exp)
		if err != nil {
			return b, false
		}
		b.Expires = t
	}
	for _, u := range []string{"authentication", "signing"} {
		if d("usage-bootstrap-"+u) == "true" {
			b.Usages = append(b.Usages, u)
		}
	}
	for _, g := range strings.Split(d("auth-extra-groups"), ",") {
		if g = strings.TrimSpace(g); g != "" {
			b.Groups = append(b.Groups, g)
		}
	}
	return b, true
}

// CreateBootstrapToken makes a bootstrap token valid for ttl (a Secret
// kube-system/bootstrap-token-<id>, as `kubeadm token create`), for an
// agent to join with: it may only ask for its certificates.
func (c *Client) CreateBootstrapToken(ctx context.Context, ttl time.Duration, description string) (string, error) {
	b, err := c.MakeBootstrapToken(ctx, ttl, description)
	return b.Token(), err
}

// MakeBootstrapToken is CreateBootstrapToken returning the whole token
// (its id, expiry, usages and groups).
func (c *Client) MakeBootstrapToken(ctx context.Context, ttl time.Duration, description string) (BootstrapToken, error) {
	b := NewBootstrapToken(ttl, description)
	_, err := For[*core.Secret](c).Create(ctx, BootstrapTokenSecret(b))
	return b, err
}

// SignClusterInfo is the detached JWS (RFC 7515, header..signature) of
// the cluster-info kubeconfig with a token, as Kubernetes' bootstrap
// signer writes it: HS256 keyed with the token's secret, the token's id
// as "kid". Written out with crypto/hmac (a JOSE library refuses HMAC keys
// shorter than 32 bytes; a token's secret has 16 characters).
func SignClusterInfo(kubeconfig string, b BootstrapToken) (string, error) {
	header := base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"HS256","kid":"` + b.ID + `"}`))
	return header + ".." + jwsMAC(header, kubeconfig, b.Secret), nil
}

func jwsMAC(header, content, key string) string {
	m := hmac.New(sha256.New, []byte(key))
	m.Write([]byte(header + "." + base64.RawURLEncoding.EncodeToString([]byte(content))))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// VerifyClusterInfo checks a detached JWS of the cluster-info kubeconfig
// against a token: HS256 only, signed with this token's id and secret.
func VerifyClusterInfo(kubeconfig, detached string, b BootstrapToken) error {
	header, sig, ok := strings.Cut(detached, "..")
	if !ok {
		return errors.New("not a detached JWS (header..signature)")
	}
	raw, err := base64.RawURLEncoding.DecodeString(header)
	if err != nil {
		return fmt.Errorf("JWS header: %w", err)
	}
	var h struct{ Alg, Kid string }
	if err := json.Unmarshal(raw, &h); err != nil {
		return fmt.Errorf("JWS header: %w", err)
	}
	if h.Alg != "HS256" || h.Kid != b.ID {
		return fmt.Errorf("JWS header %s: want alg HS256 and kid %s", raw, b.ID)
	}
	if !hmac.Equal([]byte(sig), []byte(jwsMAC(header, kubeconfig, b.Secret))) {
		return errors.New("the signature does not match")
	}
	return nil
}

// CAHash is a CA's public-key pin, "sha256:<hex>" of its
// SubjectPublicKeyInfo (kubeadm's --discovery-token-ca-cert-hash).
func CAHash(ca *x509.Certificate) string {
	sum := sha256.Sum256(ca.RawSubjectPublicKeyInfo)
	return "sha256:" + hex.EncodeToString(sum[:])
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
