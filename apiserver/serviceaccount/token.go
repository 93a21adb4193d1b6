// Package serviceaccount signs and verifies ServiceAccount tokens: JWTs
// (ES256, github.com/go-jose/go-jose/v4 — the JOSE library Kubernetes
// itself uses) with Kubernetes' claims — issuer, subject
// system:serviceaccount:<namespace>:<name>, audiences, expiry, and under
// "kubernetes.io" the namespace, the ServiceAccount's, the pod's and the
// node's names and uids. The API server issues them through the
// serviceaccounts/token subresource (TokenRequest) and checks them as
// bearer tokens; that the bound pod and ServiceAccount still exist is the
// API server's check, not this package's.
package serviceaccount

import (
	"crypto/ecdsa"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// Claims are what a token says.
type Claims struct {
	Namespace, ServiceAccount, ServiceAccountUID string
	// PodName and PodUID are the pod it is bound to ("" for none), and
	// NodeName and NodeUID the pod's node.
	PodName, PodUID, NodeName, NodeUID string
	Audiences                          []string
	IssuedAt, Expiry                   time.Time
	// ID is the token's own (its jti claim), set when it is signed: the
	// credential's id in audit logs and TokenReviews.
	ID string
}

// Subject is the user a token authenticates as.
func (c *Claims) Subject() string {
	return "system:serviceaccount:" + c.Namespace + ":" + c.ServiceAccount
}

type ref struct {
	Name string `json:"name"`
	UID  string `json:"uid"`
}

type private struct {
	Kubernetes struct {
		Namespace      string `json:"namespace"`
		ServiceAccount ref    `json:"serviceaccount"`
		Pod            *ref   `json:"pod,omitempty"`
		Node           *ref   `json:"node,omitempty"`
	} `json:"kubernetes.io"`
}

// Signer issues tokens.
type Signer struct {
	issuer string
	signer jose.Signer
}

// Verifier checks tokens.
type Verifier struct {
	issuer string
	keys   []*ecdsa.PublicKey
}

// LoadSigner reads the private key (PEM, EC) tokens are signed with.
func LoadSigner(keyFile, issuer string) (*Signer, error) {
	b, err := os.ReadFile(keyFile)
	if err != nil {
		return nil, err
	}
	block, _ := pem.Decode(b)
	if block == nil {
		return nil, fmt.Errorf("%s: no PEM block", keyFile)
	}
	key, err := x509.ParseECPrivateKey(block.Bytes)
	if err != nil {
		k8, err2 := x509.ParsePKCS8PrivateKey(block.Bytes)
		ek, ok := k8.(*ecdsa.PrivateKey)
		if err2 != nil || !ok {
			return nil, fmt.Errorf("%s: want an EC private key: %w", keyFile, err)
		}
		key = ek
	}
	kid, err := KeyID(&key.PublicKey)
	if err != nil {
		return nil, err
	}
	sig, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: key}, (&jose.SignerOptions{}).WithType("JWT").WithHeader("kid", kid))
	if err != nil {
		return nil, err
	}
	return &Signer{issuer: issuer, signer: sig}, nil
}

// LoadVerifier reads the public keys (PEM; an EC private key file also
// gives its public key) tokens may be signed with: more than one while a
// key is being replaced.
func LoadVerifier(files []string, issuer string) (*Verifier, error) {
	v := &Verifier{issuer: issuer}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		for block, rest := pem.Decode(b); block != nil; block, rest = pem.Decode(rest) {
			switch block.Type {
			case "PUBLIC KEY":
				k, err := x509.ParsePKIXPublicKey(block.Bytes)
				if err != nil {
					return nil, fmt.Errorf("%s: %w", f, err)
				}
				ek, ok := k.(*ecdsa.PublicKey)
				if !ok {
					return nil, fmt.Errorf("%s: want an EC (P-256) public key", f)
				}
				v.keys = append(v.keys, ek)
			case "EC PRIVATE KEY":
				k, err := x509.ParseECPrivateKey(block.Bytes)
				if err != nil {
					return nil, fmt.Errorf("%s: %w", f, err)
				}
				v.keys = append(v.keys, &k.PublicKey)
			}
		}
	}
	if len(v.keys) == 0 {
		return nil, errors.New("no EC public key in the ServiceAccount key files")
	}
	return v, nil
}

