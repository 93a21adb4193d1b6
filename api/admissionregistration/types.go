package admissionregistration

import (
	"github.com/kobune/kobune/api/meta"
)

// Group is the API group of admission configuration.
const Group = "admissionregistration.k8s.io"

// ValidatingWebhookConfiguration lists webhooks that may refuse a request.
type ValidatingWebhookConfiguration struct {
	meta.TypeMeta   `json:",inline"`
	meta.ObjectMeta `json:"metadata"`
	Webhooks        []ValidatingWebhook `json:"webhooks,omitempty"`
}

// MutatingWebhookConfiguration lists webhooks that may change, or refuse,
// a request's object.
type MutatingWebhookConfiguration struct {
	meta.TypeMeta   `json:",inline"`
	meta.ObjectMeta `json:"metadata"`
	Webhooks        []MutatingWebhook `json:"webhooks,omitempty"`
}

// ValidatingWebhook is one webhook that judges requests.
type ValidatingWebhook struct {
	Name                    string               `json:"name"`
	ClientConfig            WebhookClientConfig  `json:"clientConfig"`
	Rules                   []RuleWithOperations `json:"rules,omitempty"`
	FailurePolicy           *string              `json:"failurePolicy,omitempty"`
	MatchPolicy             *string              `json:"matchPolicy,omitempty"`
	NamespaceSelector       *meta.LabelSelector  `json:"namespaceSelector,omitempty"`
	ObjectSelector          *meta.LabelSelector  `json:"objectSelector,omitempty"`
	SideEffects             *string              `json:"sideEffects"`
	TimeoutSeconds          *int32               `json:"timeoutSeconds,omitempty"`
	AdmissionReviewVersions []string             `json:"admissionReviewVersions"`
	MatchConditions         []MatchCondition     `json:"matchConditions,omitempty"`
}

// MutatingWebhook is one webhook that may change requests' objects.
type MutatingWebhook struct {
	Name                    string               `json:"name"`
	ClientConfig            WebhookClientConfig  `json:"clientConfig"`
	Rules                   []RuleWithOperations `json:"rules,omitempty"`
	FailurePolicy           *string              `json:"failurePolicy,omitempty"`
	MatchPolicy             *string              `json:"matchPolicy,omitempty"`
	NamespaceSelector       *meta.LabelSelector  `json:"namespaceSelector,omitempty"`
	ObjectSelector          *meta.LabelSelector  `json:"objectSelector,omitempty"`
	SideEffects             *string              `json:"sideEffects"`
	TimeoutSeconds          *int32               `json:"timeoutSeconds,omitempty"`
	AdmissionReviewVersions []string             `json:"admissionReviewVersions"`
	MatchConditions         []MatchCondition     `json:"matchConditions,omitempty"`
	// ReinvocationPolicy IfNeeded calls the webhook once more when a later
	// webhook changed the object after it.
	ReinvocationPolicy *string `json:"reinvocationPolicy,omitempty"`
}

// Webhook is what the two kinds of webhook share, as the API server
// calls them.
type Webhook struct {
	Name                    string
	ClientConfig            WebhookClientConfig
	Rules                   []RuleWithOperations
	FailurePolicy           string
	MatchPolicy             string
	NamespaceSelector       *meta.LabelSelector
	ObjectSelector          *meta.LabelSelector
	SideEffects             string
	TimeoutSeconds          int32
	AdmissionReviewVersions []string
	MatchConditions         []MatchCondition
	ReinvocationPolicy      string
	// Configuration is the name of the configuration it is in.
	Configuration string
}

// Common returns the webhook as the API server calls it, defaults filled.
func (w *ValidatingWebhook) Common(configuration string) Webhook {
	return common(configuration, w.Name, w.ClientConfig, w.Rules, w.FailurePolicy, w.MatchPolicy, w.NamespaceSelector, w.ObjectSelector,
		w.SideEffects, w.TimeoutSeconds, w.AdmissionReviewVersions, w.MatchConditions, nil)
}

// Common returns the webhook as the API server calls it, defaults filled.
func (w *MutatingWebhook) Common(configuration string) Webhook {
	return common(configuration, w.Name, w.ClientConfig, w.Rules, w.FailurePolicy, w.MatchPolicy, w.NamespaceSelector, w.ObjectSelector,
		w.SideEffects, w.TimeoutSeconds, w.AdmissionReviewVersions, w.MatchConditions, w.ReinvocationPolicy)
}

func common(configuration, name string, cc WebhookClientConfig, rules []RuleWithOperations, failure, match *string, ns, obj *meta.LabelSelector,
	side *string, timeout *int32, versions []string, conds []MatchCondition, reinvocation *string) Webhook {
	w := Webhook{Configuration: configuration, Name: name, ClientConfig: cc, Rules: rules, NamespaceSelector: ns, ObjectSelector: obj,
		AdmissionReviewVersions: versions, MatchConditions: conds, FailurePolicy: Fail, MatchPolicy: Equivalent, TimeoutSeconds: 10, ReinvocationPolicy: Never}
	if failure != nil {
		w.FailurePolicy = *failure
	}
	if match != nil {
		w.MatchPolicy = *match
	}
	if side != nil {
		w.SideEffects = *side
	}
	if timeout != nil {
		w.TimeoutSeconds = *timeout
	}
	if reinvocation != nil {
		w.ReinvocationPolicy = *reinvocation
	}
	return w
}

// The policies' values.
const (
	Fail       = "Fail"
	Ignore     = "Ignore"
	Exact      = "Exact"
	Equivalent = "Equivalent"
	Never      = "Never"
	IfNeeded   = "IfNeeded"

	SideEffectsNone         = "None"
	SideEffectsNoneOnDryRun = "NoneOnDryRun"
	SideEffectsSome         = "Some"
	SideEffectsUnknown      = "Unknown"
)

// WebhookClientConfig is where a webhook is: a URL, or a Service in the
// cluster; CABundle is the PEM of the CA that signed its certificate.
type WebhookClientConfig struct {
	URL      *string           `json:"url,omitempty"`
	Service  *ServiceReference `json:"service,omitempty"`
	CABundle []byte            `json:"caBundle,omitempty"`
}

// ServiceReference names a webhook's Service.
type ServiceReference struct {
	Namespace string  `json:"namespace"`
	Name      string  `json:"name"`
	Path      *string `json:"path,omitempty"`
	Port      *int32  `json:"port,omitempty"`
}

// RuleWithOperations says which requests a webhook sees.
type RuleWithOperations struct {
	Operations  []string `json:"operations,omitempty"`
	APIGroups   []string `json:"apiGroups,omitempty"`
	APIVersions []string `json:"apiVersions,omitempty"`
	Resources   []string `json:"resources,omitempty"`
	Scope       *string  `json:"scope,omitempty"`
}

// MatchCondition is a CEL expression a request must satisfy for the
// webhook to be called.
type MatchCondition struct {
	Name       string `json:"name"`
	Expression string `json:"expression"`
}
