package certificates

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"strings"
	"time"

	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/api/selector"
	v "github.com/kobune/kobune/api/validation"
)

// PodCertificateRequest ("certificates.k8s.io/v1", namespaced) asks a
// signer for a certificate for one pod: the agent of the pod's node makes
// a key pair for a projected podCertificate source, sends a stub PKCS#10
// request signed with it (proof that it holds the key), and writes the
// chain the signer issues in status, with the key, into the pod's
// volume. Who signs is the signer's business (a controller watching its
// signerName); Kobune ships no pod certificate signer.
type PodCertificateRequest struct {
	meta.TypeMeta   `json:",inline"`
	meta.ObjectMeta `json:"metadata"`
	Spec            PodCertificateRequestSpec   `json:"spec"`
	Status          PodCertificateRequestStatus `json:"status"` // always written, as Kubernetes does: a JSON patch adds to it
}

// PodCertificateRequestSpec is the request; it cannot change.
type PodCertificateRequestSpec struct {
	SignerName           string `json:"signerName"`
	PodName              string `json:"podName"`
	PodUID               string `json:"podUID"`
	ServiceAccountName   string `json:"serviceAccountName"`
	ServiceAccountUID    string `json:"serviceAccountUID"`
	NodeName             string `json:"nodeName"`
	NodeUID              string `json:"nodeUID"`
	MaxExpirationSeconds *int32 `json:"maxExpirationSeconds,omitempty"`
	// StubPKCS10Request is a DER PKCS#10 request (base64 in JSON) whose
	// only use is its public key and its signature.
	StubPKCS10Request         []byte            `json:"stubPKCS10Request"`
	UnverifiedUserAnnotations map[string]string `json:"unverifiedUserAnnotations,omitempty"`
}

// PodCertificateRequestStatus is the signer's answer: one condition,
// Issued (with the chain and its times), Denied or Failed.
type PodCertificateRequestStatus struct {
	Conditions       []meta.Condition `json:"conditions,omitempty"`
	CertificateChain string           `json:"certificateChain,omitempty"`
	NotBefore        *meta.Time       `json:"notBefore,omitempty"`
	BeginRefreshAt   *meta.Time       `json:"beginRefreshAt,omitempty"`
	NotAfter         *meta.Time       `json:"notAfter,omitempty"`
}

// The terminal conditions of a PodCertificateRequest.
const (
	PodCertificateIssued = "Issued"
	PodCertificateDenied = "Denied"
	PodCertificateFailed = "Failed"
)

// Kubernetes' bounds.
const (
	MinMaxExpirationSeconds           = 60 * 60
	MaxMaxExpirationSeconds           = 91 * 24 * 60 * 60
	KubernetesMaxMaxExpirationSeconds = 24 * 60 * 60
	maxStubRequestBytes               = 10 * 1024
	maxCertificateChainBytes          = 100 * 1024
)

// MaxExpirationFor is the longest maxExpirationSeconds a signer may be
// asked for: a day for Kubernetes' own (kubernetes.io/...), 91 days else.
func MaxExpirationFor(signer string) int32 {
	if strings.HasPrefix(signer, "kubernetes.io/") || strings.HasPrefix(signer, "k8s.io/") || strings.HasSuffix(strings.SplitN(signer, "/", 2)[0], ".kubernetes.io") {
		return KubernetesMaxMaxExpirationSeconds
	}
	return MaxMaxExpirationSeconds
}

// Condition is the request's terminal condition, if it has one.
func (r *PodCertificateRequest) Condition() *meta.Condition {
	for i, c := range r.Status.Conditions {
		if c.Type == PodCertificateIssued || c.Type == PodCertificateDenied || c.Type == PodCertificateFailed {
			return &r.Status.Conditions[i]
		}
	}
	return nil
}

