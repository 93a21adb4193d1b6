package authentication

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	"github.com/kobune/kobune/api/authorization"
	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/apiserver/apierrors"
	"github.com/kobune/kobune/apiserver/authorizer"
	"github.com/kobune/kobune/apiserver/registry"
	"github.com/kobune/kobune/apiserver/request"
	"github.com/kobune/kobune/apiserver/serviceaccount"
	"github.com/kobune/kobune/client"
	"github.com/kobune/kobune/proto/apipb"
)

// Authenticate finds the caller's user from its verified client
// certificate, or else its ServiceAccount token (a bearer token), and
// refuses anonymous callers unless they are allowed.
func (s *Authenticator) Authenticate(ctx context.Context) (context.Context, error) {
	u := request.Anonymous
	if p, ok := peer.FromContext(ctx); ok {
		if ti, ok := p.AuthInfo.(credentials.TLSInfo); ok && len(ti.State.VerifiedChains) > 0 && len(ti.State.VerifiedChains[0]) > 0 {
			subj := ti.State.VerifiedChains[0][0].Subject
			u = request.UserInfo{Name: subj.CommonName, Groups: append(slices.Clone(subj.Organization), request.AllAuthenticated)}
		}
	}
	if u.Name == request.Anonymous.Name {
		if tok := bearerToken(ctx); tok != "" {
			bu, isBootstrap, err := s.authenticateBootstrapToken(ctx, tok)
			switch {
			case err != nil:
				return nil, err
			case isBootstrap:
				u = bu
			default:
				if u, err = s.authenticateToken(ctx, tok); err != nil {
					return nil, err
				}
			}
		}
	}
	if u.Name == request.Anonymous.Name && !s.cfg.AnonymousAllowed {
		return nil, status.Error(codes.Unauthenticated, "Unauthorized: no client certificate signed by the cluster CA (use a kubeconfig with client-certificate and client-key)")
	}
	if md, ok := metadata.FromIncomingContext(ctx); ok {
		if users, groups := md.Get(client.ImpersonateUserHeader), md.Get(client.ImpersonateGroupHeader); len(users) > 0 || len(groups) > 0 {
			as, err := s.impersonate(ctx, u, users, groups)
			if err != nil {
				return nil, err
			}
			ctx = request.WithImpersonator(ctx, u)
			u = as
		}
	}
	return request.WithUser(ctx, u), nil
}

// impersonate is Kubernetes' impersonation (kubectl --as/--as-group): the
// authenticated user acts as another, if allowed the impersonate verb on
// the users (or serviceaccounts) and groups it names. The request then
// carries only the impersonated identity.
func (s *Authenticator) impersonate(ctx context.Context, real request.UserInfo, users, groups []string) (request.UserInfo, error) {
	if len(users) != 1 {
		return real, status.Error(codes.InvalidArgument, "impersonation: name exactly one user (--as); groups (--as-group) go with a user")
	}
	check := func(a request.Attributes) error {
		if ok, err := s.cfg.Allowed(ctx, real, &a); err != nil {
			return err
		} else if !ok {
			return status.Errorf(codes.PermissionDenied, "%s %q is forbidden: %s", a.Resource, a.Name, authorizer.Describe(real, &a))
		}
		return nil
	}
	as := request.UserInfo{Name: users[0]}
	if rest, ok := strings.CutPrefix(as.Name, request.ServiceAccountUserPrefix); ok {
		ns, name, _ := strings.Cut(rest, ":")
		if err := check(request.Attributes{Verb: "impersonate", Resource: "serviceaccounts", APIVersion: "v1", Namespace: ns, Name: name}); err != nil {
			return real, err
		}
		as.Groups = append(as.Groups, "system:serviceaccounts", "system:serviceaccounts:"+ns)
	} else if err := check(request.Attributes{Verb: "impersonate", Resource: "users", APIVersion: "v1", Name: as.Name}); err != nil {
		return real, err
	}
	for _, g := range groups {
		if err := check(request.Attributes{Verb: "impersonate", Resource: "groups", APIVersion: "v1", Name: g}); err != nil {
			return real, err
		}
		as.Groups = append(as.Groups, g)
	}
	as.Groups = append(as.Groups, request.AllAuthenticated)
	return as, nil
}

// DefaultServiceAccountIssuer is the tokens' issuer unless
// --service-account-issuer says otherwise (Kubernetes' usual value).
const DefaultServiceAccountIssuer = "https://kubernetes.default.svc.cluster.local"

// Token lifetimes, as Kubernetes: at least 10 minutes, an hour unless
// asked, at most a day here (kube-apiserver's
// --service-account-max-token-expiration is unset by default; Kobune caps
// it so a leaked token dies).
const (
	minTokenSeconds     = 600
	defaultTokenSeconds = 3600
	maxTokenSeconds     = 24 * 3600
)

