package client

import (
	"context"
	"encoding/json"

	"github.com/kobune/kobune/api/authorization"
	"github.com/kobune/kobune/proto/apipb"
)

// AccessQuestion is what CanI asks: a verb on a resource (with maybe a
// subresource, a namespace and a name), or on a path.
type AccessQuestion = authorization.ResourceAttributes

// CanI asks the API server's authorizer whether the caller may do q
// (a SelfSubjectAccessReview, as `kubectl auth can-i`); path, when set,
// asks about a non-resource path instead.
func (c *Client) CanI(ctx context.Context, q AccessQuestion, path string) (authorization.SubjectAccessReviewStatus, error) {
	r := authorization.SelfSubjectAccessReview{}
	r.APIVersion, r.Kind = "authorization.k8s.io/v1", "SelfSubjectAccessReview"
	if path != "" {
		r.Spec.NonResourceAttributes = &authorization.NonResourceAttributes{Path: path, Verb: q.Verb}
	} else {
		r.Spec.ResourceAttributes = &q
	}
	b, _ := json.Marshal(r)
	resp, err := c.API.Create(ctx, &apipb.CreateRequest{Resource: "selfsubjectaccessreviews", Object: b})
	if err != nil {
		return authorization.SubjectAccessReviewStatus{}, err
	}
	var out authorization.SelfSubjectAccessReview
	err = json.Unmarshal(resp.Object, &out)
	return out.Status, err
}

// WhoAmI is the caller's user as the API server authenticated it (a
// SelfSubjectReview, as `kubectl auth whoami`).
func (c *Client) WhoAmI(ctx context.Context) (authorization.UserInfo, error) {
	resp, err := c.API.Create(ctx, &apipb.CreateRequest{Resource: "selfsubjectreviews",
		Object: []byte(`{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview","metadata":{}}`)})
	if err != nil {
		return authorization.UserInfo{}, err
	}
	var out authorization.SelfSubjectReview
	err = json.Unmarshal(resp.Object, &out)
	return out.Status.UserInfo, err
}

// CreateToken asks for a token of ServiceAccount namespace/name (the
// serviceaccounts/token subresource, a TokenRequest): the agent does, for
// each pod's projected token volume.
func (c *Client) CreateToken(ctx context.Context, namespace, name string, spec authorization.TokenRequestSpec) (authorization.TokenRequestStatus, error) {
	r := authorization.TokenRequest{Spec: spec}
	r.APIVersion, r.Kind, r.Name, r.Namespace = "authentication.k8s.io/v1", "TokenRequest", name, namespace
	b, _ := json.Marshal(r)
	resp, err := c.API.Create(ctx, &apipb.CreateRequest{Resource: TokenSubresource, Namespace: namespace, Object: b})
	if err != nil {
		return authorization.TokenRequestStatus{}, err
	}
	var out authorization.TokenRequest
	err = json.Unmarshal(resp.Object, &out)
	return out.Status, err
}

// TokenSubresource is how a TokenRequest travels in a Create call (the
// gRPC API has no subresource field): "serviceaccounts/token", with the
// ServiceAccount's name as the request's metadata.name.
const TokenSubresource = "serviceaccounts/token"

// EvictionSubresource is how an Eviction travels in a Create call (POST
// pods/NAME/eviction in the REST API).
const EvictionSubresource = "pods/eviction"

// NamespaceFinalizeSubresource is how a namespace's finalize travels in an
// Update call (PUT namespaces/NAME/finalize in the REST API): only the
// namespace's spec.finalizers change.
const NamespaceFinalizeSubresource = "namespaces/finalize"

// PodEphemeralContainersSubresource is how a write of a pod's ephemeral
// containers (PUT pods/NAME/ephemeralcontainers) travels in an Update
// request: the pod, of which only spec.ephemeralContainers is taken.
const PodEphemeralContainersSubresource = "pods/ephemeralcontainers"

// PodResizeSubresource is how an in-place resize (PUT pods/NAME/resize)
// travels in an Update request: the pod, of which only the containers'
// resources and resize policies are taken.
const PodResizeSubresource = "pods/resize"

// CSRApprovalSubresource is how an approval (PUT
// certificatesigningrequests/NAME/approval) travels in an Update request:
// the request, of which only the conditions, labels and annotations are
// taken.
const CSRApprovalSubresource = "certificatesigningrequests/approval"

// RulesIn is every rule the caller holds in a namespace (a
// SelfSubjectRulesReview, as `kubectl auth can-i --list`).
func (c *Client) RulesIn(ctx context.Context, namespace string) (authorization.SubjectRulesReviewStatus, error) {
	r := authorization.SelfSubjectRulesReview{Spec: authorization.SelfSubjectRulesReviewSpec{Namespace: namespace}}
	r.APIVersion, r.Kind = "authorization.k8s.io/v1", "SelfSubjectRulesReview"
	b, _ := json.Marshal(r)
	resp, err := c.API.Create(ctx, &apipb.CreateRequest{Resource: "selfsubjectrulesreviews", Object: b})
	if err != nil {
		return authorization.SubjectRulesReviewStatus{}, err
	}
	var out authorization.SelfSubjectRulesReview
	err = json.Unmarshal(resp.Object, &out)
	return out.Status, err
}
