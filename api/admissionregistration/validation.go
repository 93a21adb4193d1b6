package admissionregistration

import (
	"fmt"
	"net/url"
	"slices"
	"strings"

	v "github.com/kobune/kobune/api/validation"
)

// ValidateValidating checks a ValidatingWebhookConfiguration.
func ValidateValidating(c *ValidatingWebhookConfiguration) v.ErrorList {
	errs := v.ValidateObjectMeta(&c.ObjectMeta, false, v.IsDNS1123Subdomain, v.NewPath("metadata"))
	seen := map[string]bool{}
	for i := range c.Webhooks {
		w := c.Webhooks[i].Common(c.Name)
		errs = append(errs, validateWebhook(&w, c.Webhooks[i].SideEffects, v.NewPath("webhooks").Index(i), seen)...)
	}
	return errs
}

// ValidateMutating checks a MutatingWebhookConfiguration.
func ValidateMutating(c *MutatingWebhookConfiguration) v.ErrorList {
	errs := v.ValidateObjectMeta(&c.ObjectMeta, false, v.IsDNS1123Subdomain, v.NewPath("metadata"))
	seen := map[string]bool{}
	for i := range c.Webhooks {
		w := c.Webhooks[i].Common(c.Name)
		p := v.NewPath("webhooks").Index(i)
		errs = append(errs, validateWebhook(&w, c.Webhooks[i].SideEffects, p, seen)...)
		if !slices.Contains([]string{Never, IfNeeded}, w.ReinvocationPolicy) {
			errs = append(errs, v.NewNotSupported(p.Child("reinvocationPolicy"), w.ReinvocationPolicy, []string{IfNeeded, Never}))
		}
	}
	return errs
}

func validateWebhook(w *Webhook, side *string, p *v.Path, seen map[string]bool) v.ErrorList {
	var errs v.ErrorList
	switch {
	case w.Name == "":
		errs = append(errs, v.NewRequired(p.Child("name"), ""))
	case v.IsDNS1123Subdomain(w.Name) != "":
		errs = append(errs, v.NewInvalid(p.Child("name"), w.Name, v.IsDNS1123Subdomain(w.Name)))
	case strings.Count(w.Name, ".") < 2:
		errs = append(errs, v.NewInvalid(p.Child("name"), w.Name, "should be a domain with at least three segments separated by dots"))
	case seen[w.Name]:
		errs = append(errs, v.NewDuplicate(p.Child("name"), w.Name))
	}
	seen[w.Name] = true
	errs = append(errs, validateClientConfig(&w.ClientConfig, p.Child("clientConfig"))...)
	for i, r := range w.Rules {
		errs = append(errs, validateRule(&r, p.Child("rules").Index(i))...)
	}
	if !slices.Contains([]string{Fail, Ignore}, w.FailurePolicy) {
		errs = append(errs, v.NewNotSupported(p.Child("failurePolicy"), w.FailurePolicy, []string{Fail, Ignore}))
	}
	if !slices.Contains([]string{Equivalent, Exact}, w.MatchPolicy) {
		errs = append(errs, v.NewNotSupported(p.Child("matchPolicy"), w.MatchPolicy, []string{Equivalent, Exact}))
	}
	switch {
	case side == nil:
		errs = append(errs, v.NewRequired(p.Child("sideEffects"), "must specify one of None, NoneOnDryRun"))
	case *side != SideEffectsNone && *side != SideEffectsNoneOnDryRun:
		errs = append(errs, v.NewNotSupported(p.Child("sideEffects"), *side, []string{SideEffectsNone, SideEffectsNoneOnDryRun}))
	}
	if w.TimeoutSeconds < 1 || w.TimeoutSeconds > 30 {
		errs = append(errs, v.NewInvalid(p.Child("timeoutSeconds"), w.TimeoutSeconds, "the timeout value must be between 1 and 30 seconds"))
	}
	switch {
	case len(w.AdmissionReviewVersions) == 0:
		errs = append(errs, v.NewRequired(p.Child("admissionReviewVersions"), "must specify one of v1, v1beta1"))
	case !slices.Contains(w.AdmissionReviewVersions, "v1") && !slices.Contains(w.AdmissionReviewVersions, "v1beta1"):
		errs = append(errs, v.NewInvalid(p.Child("admissionReviewVersions"), w.AdmissionReviewVersions, "must include at least one of v1, v1beta1"))
	}
	if w.NamespaceSelector != nil {
		errs = append(errs, v.ValidateLabelSelector(w.NamespaceSelector, p.Child("namespaceSelector"))...)
	}
	if w.ObjectSelector != nil {
		errs = append(errs, v.ValidateLabelSelector(w.ObjectSelector, p.Child("objectSelector"))...)
	}
	if len(w.MatchConditions) > 64 {
		errs = append(errs, v.NewInvalid(p.Child("matchConditions"), len(w.MatchConditions), "must have at most 64 items"))
	}
	names := map[string]bool{}
	for i, mc := range w.MatchConditions {
		mp := p.Child("matchConditions").Index(i)
		switch {
		case mc.Name == "":
			errs = append(errs, v.NewRequired(mp.Child("name"), ""))
		case names[mc.Name]:
			errs = append(errs, v.NewDuplicate(mp.Child("name"), mc.Name))
		}
		names[mc.Name] = true
		if mc.Expression == "" {
			errs = append(errs, v.NewRequired(mp.Child("expression"), ""))
		}
	}
	return errs
}