// ValidateUserAnnotations: each key domain-prefixed ("example.com/key").
func ValidateUserAnnotations(a map[string]string, p *v.Path) v.ErrorList {
	var errs v.ErrorList
	for k := range a {
		prefix, name, ok := strings.Cut(strings.ToLower(k), "/")
		if !ok || v.IsDNS1123Subdomain(prefix) != "" || name == "" || selector.ValidLabelKey(name) != nil {
			errs = append(errs, v.NewInvalid(p.Key(k), k, "must be a domain-prefixed path (such as \"acme.io/foo\")"))
		}
	}
	return append(errs, v.ValidateAnnotations(a, p)...)
}

// ValidatePodCertificateRequest checks a request as Kubernetes does: the
// names and uids it binds, its lifetime bound, and a stub request whose
// key is Ed25519, ECDSA P-256/384/521 or RSA 3072/4096 and whose
// signature verifies.
func ValidatePodCertificateRequest(r *PodCertificateRequest) v.ErrorList {
	errs := v.ValidateObjectMeta(&r.ObjectMeta, true, v.IsDNS1123Subdomain, v.NewPath("metadata"))
	sp := v.NewPath("spec")
	if r.Spec.SignerName == "" {
		errs = append(errs, v.NewRequired(sp.Child("signerName"), ""))
	} else if msg := v.IsSignerName(r.Spec.SignerName); msg != "" {
		errs = append(errs, v.NewInvalid(sp.Child("signerName"), r.Spec.SignerName, msg))
	}
	errs = append(errs, ValidateUserAnnotations(r.Spec.UnverifiedUserAnnotations, sp.Child("unverifiedUserAnnotations"))...)
	for _, f := range []struct {
		name, value string
		check       func(string) string
	}{{"podName", r.Spec.PodName, v.IsDNS1123Subdomain}, {"serviceAccountName", r.Spec.ServiceAccountName, v.IsDNS1123Subdomain},
		{"nodeName", r.Spec.NodeName, v.IsDNS1123Subdomain}} {
		if msg := f.check(f.value); msg != "" {
			errs = append(errs, v.NewInvalid(sp.Child(f.name), f.value, msg))
		}
	}
	for _, f := range []struct{ name, value string }{{"podUID", r.Spec.PodUID}, {"serviceAccountUID", r.Spec.ServiceAccountUID}, {"nodeUID", r.Spec.NodeUID}} {
		switch {
		case f.value == "":
			errs = append(errs, v.NewInvalid(sp.Child(f.name), f.value, "must not be empty"))
		case len(f.value) > 128:
			errs = append(errs, v.NewTooLong(sp.Child(f.name), "", 128))
		}
	}
	if e := r.Spec.MaxExpirationSeconds; e == nil {
		errs = append(errs, v.NewRequired(sp.Child("maxExpirationSeconds"), "must be set"))
	} else if max := MaxExpirationFor(r.Spec.SignerName); *e < MinMaxExpirationSeconds || *e > max {
		errs = append(errs, v.NewInvalid(sp.Child("maxExpirationSeconds"), *e, fmt.Sprintf("must be in the range [%d, %d]", MinMaxExpirationSeconds, max)))
	}
	rp := sp.Child("stubPKCS10Request")
	switch {
	case len(r.Spec.StubPKCS10Request) == 0:
		errs = append(errs, v.NewRequired(rp, ""))
	case len(r.Spec.StubPKCS10Request) > maxStubRequestBytes:
		errs = append(errs, v.NewTooLong(rp, "", maxStubRequestBytes))
	default:
		req, err := x509.ParseCertificateRequest(r.Spec.StubPKCS10Request)
		switch {
		case err != nil:
			errs = append(errs, v.NewInvalid(rp, "<value omitted>", "must be a valid PKCS#10 CSR"))
		case supportedKey(req.PublicKey) != "":
			errs = append(errs, v.NewInvalid(rp, "<value omitted>", supportedKey(req.PublicKey)))
		case req.CheckSignature() != nil:
			errs = append(errs, v.NewInvalid(rp, "<value omitted>", "invalid signature"))
		}
	}
	return errs
}

