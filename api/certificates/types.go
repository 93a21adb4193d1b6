// Package certificates holds CertificateSigningRequest
// ("certificates.k8s.io/v1"): a PEM certificate request for a signer
// (kubernetes.io/kube-apiserver-client-kubelet for an agent's client
// certificate, kubernetes.io/kubelet-serving for its node API's serving
// certificate), approved or denied in its status, and signed there. A
// joining node uses it with a bootstrap token, as the kubelet's TLS
// bootstrap does.
package certificates

import (
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"strings"

	"github.com/kobune/kobune/api/meta"
	v "github.com/kobune/kobune/api/validation"
)

// Signers Kobune signs for.
const (
	KubeletClientSigner  = "kubernetes.io/kube-apiserver-client-kubelet"
	KubeletServingSigner = "kubernetes.io/kubelet-serving"
	// APIServerClientSigner signs any client certificate once approved
	// (Kubernetes' kube-apiserver-client); kobune-controller approves by
	// itself only a node's request for its own CSI driver's identity.
	APIServerClientSigner = "kubernetes.io/kube-apiserver-client"
)

// CSI driver identities: kobune-csi-local on node N authenticates as
// system:kobune-csi-local:N in group system:kobune-csi-provisioners.
const (
	CSIUserPrefix   = "system:kobune-csi-local:"
	CSIProvisioners = "system:kobune-csi-provisioners"
)

// Condition types.
const (
	Approved = "Approved"
	Denied   = "Denied"
	Failed   = "Failed"
)

// CertificateSigningRequest asks a signer for a certificate.
type CertificateSigningRequest struct {
	meta.TypeMeta   `json:",inline"`
	meta.ObjectMeta `json:"metadata"`
	Spec            CertificateSigningRequestSpec   `json:"spec"`
	Status          CertificateSigningRequestStatus `json:"status,omitzero"`
}

// CertificateSigningRequestSpec is the request; username and groups are
// the requester's, set by the API server.
type CertificateSigningRequestSpec struct {
	// Request is the PEM "CERTIFICATE REQUEST" (base64 in JSON).
	Request           []byte              `json:"request"`
	SignerName        string              `json:"signerName"`
	ExpirationSeconds *int32              `json:"expirationSeconds,omitempty"`
	Usages            []string            `json:"usages,omitempty"`
	Username          string              `json:"username,omitempty"`
	UID               string              `json:"uid,omitempty"`
	Groups            []string            `json:"groups,omitempty"`
	Extra             map[string][]string `json:"extra,omitempty"`
}

// CertificateSigningRequestStatus is the verdict and the certificate.
type CertificateSigningRequestStatus struct {
	Conditions  []Condition `json:"conditions,omitempty"`
	Certificate []byte      `json:"certificate,omitempty"`
}

// IsZero lets an empty status be left out.
func (s CertificateSigningRequestStatus) IsZero() bool {
	return len(s.Conditions) == 0 && len(s.Certificate) == 0
}

// Condition is Approved, Denied or Failed.
type Condition struct {
	Type               string    `json:"type"`
	Status             string    `json:"status"`
	Reason             string    `json:"reason,omitempty"`
	Message            string    `json:"message,omitempty"`
	LastUpdateTime     meta.Time `json:"lastUpdateTime,omitzero"`
	LastTransitionTime meta.Time `json:"lastTransitionTime,omitzero"`
}

// Has reports whether the request has a true condition of type t.
func (c *CertificateSigningRequest) Has(t string) bool {
	for _, x := range c.Status.Conditions {
		if x.Type == t && x.Status == "True" {
			return true
		}
	}
	return false
}

// ParseRequest decodes spec.request.
func ParseRequest(b []byte) (*x509.CertificateRequest, error) {
	block, _ := pem.Decode(b)
	if block == nil || block.Type != "CERTIFICATE REQUEST" {
		return nil, errNotPEM
	}
	r, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil {
		return nil, err
	}
	return r, r.CheckSignature()
}

type pemError struct{}

func (pemError) Error() string { return `not a PEM block of type "CERTIFICATE REQUEST"` }

