package apiserver

import (
	"context"
	"crypto/subtle"
	"slices"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/apiserver/request"
	"github.com/kobune/kobune/client"
)

// authenticateBootstrapToken checks a bootstrap token ("<id>.<secret>",
// client.BootstrapTokenRE) against its Secret kube-system/bootstrap-token-<id>:
// the secret part, usage-bootstrap-authentication "true", not expired. The
// user is system:bootstrap:<id> in system:bootstrappers and the token's
// auth-extra-groups (only system:bootstrappers:* ones, as Kubernetes).
func (s *Server) authenticateBootstrapToken(ctx context.Context, tok string) (request.UserInfo, bool, error) {
	given, ok := client.ParseBootstrapToken(tok)
	if !ok {
		return request.Anonymous, false, nil
	}
	refuse := func(why string) (request.UserInfo, bool, error) {
		return request.Anonymous, true, status.Error(codes.Unauthenticated, "Unauthorized: bootstrap token "+given.ID+": "+why)
	}
	sec, err := getStored[*core.Secret](ctx, s, "secrets", client.BootstrapTokenNamespace, client.BootstrapTokenSecretPrefix+given.ID)
	if err != nil {
		return refuse("no such token")
	}
	if sec.Type != client.BootstrapTokenSecretType {
		return refuse("its Secret is not of type " + client.BootstrapTokenSecretType)
	}
	b, ok := client.ParseBootstrapTokenSecret(sec)
	switch {
	case !ok:
		return refuse("its Secret is not a well-formed token (token-id, token-secret, expiration)")
	case subtle.ConstantTimeCompare([]byte(b.Secret), []byte(given.Secret)) != 1:
		return refuse("wrong secret")
	case !slices.Contains(b.Usages, "authentication"):
		return refuse("not for authentication (usage-bootstrap-authentication)")
	case b.Expired(time.Now()):
		return refuse("expired at " + b.Expires.UTC().Format(time.RFC3339) + " (kobeadm token create makes a new one)")
	}
	u := request.UserInfo{Name: "system:bootstrap:" + given.ID, Groups: []string{client.BootstrappersGroup}}
	for _, g := range b.Groups {
		if strings.HasPrefix(g, client.BootstrappersGroup+":") {
			u.Groups = append(u.Groups, g)
		}
	}
	u.Groups = append(u.Groups, request.AllAuthenticated)
	return u, true, nil
}