func validateClientConfig(cc *WebhookClientConfig, p *v.Path) v.ErrorList {
	var errs v.ErrorList
	switch {
	case (cc.URL == nil) == (cc.Service == nil):
		errs = append(errs, v.NewRequired(p, "exactly one of url or service is required"))
	case cc.URL != nil:
		u, err := url.Parse(*cc.URL)
		switch {
		case err != nil:
			errs = append(errs, v.NewInvalid(p.Child("url"), *cc.URL, err.Error()))
		case u.Scheme != "https":
			errs = append(errs, v.NewInvalid(p.Child("url"), *cc.URL, "'https' is the only allowed URL scheme"))
		case u.Host == "":
			errs = append(errs, v.NewInvalid(p.Child("url"), *cc.URL, "host must be specified"))
		case u.User != nil:
			errs = append(errs, v.NewInvalid(p.Child("url"), *cc.URL, "user information is not permitted in the URL"))
		case u.Fragment != "" || u.RawQuery != "":
			errs = append(errs, v.NewInvalid(p.Child("url"), *cc.URL, "fragments and query parameters are not permitted"))
		}
	default:
		s := cc.Service
		sp := p.Child("service")
		if s.Name == "" {
			errs = append(errs, v.NewRequired(sp.Child("name"), "service name is required"))
		}
		if s.Namespace == "" {
			errs = append(errs, v.NewRequired(sp.Child("namespace"), "service namespace is required"))
		}
		if s.Path != nil && *s.Path != "" && !strings.HasPrefix(*s.Path, "/") { // "" is no path, as in Kubernetes
			errs = append(errs, v.NewInvalid(sp.Child("path"), *s.Path, "must start with a '/'"))
		}
		if s.Port != nil && (*s.Port < 1 || *s.Port > 65535) {
			errs = append(errs, v.NewInvalid(sp.Child("port"), *s.Port, "port is not valid: must be between 1 and 65535"))
		}
	}
	return errs
}

var operations = []string{"*", "CONNECT", "CREATE", "DELETE", "UPDATE"}