// KeyID is a public key's id in tokens and the JWKS, as Kubernetes makes
// it: the unpadded base64url of the SHA-256 of its PKIX encoding.
func KeyID(k *ecdsa.PublicKey) (string, error) {
	der, err := x509.MarshalPKIXPublicKey(k)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(der)
	return base64.RawURLEncoding.EncodeToString(sum[:]), nil
}

// JWKS is the verifier's public keys as a JSON Web Key Set (the OIDC
// discovery's /openid/v1/jwks): what a relying party outside the cluster
// checks ServiceAccount tokens with.
func (v *Verifier) JWKS() ([]byte, error) {
	var set jose.JSONWebKeySet
	for _, k := range v.keys {
		kid, err := KeyID(k)
		if err != nil {
			return nil, err
		}
		set.Keys = append(set.Keys, jose.JSONWebKey{Key: k, KeyID: kid, Algorithm: string(jose.ES256), Use: "sig"})
	}
	return json.Marshal(set)
}

// Sign issues a token for c.
func (s *Signer) Sign(c Claims) (string, error) {
	var p private
	p.Kubernetes.Namespace = c.Namespace
	p.Kubernetes.ServiceAccount = ref{c.ServiceAccount, c.ServiceAccountUID}
	if c.PodName != "" {
		p.Kubernetes.Pod = &ref{c.PodName, c.PodUID}
	}
	if c.NodeName != "" {
		p.Kubernetes.Node = &ref{Name: c.NodeName, UID: c.NodeUID}
	}
	jti := make([]byte, 16)
	_, _ = rand.Read(jti)
	std := jwt.Claims{Issuer: s.issuer, Subject: c.Subject(), Audience: jwt.Audience(c.Audiences), Expiry: jwt.NewNumericDate(c.Expiry),
		IssuedAt: jwt.NewNumericDate(c.IssuedAt), NotBefore: jwt.NewNumericDate(c.IssuedAt), ID: hex.EncodeToString(jti)}
	return jwt.Signed(s.signer).Claims(std).Claims(p).Serialize()
}

// ErrNotAToken says the bearer token is not one of ours (another issuer,
// or not a JWT), so another authenticator may try it.
var ErrNotAToken = errors.New("not a ServiceAccount token of this cluster")

// Verify checks a token's signature, issuer, time and that one of its
// audiences is one of audiences, and returns its claims.
func (v *Verifier) Verify(token string, audiences []string, now time.Time) (*Claims, error) {
	tok, err := jwt.ParseSigned(token, []jose.SignatureAlgorithm{jose.ES256})
	if err != nil {
		return nil, ErrNotAToken
	}
	var std jwt.Claims
	var p private
	verified := false
	for _, k := range v.keys {
		if tok.Claims(k, &std, &p) == nil {
			verified = true
			break
		}
	}
	if !verified {
		return nil, errors.New("token signature is not valid (signed by another key)")
	}
	if std.Issuer != v.issuer {
		return nil, ErrNotAToken
	}
	if err := std.ValidateWithLeeway(jwt.Expected{Issuer: v.issuer, Time: now}, 5*time.Second); err != nil {
		return nil, fmt.Errorf("token: %w", err)
	}
	if !slices.ContainsFunc(audiences, func(a string) bool { return std.Audience.Contains(a) }) {
		return nil, fmt.Errorf("token audiences %q do not include this API server's (%q)", []string(std.Audience), audiences)
	}
	c := &Claims{Namespace: p.Kubernetes.Namespace, ServiceAccount: p.Kubernetes.ServiceAccount.Name, ServiceAccountUID: p.Kubernetes.ServiceAccount.UID,
		Audiences: std.Audience}
	if std.Subject != c.Subject() {
		return nil, errors.New("token subject does not match its ServiceAccount")
	}
	if p.Kubernetes.Pod != nil {
		c.PodName, c.PodUID = p.Kubernetes.Pod.Name, p.Kubernetes.Pod.UID
	}
	if p.Kubernetes.Node != nil {
		c.NodeName, c.NodeUID = p.Kubernetes.Node.Name, p.Kubernetes.Node.UID
	}
	c.ID = std.ID
	if std.Expiry != nil {
		c.Expiry = std.Expiry.Time()
	}
	if std.IssuedAt != nil {
		c.IssuedAt = std.IssuedAt.Time()
	}
	return c, nil
}
