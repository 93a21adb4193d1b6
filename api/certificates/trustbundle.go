package certificates

import (
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"strings"

	"github.com/kobune/kobune/api/meta"
	v "github.com/kobune/kobune/api/validation"
)

// ClusterTrustBundle ("certificates.k8s.io/v1", cluster-scoped) publishes
// X.509 trust anchors (root certificates), optionally for one signer: a
// pod mounts them with a clusterTrustBundle projection (by name, or every
// bundle of a signer that a label selector picks), and the agent writes
// them into the pod's volume. Readable by every node; writing one needs
// create on clustertrustbundles (Kobune has no "attest" check on the
// signer: docs/differences.md).
type ClusterTrustBundle struct {
	meta.TypeMeta   `json:",inline"`
	meta.ObjectMeta `json:"metadata"`
	Spec            ClusterTrustBundleSpec `json:"spec"`
}

// ClusterTrustBundleSpec is the bundle.
type ClusterTrustBundleSpec struct {
	// SignerName, when set, ties the bundle to a signer: its name must
	// then start with the signer's name ("/" as ":") and a ":".
	SignerName string `json:"signerName,omitempty"`
	// TrustBundle is one or more PEM CERTIFICATE blocks.
	TrustBundle string `json:"trustBundle"`
}

// MaxTrustBundleBytes bounds a bundle (Kubernetes' limit).
const MaxTrustBundleBytes = 1 << 20

// ValidateClusterTrustBundle checks a bundle as Kubernetes does: its name
// by its signer, the signer's form, and a bundle of valid certificates.
func ValidateClusterTrustBundle(b *ClusterTrustBundle) v.ErrorList {
	errs := v.ValidateObjectMeta(&b.ObjectMeta, false, trustBundleName(b.Spec.SignerName), v.NewPath("metadata"))
	sp := v.NewPath("spec")
	if s := b.Spec.SignerName; s != "" {
		if domain, path, ok := strings.Cut(s, "/"); !ok || domain == "" || path == "" || v.IsDNS1123Subdomain(domain) != "" {
			errs = append(errs, v.NewInvalid(sp.Child("signerName"), s, "must be a fully qualified domain and path of the form 'example.com/signer-name'"))
		}
	}
	errs = append(errs, validateTrustBundle(b.Spec.TrustBundle, sp.Child("trustBundle"))...)
	return errs
}

// ValidateClusterTrustBundleUpdate: the signer cannot change.
func ValidateClusterTrustBundleUpdate(n, o *ClusterTrustBundle) v.ErrorList {
	if n.Spec.SignerName != o.Spec.SignerName {
		return v.ErrorList{v.NewInvalid(v.NewPath("spec", "signerName"), n.Spec.SignerName, "field is immutable")}
	}
	return nil
}

// trustBundleName is Kubernetes' rule for a bundle's name: with a signer,
// the signer's name ("/" as ":") and ":" first, then a DNS subdomain;
// without one, a DNS subdomain without ":".
func trustBundleName(signer string) v.NameFunc {
	return func(name string) string {
		if signer == "" {
			if strings.Contains(name, ":") {
				return `ClusterTrustBundle without signer name must not have ":" in its name`
			}
			return v.IsDNS1123Subdomain(name)
		}
		prefix := strings.ReplaceAll(signer, "/", ":") + ":"
		if !strings.HasPrefix(name, prefix) {
			return fmt.Sprintf("ClusterTrustBundle for signerName %s must be named with prefix %s", signer, prefix)
		}
		return v.IsDNS1123Subdomain(strings.TrimPrefix(name, prefix))
	}
}

func validateTrustBundle(bundle string, p *v.Path) v.ErrorList {
	if len(bundle) > MaxTrustBundleBytes {
		return v.ErrorList{v.NewTooLong(p, "", MaxTrustBundleBytes)}
	}
	if _, err := TrustAnchors(bundle); err != nil {
		return v.ErrorList{v.NewInvalid(p, "<value omitted>", err.Error())}
	}
	return nil
}

// TrustAnchors parses a bundle into its PEM CERTIFICATE blocks (each a
// valid certificate, without headers; at least one), as the kubelet
// normalizes them: only the blocks, nothing between them.
func TrustAnchors(bundle string) ([]*pem.Block, error) {
	var blocks []*pem.Block
	rest := []byte(bundle)
	for {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			break
		}
		switch {
		case b.Type != "CERTIFICATE":
			return nil, fmt.Errorf("entry %d has bad block type: %s", len(blocks), b.Type)
		case len(b.Headers) != 0:
			return nil, fmt.Errorf("entry %d has PEM block headers", len(blocks))
		}
		if _, err := x509.ParseCertificate(b.Bytes); err != nil {
			return nil, fmt.Errorf("entry %d does not parse correctly: %v", len(blocks), err)
		}
		blocks = append(blocks, b)
	}
	if len(blocks) == 0 {
		return nil, fmt.Errorf("at least one trust anchor must be provided")
	}
	return blocks, nil
}
