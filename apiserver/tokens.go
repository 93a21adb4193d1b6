package apiserver

import (
	"context"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/apiserver/authentication"
	"github.com/kobune/kobune/apiserver/registry"
	"github.com/kobune/kobune/client"
	"github.com/kobune/kobune/proto/apipb"
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

// creators are the resources that are created but never stored: the
// reviews and ServiceAccount tokens (the registry calls them).
func (s *Server) creators() map[string]registry.CreateFunc {
	out := map[string]registry.CreateFunc{client.TokenSubresource: s.authn.CreateToken}
	for resource, r := range registry.Reviews {
		if r.Kind == "TokenReview" {
			out[resource] = s.authn.CreateTokenReview // the authenticator's, not the authorizer's
			continue
		}
		out[resource] = func(ctx context.Context, req *apipb.CreateRequest) (*apipb.ObjectResponse, error) {
			return s.authz.CreateReview(ctx, r, req)
		}
	}
	return out
}