func validateRule(r *RuleWithOperations, p *v.Path) v.ErrorList {
	var errs v.ErrorList
	if len(r.Operations) == 0 {
		errs = append(errs, v.NewRequired(p.Child("operations"), ""))
	}
	for i, op := range r.Operations {
		if !slices.Contains(operations, op) {
			errs = append(errs, v.NewNotSupported(p.Child("operations").Index(i), op, operations))
		}
	}
	for _, f := range []struct {
		name string
		list []string
	}{{"apiGroups", r.APIGroups}, {"apiVersions", r.APIVersions}, {"resources", r.Resources}} {
		if len(f.list) == 0 {
			errs = append(errs, v.NewRequired(p.Child(f.name), ""))
		}
		if len(f.list) > 1 && slices.Contains(f.list, "*") {
			errs = append(errs, v.NewInvalid(p.Child(f.name), f.list, "if '*' is present, must not specify other "+f.name))
		}
	}
	for i, res := range r.Resources {
		if res == "" {
			errs = append(errs, v.NewRequired(p.Child("resources").Index(i), ""))
		}
		if strings.Count(res, "/") > 1 {
			errs = append(errs, v.NewInvalid(p.Child("resources").Index(i), res, "must be a resource or resource/subresource"))
		}
	}
	if r.Scope != nil && !slices.Contains([]string{"*", "Cluster", "Namespaced"}, *r.Scope) {
		errs = append(errs, v.NewNotSupported(p.Child("scope"), *r.Scope, []string{"*", "Cluster", "Namespaced"}))
	}
	return errs
}

// String names a webhook in messages.
func (w *Webhook) String() string { return fmt.Sprintf("%q", w.Name) }

// ValidatePolicy checks a ValidatingAdmissionPolicy; its expressions are
// compiled by the API server (apiserver/dynamicadmission.ExpressionCheck),
// so that no client links CEL.
func ValidatePolicy(p *ValidatingAdmissionPolicy) v.ErrorList {
	errs := v.ValidateObjectMeta(&p.ObjectMeta, false, v.IsDNS1123Subdomain, v.NewPath("metadata"))
	sp := v.NewPath("spec")
	s := &p.Spec
	if len(s.Validations) == 0 && len(s.AuditAnnotations) == 0 {
		errs = append(errs, v.NewRequired(sp.Child("validations"), "validations or auditAnnotations must contain at least one item"))
	}
	errs = append(errs, validatePolicyCommon(sp, s.MatchConstraints, s.FailurePolicy, s.ParamKind, s.Variables, s.MatchConditions)...)
	for i, val := range s.Validations {
		p := sp.Child("validations").Index(i)
		errs = append(errs, requiredExpression(p.Child("expression"), val.Expression)...)
		if r := val.Reason; r != nil && !slices.Contains(policyReasons, *r) {
			errs = append(errs, v.NewNotSupported(p.Child("reason"), *r, policyReasons))
		}
	}
	for i, a := range s.AuditAnnotations {
		p := sp.Child("auditAnnotations").Index(i)
		if a.Key == "" {
			errs = append(errs, v.NewRequired(p.Child("key"), ""))
		}
		errs = append(errs, requiredExpression(p.Child("valueExpression"), a.ValueExpression)...)
	}
	return errs
}

