package apiserver

import (
	"context"
	"crypto/subtle"
	"regexp"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/apiserver/request"
)

// Bootstrap tokens, as Kubernetes': "<id>.<secret>" (6 and 16 of
// [a-z0-9]), each a Secret kube-system/bootstrap-token-<id> of type
// bootstrap.kubernetes.io/token. A joining agent authenticates with one
// as system:bootstrap:<id> in group system:bootstrappers, which may only
// ask for its certificate (a CertificateSigningRequest).
const (
	BootstrapTokenSecretType   = "bootstrap.kubernetes.io/token"
	BootstrapTokenSecretPrefix = "bootstrap-token-"
	BootstrappersGroup         = "system:bootstrappers"
)

var bootstrapTokenRE = regexp.MustCompile(`^([a-z0-9]{6})\.([a-z0-9]{16})$`)

// authenticateBootstrapToken checks a bootstrap token against its Secret:
// the secret part, usage-bootstrap-authentication "true", not expired.
func (s *Server) authenticateBootstrapToken(ctx context.Context, tok string) (request.UserInfo, bool, error) {
	m := bootstrapTokenRE.FindStringSubmatch(tok)
	if m == nil {
		return request.Anonymous, false, nil
	}
	refuse := func(why string) (request.UserInfo, bool, error) {
		return request.Anonymous, true, status.Error(codes.Unauthenticated, "Unauthorized: bootstrap token "+m[1]+": "+why)
	}
	sec, err := getStored[*core.Secret](ctx, s, "secrets", "kube-system", BootstrapTokenSecretPrefix+m[1])
	if err != nil {
		return refuse("no such token")
	}
	data := func(k string) string { return string(sec.Data[k]) }
	switch {
	case sec.Type != BootstrapTokenSecretType:
		return refuse("its Secret is not of type " + BootstrapTokenSecretType)
	case subtle.ConstantTimeCompare([]byte(data("token-secret")), []byte(m[2])) != 1 || data("token-id") != m[1]:
		return refuse("wrong secret")
	case data("usage-bootstrap-authentication") != "true":
		return refuse("not for authentication (usage-bootstrap-authentication)")
	}
	if exp := data("expiration"); exp != "" {
		t, err := time.Parse(time.RFC3339, exp)
		if err != nil || time.Now().After(t) {
			return refuse("expired")
		}
	}
	u := request.UserInfo{Name: "system:bootstrap:" + m[1], Groups: []string{BootstrappersGroup}}
	for _, g := range strings.Split(data("auth-extra-groups"), ",") {
		if g = strings.TrimSpace(g); strings.HasPrefix(g, BootstrappersGroup+":") {
			u.Groups = append(u.Groups, g)
		}
	}
	u.Groups = append(u.Groups, request.AllAuthenticated)
	return u, true, nil
}
