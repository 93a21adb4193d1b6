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
		if s.Path != nil && !strings.HasPrefix(*s.Path, "/") {
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
