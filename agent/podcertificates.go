package agent

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"time"

	"github.com/kobune/kobune/agent/volume"
	"github.com/kobune/kobune/api/certificates"
	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/client"
)

// A pod's podCertificate projections, the kubelet's podcertificate
// manager: for each, the agent makes a private key of the asked type on
// the node (it never leaves it), sends the signer a PodCertificateRequest
// with a stub PKCS#10 request signed by that key, and once the signer has
// issued the certificate writes the key and the chain into the pod's
// volume. From the request's beginRefreshAt it asks again with a new key,
// keeping the old credentials until the new ones are issued. Until the
// first is issued the volume cannot be made (the pod waits, its sync
// tried again); a denial or failure is the volume's error, and the next
// try asks anew.

// certKey names one projection of one pod: the volume and the paths it
// writes.
type certKey struct{ pod, where string }

type podCert struct {
	keyPEM  []byte
	chain   []byte
	refresh time.Time // beginRefreshAt of the issued chain
	// pending is the request asked for and not yet answered, with the
	// key it is for.
	pending    string
	pendingKey []byte
}

// defaultCertSeconds is the life asked for when the projection names none.
const defaultCertSeconds = 24 * 60 * 60

// PodCertificate implements volume.Sources.
func (s *sources) PodCertificate(ctx context.Context, pod *core.Pod, where string, p *core.PodCertificateProjection) (key, chain []byte, err error) {
	k := certKey{pod.UID, where}
	s.mu.Lock()
	c := s.certs[k]
	if c == nil {
		c = &podCert{}
		s.certs[k] = c
	}
	cur := *c
	s.mu.Unlock()
	issued := cur.chain != nil
	if issued && time.Now().Before(cur.refresh) {
		return cur.keyPEM, cur.chain, nil
	}
	if cur.pending == "" {
		name, keyPEM, err := s.requestPodCertificate(ctx, pod, p)
		if err != nil {
			return s.stillValid(cur, fmt.Errorf("PodCertificateRequest for signer %s: %s", p.SignerName, client.Message(err)))
		}
		s.mu.Lock()
		c.pending, c.pendingKey = name, keyPEM
		s.mu.Unlock()
		cur.pending, cur.pendingKey = name, keyPEM
	}
	pcr, err := client.For[*certificates.PodCertificateRequest](s.client).Get(ctx, pod.Namespace, cur.pending)
	if err != nil {
		if client.IsNotFound(err) {
			s.mu.Lock()
			c.pending, c.pendingKey = "", nil // deleted: ask again
			s.mu.Unlock()
		}
		return s.stillValid(cur, fmt.Errorf("PodCertificateRequest %s/%s: %s", pod.Namespace, cur.pending, client.Message(err)))
	}
	cond := pcr.Condition()
	switch {
	case cond == nil:
		return s.stillValid(cur, fmt.Errorf("%w: PodCertificateRequest %s/%s is not yet issued by signer %s", volume.ErrPending, pod.Namespace, pcr.Name, p.SignerName))
	case cond.Type != certificates.PodCertificateIssued:
		s.mu.Lock()
		c.pending, c.pendingKey = "", nil
		s.mu.Unlock()
		return s.stillValid(cur, fmt.Errorf("PodCertificateRequest %s/%s was %s by signer %s: %s: %s", pod.Namespace, pcr.Name, cond.Type, p.SignerName, cond.Reason, cond.Message))
	}
	refresh := pcr.Status.NotAfter.Time
	if pcr.Status.BeginRefreshAt != nil {
		refresh = pcr.Status.BeginRefreshAt.Time
	}
	s.mu.Lock()
	c.keyPEM, c.chain, c.refresh = cur.pendingKey, []byte(pcr.Status.CertificateChain), refresh
	c.pending, c.pendingKey = "", nil
	out := *c
	s.mu.Unlock()
	return out.keyPEM, out.chain, nil
}

// stillValid keeps credentials issued earlier while a refresh is under
// way, and otherwise reports err.
func (s *sources) stillValid(c podCert, err error) ([]byte, []byte, error) {
	if c.chain != nil {
		return c.keyPEM, c.chain, nil
	}
	return nil, nil, err
}

// requestPodCertificate makes a key and sends its PodCertificateRequest;
// it returns the request's name and the key, PEM-encoded (PKCS#8).
func (s *sources) requestPodCertificate(ctx context.Context, pod *core.Pod, p *core.PodCertificateProjection) (string, []byte, error) {
	priv, err := newKey(p.KeyType)
	if err != nil {
		return "", nil, err
	}
	stub, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{}, priv)
	if err != nil {
		return "", nil, fmt.Errorf("stub certificate request: %w", err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		return "", nil, err
	}
	node, err := client.For[*core.Node](s.client).Get(ctx, "", pod.Spec.NodeName)
	if err != nil {
		return "", nil, err
	}
	sa, err := client.For[*core.ServiceAccount](s.client).Get(ctx, pod.Namespace, core.PodServiceAccount(pod))
	if err != nil {
		return "", nil, err
	}
	seconds := int32(defaultCertSeconds)
	if p.MaxExpirationSeconds != nil {
		seconds = *p.MaxExpirationSeconds
	}
	seconds = min(seconds, certificates.MaxExpirationFor(p.SignerName))
	pcr := &certificates.PodCertificateRequest{ObjectMeta: meta.ObjectMeta{GenerateName: pod.Name + "-", Namespace: pod.Namespace,
		OwnerReferences: []meta.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID}}},
		Spec: certificates.PodCertificateRequestSpec{SignerName: p.SignerName, PodName: pod.Name, PodUID: pod.UID,
			ServiceAccountName: sa.Name, ServiceAccountUID: sa.UID, NodeName: node.Name, NodeUID: node.UID,
			MaxExpirationSeconds: &seconds, StubPKCS10Request: stub, UnverifiedUserAnnotations: p.UserAnnotations}}
	created, err := client.For[*certificates.PodCertificateRequest](s.client).Create(ctx, pcr)
	if err != nil {
		return "", nil, err
	}
	return created.Name, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

// newKey makes a private key of a podCertificate's keyType.
func newKey(keyType string) (crypto.Signer, error) {
	switch keyType {
	case "RSA3072":
		return rsa.GenerateKey(rand.Reader, 3072)
	case "RSA4096":
		return rsa.GenerateKey(rand.Reader, 4096)
	case "ECDSAP256":
		return ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	case "ECDSAP384":
		return ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	case "ECDSAP521":
		return ecdsa.GenerateKey(elliptic.P521(), rand.Reader)
	case "ED25519":
		_, priv, err := ed25519.GenerateKey(rand.Reader)
		return priv, err
	}
	return nil, errors.New("unknown key type " + keyType)
}