var errNotPEM = pemError{}

var knownUsages = []string{"signing", "digital signature", "content commitment", "key encipherment", "key agreement", "data encipherment",
	"cert sign", "crl sign", "encipher only", "decipher only", "any", "server auth", "client auth", "code signing", "email protection",
	"s/mime", "ipsec end system", "ipsec tunnel", "ipsec user", "timestamping", "ocsp signing", "microsoft sgc", "netscape sgc"}

// ValidateCertificateSigningRequest checks the request and the signer.
func ValidateCertificateSigningRequest(c *CertificateSigningRequest) v.ErrorList {
	errs := v.ValidateObjectMeta(&c.ObjectMeta, false, v.IsDNS1123Subdomain, v.NewPath("metadata"))
	if _, err := ParseRequest(c.Spec.Request); err != nil {
		errs = append(errs, v.NewInvalid(v.NewPath("spec", "request"), "", err.Error()))
	}
	if c.Spec.SignerName == "" {
		errs = append(errs, v.NewRequired(v.NewPath("spec", "signerName"), ""))
	} else if !strings.Contains(c.Spec.SignerName, "/") {
		errs = append(errs, v.NewInvalid(v.NewPath("spec", "signerName"), c.Spec.SignerName, "must be a fully qualified domain and path of the form 'example.com/signer-name'"))
	}
	if e := c.Spec.ExpirationSeconds; e != nil && *e < 600 {
		errs = append(errs, v.NewInvalid(v.NewPath("spec", "expirationSeconds"), *e, "may not specify a duration less than 600 seconds (10 minutes)"))
	}
	for i, u := range c.Spec.Usages {
		ok := false
		for _, k := range knownUsages {
			ok = ok || u == k
		}
		if !ok {
			errs = append(errs, v.NewNotSupported(v.NewPath("spec", "usages").Index(i), u, []string{"digital signature", "key encipherment", "client auth", "server auth", "..."}))
		}
	}
	return errs
}

// ValidateApproval checks the conditions an approval writes, as
// Kubernetes does: each has a type and a status of True, False or
// Unknown; Approved, Denied and Failed appear once at most; a request is
// never both Approved and Denied.
func ValidateApproval(c *CertificateSigningRequest) v.ErrorList {
	var errs v.ErrorList
	p := v.NewPath("status", "conditions")
	seen := map[string]bool{}
	for i, cond := range c.Status.Conditions {
		cp := p.Index(i)
		if cond.Type == "" {
			errs = append(errs, v.NewRequired(cp.Child("type"), ""))
		}
		switch cond.Status {
		case "True", "False", "Unknown":
		case "":
			errs = append(errs, v.NewRequired(cp.Child("status"), ""))
		default:
			errs = append(errs, v.NewNotSupported(cp.Child("status"), cond.Status, []string{"False", "True", "Unknown"}))
		}
		if (cond.Type == Approved || cond.Type == Denied || cond.Type == Failed) && seen[cond.Type] {
			errs = append(errs, v.NewDuplicate(cp.Child("type"), cond.Type))
		}
		seen[cond.Type] = true
	}
	if c.Has(Approved) && c.Has(Denied) {
		errs = append(errs, v.NewInvalid(p, Denied, "Approved and Denied conditions are mutually exclusive"))
	}
	return errs
}

// ValidateCertificateSigningRequestUpdate: the spec cannot change.
func ValidateCertificateSigningRequestUpdate(n, o *CertificateSigningRequest) v.ErrorList {
	if string(n.Spec.Request) != string(o.Spec.Request) || n.Spec.SignerName != o.Spec.SignerName || n.Spec.Username != o.Spec.Username ||
		strings.Join(n.Spec.Groups, ",") != strings.Join(o.Spec.Groups, ",") || strings.Join(n.Spec.Usages, ",") != strings.Join(o.Spec.Usages, ",") ||
		fmt.Sprint(n.Spec.Extra) != fmt.Sprint(o.Spec.Extra) {
		return v.ErrorList{v.NewForbidden(v.NewPath("spec"), "field is immutable")}
	}
	return nil
}