// ValidateMutatingPolicy checks a MutatingAdmissionPolicy as
// kube-apiserver does (its expressions compile: the ExpressionCheck step).
func ValidateMutatingPolicy(p *MutatingAdmissionPolicy) v.ErrorList {
	errs := v.ValidateObjectMeta(&p.ObjectMeta, false, v.IsDNS1123Subdomain, v.NewPath("metadata"))
	sp := v.NewPath("spec")
	s := &p.Spec
	errs = append(errs, validatePolicyCommon(sp, s.MatchConstraints, s.FailurePolicy, s.ParamKind, s.Variables, s.MatchConditions)...)
	if len(s.Mutations) == 0 {
		errs = append(errs, v.NewRequired(sp.Child("mutations"), "mutations must contain at least one item"))
	}
	for i, m := range s.Mutations {
		p := sp.Child("mutations").Index(i)
		switch m.PatchType {
		case PatchTypeApplyConfiguration:
			if m.ApplyConfiguration == nil {
				errs = append(errs, v.NewRequired(p.Child("applyConfiguration"), "applyConfiguration is required when patchType is ApplyConfiguration"))
			} else {
				errs = append(errs, requiredExpression(p.Child("applyConfiguration", "expression"), m.ApplyConfiguration.Expression)...)
			}
			if m.JSONPatch != nil {
				errs = append(errs, v.NewForbidden(p.Child("jsonPatch"), "jsonPatch is not allowed when patchType is ApplyConfiguration"))
			}
		case PatchTypeJSONPatch:
			if m.JSONPatch == nil {
				errs = append(errs, v.NewRequired(p.Child("jsonPatch"), "jsonPatch is required when patchType is JSONPatch"))
			} else {
				errs = append(errs, requiredExpression(p.Child("jsonPatch", "expression"), m.JSONPatch.Expression)...)
			}
			if m.ApplyConfiguration != nil {
				errs = append(errs, v.NewForbidden(p.Child("applyConfiguration"), "applyConfiguration is not allowed when patchType is JSONPatch"))
			}
		default:
			errs = append(errs, v.NewNotSupported(p.Child("patchType"), m.PatchType, []string{PatchTypeApplyConfiguration, PatchTypeJSONPatch}))
		}
	}
	if !slices.Contains([]string{NeverReinvocation, IfNeededReinvocation}, s.ReinvocationPolicy) {
		errs = append(errs, v.NewNotSupported(sp.Child("reinvocationPolicy"), s.ReinvocationPolicy, []string{NeverReinvocation, IfNeededReinvocation}))
	}
	return errs
}

// validatePolicyCommon checks what both kinds of policies have.
func validatePolicyCommon(sp *v.Path, match *MatchResources, failurePolicy *string, paramKind *ParamKind, vars []Variable, conds []MatchCondition) v.ErrorList {
	var errs v.ErrorList
	if match == nil || len(match.ResourceRules) == 0 {
		errs = append(errs, v.NewRequired(sp.Child("matchConstraints", "resourceRules"), ""))
	} else {
		errs = append(errs, validateMatchResources(match, sp.Child("matchConstraints"))...)
	}
	if failurePolicy != nil && !slices.Contains([]string{Fail, Ignore}, *failurePolicy) {
		errs = append(errs, v.NewNotSupported(sp.Child("failurePolicy"), *failurePolicy, []string{Fail, Ignore}))
	}
	if pk := paramKind; pk != nil && (pk.APIVersion == "" || pk.Kind == "") {
		errs = append(errs, v.NewRequired(sp.Child("paramKind"), "apiVersion and kind are required"))
	}
	names := map[string]bool{}
	for i, vr := range vars {
		p := sp.Child("variables").Index(i)
		if vr.Name == "" || names[vr.Name] {
			errs = append(errs, v.NewInvalid(p.Child("name"), vr.Name, "must be a unique, non-empty name"))
		}
		names[vr.Name] = true
		errs = append(errs, requiredExpression(p.Child("expression"), vr.Expression)...)
	}
	for i, mc := range conds {
		errs = append(errs, requiredExpression(sp.Child("matchConditions").Index(i).Child("expression"), mc.Expression)...)
	}
	return errs
}

func requiredExpression(p *v.Path, expr string) v.ErrorList {
	if expr == "" {
		return v.ErrorList{v.NewRequired(p, "")}
	}
	return nil
}

// policyReasons are a validation's reasons, each an HTTP status.
var policyReasons = []string{"Forbidden", "Invalid", "RequestEntityTooLarge", "Unauthorized"}