// ServiceAccounts issues and checks ServiceAccount tokens.
type ServiceAccounts struct {
	signer    *serviceaccount.Signer
	verifier  *serviceaccount.Verifier
	audiences []string
	issuer    string
}

// LoadServiceAccounts reads the signing key and the verifying keys; with
// neither it returns nil (no tokens), with one of them an error.
func LoadServiceAccounts(cfg ServiceAccountConfig) (*ServiceAccounts, error) {
	if cfg.SigningKeyFile == "" && len(cfg.KeyFiles) == 0 {
		return nil, nil
	}
	if cfg.SigningKeyFile == "" || len(cfg.KeyFiles) == 0 {
		return nil, errors.New("--service-account-signing-key-file and --service-account-key-file go together (kobectl pki init writes sa.key and sa.pub)")
	}
	issuer := cfg.Issuer
	if issuer == "" {
		issuer = DefaultServiceAccountIssuer
	}
	sa := &ServiceAccounts{audiences: cfg.Audiences, issuer: issuer}
	if len(sa.audiences) == 0 {
		sa.audiences = []string{issuer}
	}
	var err error
	if sa.signer, err = serviceaccount.LoadSigner(cfg.SigningKeyFile, issuer); err != nil {
		return nil, fmt.Errorf("--service-account-signing-key-file: %w", err)
	}
	if sa.verifier, err = serviceaccount.LoadVerifier(cfg.KeyFiles, issuer); err != nil {
		return nil, fmt.Errorf("--service-account-key-file: %w", err)
	}
	return sa, nil
}

// bearerToken is the call's "authorization: Bearer" token, or "".
func bearerToken(ctx context.Context) string {
	md, _ := metadata.FromIncomingContext(ctx)
	for _, v := range md.Get("authorization") {
		if tok, ok := strings.CutPrefix(v, "Bearer "); ok {
			return strings.TrimSpace(tok)
		}
	}
	return ""
}

// OIDCDiscovery is the OpenID Connect discovery of the ServiceAccount
// token issuer, as kube-apiserver serves it: the configuration document
// (/.well-known/openid-configuration; the JWKS at the issuer's
// /openid/v1/jwks when the issuer is an https URL, else at externalURL's)
// and the key set. ok is false without ServiceAccount tokens.
func (s *Authenticator) OIDCDiscovery(externalURL string) (config, jwks []byte, ok bool, err error) {
	sa := s.cfg.ServiceAccounts
	if sa == nil {
		return nil, nil, false, nil
	}
	if jwks, err = sa.verifier.JWKS(); err != nil {
		return nil, nil, true, err
	}
	base := externalURL
	if strings.HasPrefix(sa.issuer, "https://") {
		base = sa.issuer
	}
	config, err = json.Marshal(map[string]any{"issuer": sa.issuer, "jwks_uri": strings.TrimSuffix(base, "/") + "/openid/v1/jwks",
		"response_types_supported": []string{"id_token"}, "subject_types_supported": []string{"public"},
		"id_token_signing_alg_values_supported": []string{"ES256"}})
	return config, jwks, true, err
}

// authenticateToken checks a ServiceAccount token: signature, issuer,
// audience, expiry, and that its ServiceAccount and the pod it is bound
// to still exist with the same uids — a token of a deleted pod (or of a
// ServiceAccount deleted and made again) authenticates nobody.
func (s *Authenticator) authenticateToken(ctx context.Context, tok string) (request.UserInfo, error) {
	u, _, err := s.authenticateTokenFor(ctx, tok, nil)
	return u, err
}

