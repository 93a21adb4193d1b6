package apiserver

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	"github.com/kobune/kobune/apiserver/authorizer"
	"github.com/kobune/kobune/apiserver/request"
	"github.com/kobune/kobune/client"
	"github.com/kobune/kobune/client/pki"
)

// serverTLS is the API server's TLS 1.3 configuration: its certificate,
// and client certificates verified against the client CA when they are
// given (x509 client-certificate authentication: CN the user, O the
// groups).
func serverTLS(cfg Config) (*tls.Config, error) {
	// Read again when the files change: renewed certificates are served
	// from the next handshake on, with no restart.
	kp, err := pki.NewKeyPair(cfg.TLSCertFile, cfg.TLSPrivateKeyFile)
	if err != nil {
		return nil, fmt.Errorf("--tls-cert-file/--tls-private-key-file: %w", err)
	}
	tc := &tls.Config{MinVersion: tls.VersionTLS13, GetCertificate: kp.GetCertificate}
	if cfg.ClientCAFile != "" {
		b, err := os.ReadFile(cfg.ClientCAFile)
		if err != nil {
			return nil, fmt.Errorf("--client-ca-file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(b) {
			return nil, fmt.Errorf("--client-ca-file %s: no PEM certificate in it", cfg.ClientCAFile)
		}
		tc.ClientCAs, tc.ClientAuth = pool, tls.VerifyClientCertIfGiven
	}
	return tc, nil
}

// kubeletTLS is the API server's side of the node API's TLS.
func kubeletTLS(cfg Config) (*tls.Config, error) {
	n := 0
	for _, f := range []string{cfg.KubeletClientCertFile, cfg.KubeletClientKeyFile, cfg.KubeletCertificateAuthority} {
		if f != "" {
			n++
		}
	}
	switch n {
	case 0:
		return nil, nil
	case 3:
	default:
		return nil, errors.New("--kubelet-client-certificate, --kubelet-client-key and --kubelet-certificate-authority go together: give all three, or none (plaintext to the agents)")
	}
	kp, err := pki.NewKeyPair(cfg.KubeletClientCertFile, cfg.KubeletClientKeyFile)
	if err != nil {
		return nil, fmt.Errorf("--kubelet-client-certificate/--kubelet-client-key: %w", err)
	}
	b, err := os.ReadFile(cfg.KubeletCertificateAuthority)
	if err != nil {
		return nil, fmt.Errorf("--kubelet-certificate-authority: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b) {
		return nil, fmt.Errorf("--kubelet-certificate-authority %s: no PEM certificate in it", cfg.KubeletCertificateAuthority)
	}
	return &tls.Config{MinVersion: tls.VersionTLS13, RootCAs: pool, GetClientCertificate: kp.GetClientCertificate}, nil
}

// authenticate finds the caller's user from its verified client
// certificate, or else its ServiceAccount token (a bearer token), and
// refuses anonymous callers unless they are allowed.
func (s *Server) authenticate(ctx context.Context) (context.Context, error) {
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
	if u.Name == request.Anonymous.Name && !s.anonymousAllowed() {
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
func (s *Server) impersonate(ctx context.Context, real request.UserInfo, users, groups []string) (request.UserInfo, error) {
	if len(users) != 1 {
		return real, status.Error(codes.InvalidArgument, "impersonation: name exactly one user (--as); groups (--as-group) go with a user")
	}
	if err := s.waitAuthorizer(ctx); err != nil {
		return real, err
	}
	check := func(a request.Attributes) error {
		if d, _ := s.authz.Authorize(real, &a); d != authorizer.Allow {
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

// anonymousAllowed: without a client CA nobody can authenticate, so every
// caller is anonymous and allowed (the insecure default until the lab and
// every component use certificates); with one, only --anonymous-auth lets
// anonymous callers in.
func (s *Server) anonymousAllowed() bool {
	return s.cfg.ClientCAFile == "" || s.cfg.AnonymousAuth
}
