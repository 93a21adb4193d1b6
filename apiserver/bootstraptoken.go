package apiserver

import (
	"context"
	"crypto/subtle"
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
	m := client.BootstrapTokenRE.FindStringSubmatch(tok)
	if m == nil {
		return request.Anonymous, false, nil
	}
	refuse := func(why string) (request.UserInfo, bool, error) {
		return request.Anonymous, true, status.Error(codes.Unauthenticated, "Unauthorized: bootstrap token "+m[1]+": "+why)
	}
	sec, err := getStored[*core.Secret](ctx, s, "secrets", client.BootstrapTokenNamespace, client.BootstrapTokenSecretPrefix+m[1])
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
	case subtle.ConstantTimeCompare([]byte(b.Secret), []byte(m[2])) != 1:
		return refuse("wrong secret")
	case !hasUsage(b, "authentication"):
		return refuse("not for authentication (usage-bootstrap-authentication)")
	case b.Expired(time.Now()):
		return refuse("expired at " + b.Expires.UTC().Format(time.RFC3339) + " (kobeadm token create makes a new one)")
	}
	u := request.UserInfo{Name: "system:bootstrap:" + m[1], Groups: []string{client.BootstrappersGroup}}
	for _, g := range b.Groups {
		if strings.HasPrefix(g, client.BootstrappersGroup+":") {
			u.Groups = append(u.Groups, g)
		}
	}
	u.Groups = append(u.Groups, request.AllAuthenticated)
	return u, true, nil
}

func hasUsage(b client.BootstrapToken, u string) bool {
	for _, have := range b.Usages {
		if have == u {
			return true
		}
	}
	return false
}