// authenticateTokenFor is authenticateToken for the given audiences (the
// API server's when none) and returns the token's audiences too.
func (s *Authenticator) authenticateTokenFor(ctx context.Context, tok string, audiences []string) (request.UserInfo, []string, error) {
	refuse := func(why string) (request.UserInfo, []string, error) {
		return request.Anonymous, nil, status.Error(codes.Unauthenticated, "Unauthorized: "+why)
	}
	if s.cfg.ServiceAccounts == nil {
		return refuse("this API server takes no bearer tokens (no --service-account-key-file)")
	}
	if len(audiences) == 0 {
		audiences = s.cfg.ServiceAccounts.audiences
	}
	c, err := s.cfg.ServiceAccounts.verifier.Verify(tok, audiences, time.Now())
	if err != nil {
		return refuse(err.Error())
	}
	sa, err := registry.GetStored[*core.ServiceAccount](ctx, s.cfg.Store, "serviceaccounts", c.Namespace, c.ServiceAccount)
	if err != nil || sa.UID != c.ServiceAccountUID {
		return refuse(fmt.Sprintf("the token's ServiceAccount %s/%s no longer exists", c.Namespace, c.ServiceAccount))
	}
	if c.PodName != "" {
		pod, err := registry.GetStored[*core.Pod](ctx, s.cfg.Store, "pods", c.Namespace, c.PodName)
		if err != nil || pod.UID != c.PodUID {
			return refuse(fmt.Sprintf("the pod %s/%s the token is bound to no longer exists", c.Namespace, c.PodName))
		}
	}
	u := request.UserInfo{Name: c.Subject(), Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + c.Namespace, request.AllAuthenticated}}
	// What Kubernetes' ServiceAccount authenticator says besides.
	extra := map[string]string{"credential-id": "JTI=" + c.ID, "pod-name": c.PodName, "pod-uid": c.PodUID, "node-name": c.NodeName, "node-uid": c.NodeUID}
	for k, val := range extra {
		if val != "" && val != "JTI=" {
			if u.Extra == nil {
				u.Extra = map[string][]string{}
			}
			u.Extra["authentication.kubernetes.io/"+k] = []string{val}
		}
	}
	return u, c.Audiences, nil
}

// CreateToken is the serviceaccounts/token subresource: a TokenRequest
// for the ServiceAccount named by its metadata.name, answered with a
// signed token (never stored). An agent may only ask for the
// ServiceAccount of a pod bound to its node, bound to that pod
// (NodeRestriction's rule for tokens).
func (s *Authenticator) CreateToken(ctx context.Context, req *apipb.CreateRequest) (*apipb.ObjectResponse, error) {
	if s.cfg.ServiceAccounts == nil {
		return nil, status.Error(codes.FailedPrecondition, "this API server issues no ServiceAccount tokens: start it with --service-account-signing-key-file and --service-account-key-file")
	}
	var tr authorization.TokenRequest
	if err := json.Unmarshal(req.Object, &tr); err != nil {
		return nil, apierrors.Invalid("TokenRequest: %v", err)
	}
	ns := req.Namespace
	if ns == "" {
		ns = "default"
	}
	sa, err := registry.GetStored[*core.ServiceAccount](ctx, s.cfg.Store, "serviceaccounts", ns, tr.Name)
	if err != nil {
		return nil, err
	}
	secs := int64(defaultTokenSeconds)
	if e := tr.Spec.ExpirationSeconds; e != nil {
		if *e < minTokenSeconds {
			return nil, apierrors.Invalid("spec.expirationSeconds: Invalid value: %d: may not specify a duration less than 10 minutes", *e)
		}
		secs = min(*e, maxTokenSeconds)
	}
	audiences := tr.Spec.Audiences
	if len(audiences) == 0 {
		audiences = s.cfg.ServiceAccounts.audiences
	}
	now := time.Now()
	c := serviceaccount.Claims{Namespace: ns, ServiceAccount: sa.Name, ServiceAccountUID: sa.UID, Audiences: audiences,
		IssuedAt: now, Expiry: now.Add(time.Duration(secs) * time.Second)}
	node := request.UserFrom(ctx).NodeName()
	if ref := tr.Spec.BoundObjectRef; ref != nil {
		if ref.Kind != "Pod" {
			return nil, apierrors.Invalid("spec.boundObjectRef.kind: Unsupported value: %q: supported values: \"Pod\"", ref.Kind)
		}
		pod, err := registry.GetStored[*core.Pod](ctx, s.cfg.Store, "pods", ns, ref.Name)
		if err != nil {
			return nil, err
		}
		if ref.UID != "" && ref.UID != pod.UID {
			return nil, status.Errorf(codes.Aborted, "the UID in the bound object reference (%s) does not match the pod's (%s)", ref.UID, pod.UID)
		}
		if core.PodServiceAccount(pod) != sa.Name {
			return nil, status.Errorf(codes.PermissionDenied, "pod %s runs as ServiceAccount %q, not %q", pod.Name, core.PodServiceAccount(pod), sa.Name)
		}
		if node != "" && pod.Spec.NodeName != node {
			return nil, status.Errorf(codes.PermissionDenied, "node %q can only request tokens for pods bound to it (pod %s is on %q)", node, pod.Name, pod.Spec.NodeName)
		}
		c.PodName, c.PodUID, c.NodeName = pod.Name, pod.UID, pod.Spec.NodeName
		if pod.Spec.NodeName != "" {
			if n, err := registry.GetStored[*core.Node](ctx, s.cfg.Store, "nodes", "", pod.Spec.NodeName); err == nil {
				c.NodeUID = n.UID
			}
		}
	} else if node != "" {
		return nil, status.Errorf(codes.PermissionDenied, "node %q can only request tokens bound to a pod on it (spec.boundObjectRef)", node)
	}
	tok, err := s.cfg.ServiceAccounts.signer.Sign(c)
	if err != nil {
		return nil, status.Errorf(codes.Internal, "sign token: %v", err)
	}
	tr.APIVersion, tr.Kind = "authentication.k8s.io/v1", "TokenRequest"
	tr.Namespace, tr.CreationTimestamp = ns, meta.Now()
	tr.Spec.Audiences, tr.Spec.ExpirationSeconds = audiences, &secs
	tr.Status = authorization.TokenRequestStatus{Token: tok, ExpirationTimestamp: meta.Time{Time: c.Expiry.UTC().Truncate(time.Second)}}
	b, err := json.Marshal(&tr)
	if err != nil {
		return nil, err
	}
	return &apipb.ObjectResponse{Object: b}, nil
}

