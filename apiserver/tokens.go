package apiserver

import (
	"context"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/apiserver/authentication"
	"github.com/kobune/kobune/apiserver/registry"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// serviceAccountGetter answers ServiceAccount admission from storage.
type serviceAccountGetter struct{ s *Server }

func (g serviceAccountGetter) ServiceAccount(ctx context.Context, ns, name string) (*core.ServiceAccount, bool, error) {
	sa, err := registry.GetStored[*core.ServiceAccount](ctx, g.s.store, "serviceaccounts", ns, name)
	if status.Code(err) == codes.NotFound {
		return nil, false, nil
	}
	return sa, err == nil, err
}

// DefaultServiceAccountIssuer is the tokens' issuer unless
// --service-account-issuer says otherwise (Kubernetes' usual value).
const DefaultServiceAccountIssuer = authentication.DefaultServiceAccountIssuer