// supportedKey is "" for a key type Kubernetes accepts, or why not.
func supportedKey(k any) string {
	switch pub := k.(type) {
	case ed25519.PublicKey:
	case *ecdsa.PublicKey:
		if pub.Curve != elliptic.P256() && pub.Curve != elliptic.P384() && pub.Curve != elliptic.P521() {
			return "elliptic public keys must use curve P256, P384, or P521"
		}
	case *rsa.PublicKey:
		if pub.Size()*8 != 3072 && pub.Size()*8 != 4096 {
			return "RSA keys must have modulus size 3072 or 4096"
		}
	default:
		return "unknown public key type; supported types are Ed25519, ECDSA, and RSA"
	}
	return ""
}

// ValidatePodCertificateRequestUpdate: the spec cannot change.
func ValidatePodCertificateRequestUpdate(n, o *PodCertificateRequest) v.ErrorList {
	a, _ := json.Marshal(n.Spec)
	b, _ := json.Marshal(o.Spec)
	if string(a) != string(b) {
		return v.ErrorList{v.NewInvalid(v.NewPath("spec"), "", "field is immutable")}
	}
	return nil
}

// ValidatePodCertificateRequestStatus checks a signer's answer as
// Kubernetes does: one terminal condition, True; nothing changes once
// issued, denied or failed; a denial or failure carries nothing else; an
// issued chain's leaf is for the request's key, its times are in status
// (notBefore within 5 minutes of now), it lives at least an hour and at
// most maxExpirationSeconds, and the refresh time lies 10 minutes inside.
func ValidatePodCertificateRequestStatus(n, o *PodCertificateRequest) v.ErrorList {
	var errs v.ErrorList
	cp := v.NewPath("status", "conditions")
	known := 0
	for i, c := range n.Status.Conditions {
		switch c.Type {
		case PodCertificateIssued, PodCertificateDenied, PodCertificateFailed:
			if known++; known > 1 {
				errs = append(errs, v.NewInvalid(cp.Index(i).Child("type"), c.Type, `There may be at most one condition with type "Issued", "Denied", or "Failed"`))
			}
			if c.Status != meta.ConditionTrue {
				errs = append(errs, v.NewNotSupported(cp.Index(i).Child("status"), string(c.Status), []string{"True"}))
			}
		default:
			errs = append(errs, v.NewNotSupported(cp.Index(i).Child("type"), c.Type, []string{PodCertificateIssued, PodCertificateDenied, PodCertificateFailed}))
		}
	}
	errs = append(errs, v.Conditions(n.Status.Conditions, cp)...)
	if len(errs) > 0 {
		return errs
	}
	sp := v.NewPath("status")
	if o.Condition() != nil {
		a, _ := json.Marshal(n.Status)
		b, _ := json.Marshal(o.Status)
		if string(a) != string(b) {
			return v.ErrorList{v.NewForbidden(sp, "immutable after PodCertificateRequest is issued, denied, or failed")}
		}
		return nil
	}
	c := n.Condition()
	switch {
	case c == nil:
		if n.Status.CertificateChain != "" || n.Status.NotBefore != nil || n.Status.NotAfter != nil || n.Status.BeginRefreshAt != nil {
			return v.ErrorList{v.NewForbidden(sp, "the certificate and its times come with the Issued condition")}
		}
		return nil
	case c.Type != PodCertificateIssued:
		if n.Status.CertificateChain != "" || n.Status.NotBefore != nil || n.Status.NotAfter != nil || n.Status.BeginRefreshAt != nil {
			return v.ErrorList{v.NewForbidden(sp, "non-condition status fields must be empty when denying or failing the PodCertificateRequest")}
		}
		return nil
	}
	return validateIssued(n)
}

