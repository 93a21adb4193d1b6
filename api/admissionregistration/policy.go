package admissionregistration

import (
	"github.com/kobune/kobune/api/meta"
)

// ValidatingAdmissionPolicy is a set of CEL checks that bindings apply
// to requests.
type ValidatingAdmissionPolicy struct {
	meta.TypeMeta   `json:",inline"`
	meta.ObjectMeta `json:"metadata"`
	Spec            ValidatingAdmissionPolicySpec   `json:"spec"`
	Status          ValidatingAdmissionPolicyStatus `json:"status,omitzero"`
}

// ValidatingAdmissionPolicyStatus is what the server observed of a policy.
type ValidatingAdmissionPolicyStatus struct {
	// ObservedGeneration is the generation the API server has compiled
	// and applies (written by it).
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// TypeChecking is Kubernetes' report of expressions that do not
	// type-check against the matched kinds' schemas; Kobune compiles
	// expressions dynamically typed and writes none.
	TypeChecking *PolicyTypeChecking `json:"typeChecking,omitempty" kobune:"unsupported"`
	// Conditions are kept as written (the status subresource).
	Conditions []PolicyCondition `json:"conditions,omitempty"`
}

// PolicyTypeChecking lists the warnings of type checking.
type PolicyTypeChecking struct {
	ExpressionWarnings []ExpressionWarning `json:"expressionWarnings,omitempty"`
}

// ExpressionWarning is one expression's type-checking warning.
type ExpressionWarning struct {
	FieldRef string `json:"fieldRef"`
	Warning  string `json:"warning"`
}

// PolicyCondition is a meta.k8s.io/v1 Condition.
type PolicyCondition struct {
	Type               string               `json:"type"`
	Status             meta.ConditionStatus `json:"status"`
	ObservedGeneration int64                `json:"observedGeneration,omitempty"`
	LastTransitionTime meta.Time            `json:"lastTransitionTime,omitzero"`
	Reason             string               `json:"reason"`
	Message            string               `json:"message"`
}

// ValidatingAdmissionPolicySpec is what a policy checks, on which
// requests.
type ValidatingAdmissionPolicySpec struct {
	// ParamKind, when set, is the kind of the objects a binding names as
	// the policy's parameters (params in its expressions).
	ParamKind        *ParamKind        `json:"paramKind,omitempty"`
	MatchConstraints *MatchResources   `json:"matchConstraints,omitempty"`
	Validations      []Validation      `json:"validations,omitempty"`
	FailurePolicy    *string           `json:"failurePolicy,omitempty"`
	AuditAnnotations []AuditAnnotation `json:"auditAnnotations,omitempty"`
	MatchConditions  []MatchCondition  `json:"matchConditions,omitempty"`
	Variables        []Variable        `json:"variables,omitempty"`
}

// ParamKind names a kind by apiVersion and kind.
type ParamKind struct {
	APIVersion string `json:"apiVersion,omitempty"`
	Kind       string `json:"kind,omitempty"`
}

// MatchResources selects requests: by rule (and exclusions), namespace
// and object labels.
type MatchResources struct {
	NamespaceSelector    *meta.LabelSelector       `json:"namespaceSelector,omitempty"`
	ObjectSelector       *meta.LabelSelector       `json:"objectSelector,omitempty"`
	ResourceRules        []NamedRuleWithOperations `json:"resourceRules,omitempty"`
	ExcludeResourceRules []NamedRuleWithOperations `json:"excludeResourceRules,omitempty"`
	MatchPolicy          *string                   `json:"matchPolicy,omitempty"`
}

// NamedRuleWithOperations is a rule that may name the objects it selects.
type NamedRuleWithOperations struct {
	ResourceNames      []string `json:"resourceNames,omitempty"`
	RuleWithOperations `json:",inline"`
}

// Validation is one CEL check: true passes.
type Validation struct {
	Expression        string  `json:"expression"`
	Message           string  `json:"message,omitempty"`
	Reason            *string `json:"reason,omitempty"`
	MessageExpression string  `json:"messageExpression,omitempty"`
}

// AuditAnnotation is a value a policy writes into the request's audit
// event.
type AuditAnnotation struct {
	Key             string `json:"key"`
	ValueExpression string `json:"valueExpression"`
}

// Variable is a named CEL expression the others may read as
// variables.<name>.
type Variable struct {
	Name       string `json:"name"`
	Expression string `json:"expression"`
}

// ValidatingAdmissionPolicyBinding applies a policy, with parameters, to
// the requests it selects, with the actions a failed check takes.
type ValidatingAdmissionPolicyBinding struct {
	meta.TypeMeta   `json:",inline"`
	meta.ObjectMeta `json:"metadata"`
	Spec            ValidatingAdmissionPolicyBindingSpec `json:"spec"`
}

// ValidatingAdmissionPolicyBindingSpec binds a policy.
type ValidatingAdmissionPolicyBindingSpec struct {
	PolicyName     string          `json:"policyName"`
	ParamRef       *ParamRef       `json:"paramRef,omitempty"`
	MatchResources *MatchResources `json:"matchResources,omitempty"`
	// ValidationActions: Deny refuses the request, Warn warns, Audit
	// records the failure in the audit log.
	ValidationActions []string `json:"validationActions"`
}

// ParamRef names the parameter object(s): by name, or by label selector.
type ParamRef struct {
	Name                    string              `json:"name,omitempty"`
	Namespace               string              `json:"namespace,omitempty"`
	Selector                *meta.LabelSelector `json:"selector,omitempty"`
	ParameterNotFoundAction *string             `json:"parameterNotFoundAction,omitempty"`
}

// The validation actions and parameter-not-found actions.
const (
	ActionDeny  = "Deny"
	ActionWarn  = "Warn"
	ActionAudit = "Audit"
	AllowAction = "Allow"
	DenyAction  = "Deny"
)