// authenticateBootstrapToken checks a bootstrap token ("<id>.<secret>",
// client.BootstrapTokenRE) against its Secret kube-system/bootstrap-token-<id>:
// the secret part, usage-bootstrap-authentication "true", not expired. The
// user is system:bootstrap:<id> in system:bootstrappers and the token's
// auth-extra-groups (only system:bootstrappers:* ones, as Kubernetes).
func (s *Authenticator) authenticateBootstrapToken(ctx context.Context, tok string) (request.UserInfo, bool, error) {
	given, ok := client.ParseBootstrapToken(tok)
	if !ok {
		return request.Anonymous, false, nil
	}
	refuse := func(why string) (request.UserInfo, bool, error) {
		return request.Anonymous, true, status.Error(codes.Unauthenticated, "Unauthorized: bootstrap token "+given.ID+": "+why)
	}
	sec, err := registry.GetStored[*core.Secret](ctx, s.cfg.Store, "secrets", client.BootstrapTokenNamespace, client.BootstrapTokenSecretPrefix+given.ID)
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

// CreateTokenReview answers a TokenReview: whether the token is one this
// server accepts — a ServiceAccount token for one of the review's
// audiences (the API server's when it names none), or a bootstrap token
// (for the API server's audiences only) — and whose. As kube-apiserver,
// a token it refuses is an answer (status.authenticated false, and why in
// status.error), not a failed request. Never stored.
func (s *Authenticator) CreateTokenReview(ctx context.Context, req *apipb.CreateRequest) (*apipb.ObjectResponse, error) {
	var tr authorization.TokenReview
	if err := json.Unmarshal(req.Object, &tr); err != nil {
		return nil, apierrors.Invalid("TokenReview: %v", err)
	}
	if tr.Spec.Token == "" {
		return nil, apierrors.WithReason(codes.InvalidArgument, apierrors.ReasonBadRequest, "token is required for TokenReview in authentication (spec.token)")
	}
	tr.TypeMeta = meta.TypeMeta{APIVersion: "authentication.k8s.io/v1", Kind: "TokenReview"}
	tr.Status = authorization.TokenReviewStatus{}
	u, isBootstrap, err := s.authenticateBootstrapToken(ctx, tr.Spec.Token)
	var tokenAudiences []string
	switch {
	case isBootstrap && err == nil && len(tr.Spec.Audiences) > 0 && s.cfg.ServiceAccounts != nil &&
		!slices.ContainsFunc(tr.Spec.Audiences, func(a string) bool { return slices.Contains(s.cfg.ServiceAccounts.audiences, a) }):
		err = status.Error(codes.Unauthenticated, "Unauthorized: a bootstrap token is for this API server's audiences only")
	case isBootstrap:
	default:
		u, tokenAudiences, err = s.authenticateTokenFor(ctx, tr.Spec.Token, tr.Spec.Audiences)
	}
	if err != nil {
		tr.Status.Error = status.Convert(err).Message()
	} else {
		tr.Status.Authenticated = true
		tr.Status.User = authorization.UserInfo{Username: u.Name, Groups: u.Groups, Extra: u.Extra}
		asked := tr.Spec.Audiences
		if len(asked) == 0 && s.cfg.ServiceAccounts != nil {
			asked = s.cfg.ServiceAccounts.audiences
		}
		for _, a := range asked {
			if isBootstrap || slices.Contains(tokenAudiences, a) {
				tr.Status.Audiences = append(tr.Status.Audiences, a)
			}
		}
	}
	b, err := json.Marshal(&tr)
	if err != nil {
		return nil, err
	}
	return &apipb.ObjectResponse{Object: b}, nil
}