func validateIssued(n *PodCertificateRequest) v.ErrorList {
	chainPath := v.NewPath("status", "certificateChain")
	if len(n.Status.CertificateChain) > maxCertificateChainBytes {
		return v.ErrorList{v.NewTooLong(chainPath, "", maxCertificateChainBytes)}
	}
	leafBlock, rest := pem.Decode([]byte(n.Status.CertificateChain))
	if leafBlock == nil || leafBlock.Type != "CERTIFICATE" {
		return v.ErrorList{v.NewInvalid(chainPath, "<value omitted>", "issued certificate chain must contain at least one certificate, and only CERTIFICATE PEM blocks")}
	}
	leaf, err := x509.ParseCertificate(leafBlock.Bytes)
	if err != nil {
		return v.ErrorList{v.NewInvalid(chainPath, "<value omitted>", "leaf certificate does not parse as valid X.509")}
	}
	req, err := x509.ParseCertificateRequest(n.Spec.StubPKCS10Request)
	if err != nil {
		return v.ErrorList{v.NewInvalid(v.NewPath("spec", "stubPKCS10Request"), "<value omitted>", "must be a valid PKCS#10 CSR")}
	}
	if eq, ok := req.PublicKey.(interface{ Equal(crypto.PublicKey) bool }); !ok || !eq.Equal(leaf.PublicKey) {
		return v.ErrorList{v.NewInvalid(chainPath, "<value omitted>", "leaf certificate was not issued to the requested public key")}
	}
	s := n.Status
	var errs v.ErrorList
	for _, f := range []struct {
		name string
		t    *meta.Time
		what string
	}{{"notBefore", s.NotBefore, "must be present and consistent with the issued certificate"}, {"notAfter", s.NotAfter, "must be present and consistent with the issued certificate"},
		{"beginRefreshAt", s.BeginRefreshAt, "must be present and in the range [notbefore+10min, notafter-10min]"}} {
		if f.t == nil {
			errs = append(errs, v.NewRequired(v.NewPath("status", f.name), f.what))
		}
	}
	if len(errs) > 0 {
		return errs
	}
	sp := v.NewPath("status")
	switch lifetime := leaf.NotAfter.Sub(leaf.NotBefore); {
	case !s.NotBefore.Time.Equal(leaf.NotBefore):
		return v.ErrorList{v.NewInvalid(sp.Child("notBefore"), s.NotBefore.Time, "must be set to the NotBefore time encoded in the leaf certificate")}
	case s.NotBefore.Time.Sub(time.Now()).Abs() > 5*time.Minute:
		return v.ErrorList{v.NewInvalid(sp.Child("notBefore"), s.NotBefore.Time, "must be set to within 5 minutes of kube-apiserver's current time")}
	case !s.NotAfter.Time.Equal(leaf.NotAfter):
		return v.ErrorList{v.NewInvalid(sp.Child("notAfter"), s.NotAfter.Time, "must be set to the NotAfter time encoded in the leaf certificate")}
	case lifetime < time.Hour:
		return v.ErrorList{v.NewInvalid(chainPath, lifetime.String(), "leaf certificate lifetime must be >= 1 hour")}
	case n.Spec.MaxExpirationSeconds != nil && lifetime > time.Duration(*n.Spec.MaxExpirationSeconds)*time.Second:
		return v.ErrorList{v.NewInvalid(chainPath, lifetime.String(), fmt.Sprintf("leaf certificate lifetime must be <= spec.maxExpirationSeconds (%v)", *n.Spec.MaxExpirationSeconds))}
	case s.BeginRefreshAt.Time.Before(s.NotBefore.Time.Add(10 * time.Minute)):
		return v.ErrorList{v.NewInvalid(sp.Child("beginRefreshAt"), s.BeginRefreshAt.Time, "must be at least 10 minutes after status.notBefore")}
	case s.BeginRefreshAt.Time.After(s.NotAfter.Time.Add(-10 * time.Minute)):
		return v.ErrorList{v.NewInvalid(sp.Child("beginRefreshAt"), s.BeginRefreshAt.Time, "must be at least 10 minutes before status.notAfter")}
	}
	for i := 1; ; i++ {
		var b *pem.Block
		if b, rest = pem.Decode(rest); b == nil {
			break
		}
		if b.Type != "CERTIFICATE" {
			return v.ErrorList{v.NewInvalid(chainPath, "<value omitted>", "issued certificate chain must consist entirely of CERTIFICATE PEM blocks")}
		}
		if _, err := x509.ParseCertificate(b.Bytes); err != nil {
			return v.ErrorList{v.NewInvalid(chainPath, "<value omitted>", fmt.Sprintf("intermediate certificate %d does not parse as valid X.509", i))}
		}
	}
	return nil
}
