// Package authentication owns who a caller is: its verified client
// certificate (CN the user, O the groups), else a bearer token — a
// bootstrap token (a joining node's) or a ServiceAccount token, checked
// against the ServiceAccount and the pod it is bound to — else anonymous,
// refused unless allowed; then impersonation (kubectl --as), which the
// authorizer must allow. It also issues ServiceAccount tokens (the
// serviceaccounts/token subresource, TokenRequest).
//
// It mirrors kube-apiserver's authenticators
// (k8s.io/apiserver/pkg/authentication: x509, bearer tokens, the
// bootstrap token authenticator, the ServiceAccount token authenticator)
// and impersonation filter, and TokenREST for tokens.
package authentication

import (
	"context"

	"github.com/kobune/kobune/apiserver/request"
	"github.com/kobune/kobune/apiserver/storage"
)

// Config is what the authenticator checks against.
type Config struct {
	// Store holds the bootstrap tokens' Secrets, ServiceAccounts and pods.
	Store *storage.Store
	// ServiceAccounts signs and verifies tokens (nil: no bearer tokens).
	ServiceAccounts *ServiceAccounts
	// AnonymousAllowed lets callers without credentials in as
	// system:anonymous.
	AnonymousAllowed bool
	// Allowed asks the authorizer whether a user may do a (the impersonate
	// verb, for impersonation); it waits until the authorizer is ready.
	Allowed func(ctx context.Context, u request.UserInfo, a *request.Attributes) (bool, error)
}

// ServiceAccountConfig is where the token keys are and what tokens say.
type ServiceAccountConfig struct {
	// SigningKeyFile signs tokens, KeyFiles verify them
	// (--service-account-signing-key-file, --service-account-key-file).
	SigningKeyFile string
	KeyFiles       []string
	// Issuer is the tokens' iss ("": DefaultServiceAccountIssuer) and
	// Audiences those this server accepts (default: the issuer).
	Issuer    string
	Audiences []string
}

// Authenticator authenticates calls and issues tokens.
type Authenticator struct{ cfg Config }

// New returns an authenticator.
func New(cfg Config) *Authenticator { return &Authenticator{cfg: cfg} }