// ValidateBinding checks a ValidatingAdmissionPolicyBinding.
func ValidateBinding(b *ValidatingAdmissionPolicyBinding) v.ErrorList {
	errs := v.ValidateObjectMeta(&b.ObjectMeta, false, v.IsDNS1123Subdomain, v.NewPath("metadata"))
	sp := v.NewPath("spec")
	s := &b.Spec
	if s.PolicyName == "" {
		errs = append(errs, v.NewRequired(sp.Child("policyName"), ""))
	}
	actions := []string{ActionAudit, ActionDeny, ActionWarn}
	if len(s.ValidationActions) == 0 {
		errs = append(errs, v.NewRequired(sp.Child("validationActions"), "at least one validation action is required"))
	}
	seen := map[string]bool{}
	for i, a := range s.ValidationActions {
		p := sp.Child("validationActions").Index(i)
		switch {
		case !slices.Contains(actions, a):
			errs = append(errs, v.NewNotSupported(p, a, actions))
		case seen[a]:
			errs = append(errs, v.NewDuplicate(p, a))
		}
		seen[a] = true
	}
	if seen[ActionDeny] && seen[ActionWarn] {
		errs = append(errs, v.NewInvalid(sp.Child("validationActions"), s.ValidationActions, "must not contain both Deny and Warn (repeating the same validation failure information in the API response and headers serves no purpose)"))
	}
	return append(errs, validateBindingCommon(sp, s.ParamRef, s.MatchResources)...)
}

// ValidateMutatingBinding checks a MutatingAdmissionPolicyBinding.
func ValidateMutatingBinding(b *MutatingAdmissionPolicyBinding) v.ErrorList {
	errs := v.ValidateObjectMeta(&b.ObjectMeta, false, v.IsDNS1123Subdomain, v.NewPath("metadata"))
	sp := v.NewPath("spec")
	if b.Spec.PolicyName == "" {
		errs = append(errs, v.NewRequired(sp.Child("policyName"), ""))
	}
	return append(errs, validateBindingCommon(sp, b.Spec.ParamRef, b.Spec.MatchResources)...)
}

// validateBindingCommon checks what both kinds of bindings have.
func validateBindingCommon(sp *v.Path, r *ParamRef, match *MatchResources) v.ErrorList {
	var errs v.ErrorList
	if r != nil {
		p := sp.Child("paramRef")
		if (r.Name == "") == (r.Selector == nil) {
			errs = append(errs, v.NewRequired(p, "exactly one of name or selector must be set"))
		}
		if r.ParameterNotFoundAction == nil {
			errs = append(errs, v.NewRequired(p.Child("parameterNotFoundAction"), ""))
		} else if !slices.Contains([]string{AllowAction, DenyAction}, *r.ParameterNotFoundAction) {
			errs = append(errs, v.NewNotSupported(p.Child("parameterNotFoundAction"), *r.ParameterNotFoundAction, []string{AllowAction, DenyAction}))
		}
	}
	if match != nil {
		errs = append(errs, validateMatchResources(match, sp.Child("matchResources"))...)
	}
	return errs
}

func validateMatchResources(m *MatchResources, p *v.Path) v.ErrorList {
	var errs v.ErrorList
	for i, r := range m.ResourceRules {
		errs = append(errs, validateRule(&r.RuleWithOperations, p.Child("resourceRules").Index(i))...)
	}
	for i, r := range m.ExcludeResourceRules {
		errs = append(errs, validateRule(&r.RuleWithOperations, p.Child("excludeResourceRules").Index(i))...)
	}
	if m.MatchPolicy != nil && !slices.Contains([]string{Equivalent, Exact}, *m.MatchPolicy) {
		errs = append(errs, v.NewNotSupported(p.Child("matchPolicy"), *m.MatchPolicy, []string{Equivalent, Exact}))
	}
	if m.NamespaceSelector != nil {
		errs = append(errs, v.ValidateLabelSelector(m.NamespaceSelector, p.Child("namespaceSelector"))...)
	}
	if m.ObjectSelector != nil {
		errs = append(errs, v.ValidateLabelSelector(m.ObjectSelector, p.Child("objectSelector"))...)
	}
	return errs
}
