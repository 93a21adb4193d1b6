package admission

import (
	"context"
	"slices"

	"github.com/kobune/kobune/api/certificates"
	"github.com/kobune/kobune/apiserver/request"
)

// CertificateSigningRequest records who asks: a new request's
// spec.username and spec.groups are the requester's, whatever the request
// said (Kubernetes' strategy does the same), so approvers can trust them.
type CertificateSigningRequest struct{}

// Name implements Mutator.
func (CertificateSigningRequest) Name() string { return "CertificateSigningRequest" }

// Admit implements Mutator.
func (CertificateSigningRequest) Admit(ctx context.Context, a *Attributes) error {
	csr, ok := a.Object.(*certificates.CertificateSigningRequest)
	if !ok || a.Operation != Create {
		return nil
	}
	u := request.UserFrom(ctx)
	csr.Spec.Username, csr.Spec.Groups, csr.Spec.UID, csr.Spec.Extra = u.Name, slices.Clone(u.Groups), "", u.Extra
	return nil
}
