package authorization

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/kobune/kobune/api/authorization"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/apiserver/apierrors"
	"github.com/kobune/kobune/apiserver/authorizer"
	"github.com/kobune/kobune/apiserver/registry"
	"github.com/kobune/kobune/apiserver/request"
	"github.com/kobune/kobune/proto/apipb"
)

// CreateReview answers a review; the caller was authorized to create it.
func (s *Authorization) CreateReview(ctx context.Context, r registry.Review, req *apipb.CreateRequest) (*apipb.ObjectResponse, error) {
	caller := request.UserFrom(ctx)
	tm := meta.TypeMeta{APIVersion: r.Group + "/v1", Kind: r.Kind}
	var out any
	switch r.Kind {
	case "SelfSubjectReview":
		var o authorization.SelfSubjectReview
		if err := json.Unmarshal(req.Object, &o); err != nil && len(req.Object) > 0 {
			return nil, apierrors.Invalid("SelfSubjectReview: %v", err)
		}
		o.TypeMeta = tm
		o.Status.UserInfo = authorization.UserInfo{Username: caller.Name, Groups: caller.Groups}
		out = &o
	case "SelfSubjectRulesReview":
		var o authorization.SelfSubjectRulesReview
		if err := json.Unmarshal(req.Object, &o); err != nil {
			return nil, apierrors.Invalid("SelfSubjectRulesReview: %v", err)
		}
		if o.Spec.Namespace == "" {
			return nil, apierrors.Invalid("spec.namespace: Required value: the namespace whose rules to list")
		}
		o.TypeMeta, o.Status = tm, s.rulesFor(caller, o.Spec.Namespace)
		out = &o
	case "SelfSubjectAccessReview":
		var o authorization.SelfSubjectAccessReview
		if err := json.Unmarshal(req.Object, &o); err != nil {
			return nil, apierrors.Invalid("SelfSubjectAccessReview: %v", err)
		}
		st, err := s.decideReview(caller, o.Spec.ResourceAttributes, o.Spec.NonResourceAttributes, "")
		if err != nil {
			return nil, err
		}
		o.TypeMeta, o.Status = tm, st
		out = &o
	default: // SubjectAccessReview, LocalSubjectAccessReview
		var o authorization.SubjectAccessReview
		if err := json.Unmarshal(req.Object, &o); err != nil {
			return nil, apierrors.Invalid("%s: %v", r.Kind, err)
		}
		if o.Spec.User == "" && len(o.Spec.Groups) == 0 {
			return nil, apierrors.Invalid("spec.user: Required value: at least one of user or groups must be given")
		}
		ns := ""
		if r.Namespaced {
			ns = req.Namespace
			if ns == "" {
				ns = "default"
			}
			if o.Spec.ResourceAttributes == nil || o.Spec.ResourceAttributes.Namespace != ns {
				return nil, apierrors.Invalid("spec.resourceAttributes.namespace: Invalid value: must match the review's namespace %q", ns)
			}
		}
		st, err := s.decideReview(request.UserInfo{Name: o.Spec.User, Groups: o.Spec.Groups}, o.Spec.ResourceAttributes, o.Spec.NonResourceAttributes, ns)
		if err != nil {
			return nil, err
		}
		o.TypeMeta, o.Status = tm, st
		out = &o
	}
	b, err := json.Marshal(out)
	if err != nil {
		return nil, err
	}
	return &apipb.ObjectResponse{Object: b}, nil
}

func (s *Authorization) decideReview(u request.UserInfo, ra *authorization.ResourceAttributes, nra *authorization.NonResourceAttributes, _ string) (authorization.SubjectAccessReviewStatus, error) {
	var a request.Attributes
	switch {
	case ra != nil && nra != nil:
		return authorization.SubjectAccessReviewStatus{}, apierrors.Invalid("spec: Invalid value: resourceAttributes and nonResourceAttributes cannot both be set")
	case ra != nil:
		a = request.Attributes{Verb: ra.Verb, APIGroup: ra.Group, APIVersion: ra.Version, Resource: ra.Resource, Subresource: ra.Subresource, Namespace: ra.Namespace, Name: ra.Name}
	case nra != nil:
		a = request.Attributes{Verb: nra.Verb, Path: nra.Path}
		if a.Path == "" {
			return authorization.SubjectAccessReviewStatus{}, apierrors.Invalid("spec.nonResourceAttributes.path: Required value")
		}
	default:
		return authorization.SubjectAccessReviewStatus{}, apierrors.Invalid("spec: Invalid value: exactly one of resourceAttributes or nonResourceAttributes must be set")
	}
	if a.Verb == "" {
		return authorization.SubjectAccessReviewStatus{}, errors.New("spec: verb is required")
	}
	d, reason := s.authz.Authorize(u, &a)
	return authorization.SubjectAccessReviewStatus{Allowed: d == authorizer.Allow, Denied: d == authorizer.Deny, Reason: reason}, nil
}

// rulesFor lists the rules the authorizer gives u in namespace, resource
// and non-resource rules apart.
func (s *Authorization) rulesFor(u request.UserInfo, namespace string) authorization.SubjectRulesReviewStatus {
	st := authorization.SubjectRulesReviewStatus{ResourceRules: []authorization.ResourceRule{}, NonResourceRules: []authorization.NonResourceRule{}}
	rr, ok := s.authz.(authorizer.RuleResolver)
	if !ok {
		st.Incomplete, st.EvaluationError = true, "the authorizer cannot list rules"
		return st
	}
	rules, incomplete := rr.ListRules(u, namespace)
	st.Incomplete = incomplete
	for _, r := range rules {
		if len(r.NonResourceURLs) > 0 {
			st.NonResourceRules = append(st.NonResourceRules, authorization.NonResourceRule{Verbs: r.Verbs, NonResourceURLs: r.NonResourceURLs})
			continue
		}
		st.ResourceRules = append(st.ResourceRules, authorization.ResourceRule{Verbs: r.Verbs, APIGroups: r.APIGroups, Resources: r.Resources, ResourceNames: r.ResourceNames})
	}
	return st
}
