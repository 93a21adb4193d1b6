package apiserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/kobune/kobune/api/authorization"
	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/api/scheme"
	"github.com/kobune/kobune/apiserver/apierrors"
	"github.com/kobune/kobune/apiserver/registry"
	"github.com/kobune/kobune/apiserver/request"
	"github.com/kobune/kobune/apiserver/serviceaccount"
	"github.com/kobune/kobune/apiserver/storage"
	"github.com/kobune/kobune/proto/apipb"
)

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

// serviceAccounts issues and checks ServiceAccount tokens.
type serviceAccounts struct {
	signer    *serviceaccount.Signer
	verifier  *serviceaccount.Verifier
	audiences []string
}

func newServiceAccounts(cfg Config) (*serviceAccounts, error) {
	if cfg.ServiceAccountSigningKeyFile == "" && len(cfg.ServiceAccountKeyFiles) == 0 {
		return nil, nil
	}
	if cfg.ServiceAccountSigningKeyFile == "" || len(cfg.ServiceAccountKeyFiles) == 0 {
		return nil, errors.New("--service-account-signing-key-file and --service-account-key-file go together (kobectl pki init writes sa.key and sa.pub)")
	}
	issuer := cfg.ServiceAccountIssuer
	if issuer == "" {
		issuer = DefaultServiceAccountIssuer
	}
	sa := &serviceAccounts{audiences: cfg.APIAudiences}
	if len(sa.audiences) == 0 {
		sa.audiences = []string{issuer}
	}
	var err error
	if sa.signer, err = serviceaccount.LoadSigner(cfg.ServiceAccountSigningKeyFile, issuer); err != nil {
		return nil, fmt.Errorf("--service-account-signing-key-file: %w", err)
	}
	if sa.verifier, err = serviceaccount.LoadVerifier(cfg.ServiceAccountKeyFiles, issuer); err != nil {
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

// authenticateToken checks a ServiceAccount token: signature, issuer,
// audience, expiry, and that its ServiceAccount and the pod it is bound
// to still exist with the same uids — a token of a deleted pod (or of a
// ServiceAccount deleted and made again) authenticates nobody.
func (s *Server) authenticateToken(ctx context.Context, tok string) (request.UserInfo, error) {
	refuse := func(why string) (request.UserInfo, error) {
		return request.Anonymous, status.Error(codes.Unauthenticated, "Unauthorized: "+why)
	}
	if s.serviceAccounts == nil {
		return refuse("this API server takes no bearer tokens (no --service-account-key-file)")
	}
	c, err := s.serviceAccounts.verifier.Verify(tok, s.serviceAccounts.audiences, time.Now())
	if err != nil {
		return refuse(err.Error())
	}
	sa, err := s.getServiceAccount(ctx, c.Namespace, c.ServiceAccount)
	if err != nil || sa.UID != c.ServiceAccountUID {
		return refuse(fmt.Sprintf("the token's ServiceAccount %s/%s no longer exists", c.Namespace, c.ServiceAccount))
	}
	if c.PodName != "" {
		pod, err := s.getPod(ctx, c.Namespace, c.PodName)
		if err != nil || pod.UID != c.PodUID {
			return refuse(fmt.Sprintf("the pod %s/%s the token is bound to no longer exists", c.Namespace, c.PodName))
		}
	}
	return request.UserInfo{Name: c.Subject(), Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + c.Namespace, request.AllAuthenticated}}, nil
}

// getStored reads one object of resource from storage.
func getStored[T meta.Object](ctx context.Context, s *Server, resource, ns, name string) (T, error) {
	var zero T
	k, _ := scheme.ByResource(resource)
	kv, err := s.store.Get(ctx, storage.Key(resource, ns, name))
	if err != nil {
		return zero, apierrors.FromStorage(err, k, name)
	}
	o, err := registry.DecodeStored(k, kv.Value, kv.Revision)
	if err != nil {
		return zero, err
	}
	return o.(T), nil
}

func (s *Server) getServiceAccount(ctx context.Context, ns, name string) (*core.ServiceAccount, error) {
	return getStored[*core.ServiceAccount](ctx, s, "serviceaccounts", ns, name)
}

func (s *Server) getPod(ctx context.Context, ns, name string) (*core.Pod, error) {
	return getStored[*core.Pod](ctx, s, "pods", ns, name)
}

// createToken is the serviceaccounts/token subresource: a TokenRequest
// for the ServiceAccount named by its metadata.name, answered with a
// signed token (never stored). An agent may only ask for the
// ServiceAccount of a pod bound to its node, bound to that pod
// (NodeRestriction's rule for tokens).
func (s *Server) createToken(ctx context.Context, req *apipb.CreateRequest) (*apipb.ObjectResponse, error) {
	if s.serviceAccounts == nil {
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
	sa, err := s.getServiceAccount(ctx, ns, tr.Name)
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
		audiences = s.serviceAccounts.audiences
	}
	now := time.Now()
	c := serviceaccount.Claims{Namespace: ns, ServiceAccount: sa.Name, ServiceAccountUID: sa.UID, Audiences: audiences,
		IssuedAt: now, Expiry: now.Add(time.Duration(secs) * time.Second)}
	node := request.UserFrom(ctx).NodeName()
	if ref := tr.Spec.BoundObjectRef; ref != nil {
		if ref.Kind != "Pod" {
			return nil, apierrors.Invalid("spec.boundObjectRef.kind: Unsupported value: %q: supported values: \"Pod\"", ref.Kind)
		}
		pod, err := s.getPod(ctx, ns, ref.Name)
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
	} else if node != "" {
		return nil, status.Errorf(codes.PermissionDenied, "node %q can only request tokens bound to a pod on it (spec.boundObjectRef)", node)
	}
	tok, err := s.serviceAccounts.signer.Sign(c)
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

// serviceAccountGetter answers ServiceAccount admission from storage.
type serviceAccountGetter struct{ s *Server }

func (g serviceAccountGetter) ServiceAccount(ctx context.Context, ns, name string) (*core.ServiceAccount, bool, error) {
	sa, err := g.s.getServiceAccount(ctx, ns, name)
	if status.Code(err) == codes.NotFound {
		return nil, false, nil
	}
	return sa, err == nil, err
}
