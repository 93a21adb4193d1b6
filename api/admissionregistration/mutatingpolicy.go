package admissionregistration

import "github.com/kobune/kobune/api/meta"

// MutatingAdmissionPolicy is a set of CEL mutations that bindings apply
// to requests: each builds the part of the object it sets (an apply
// configuration, merged as server-side apply merges) or a JSON patch.
type MutatingAdmissionPolicy struct {
	meta.TypeMeta   `json:",inline"`
	meta.ObjectMeta `json:"metadata"`
	Spec            MutatingAdmissionPolicySpec `json:"spec"`
}

// MutatingAdmissionPolicySpec is what a policy changes, on which
// requests.
type MutatingAdmissionPolicySpec struct {
	ParamKind        *ParamKind       `json:"paramKind,omitempty"`
	MatchConstraints *MatchResources  `json:"matchConstraints,omitempty"`
	Variables        []Variable       `json:"variables,omitempty"`
	Mutations        []Mutation       `json:"mutations,omitempty"`
	FailurePolicy    *string          `json:"failurePolicy,omitempty"`
	MatchConditions  []MatchCondition `json:"matchConditions,omitempty"`
	// ReinvocationPolicy is Never or IfNeeded: run once more after the
	// mutating webhooks when they changed the object.
	ReinvocationPolicy string `json:"reinvocationPolicy,omitempty"`
}

// Mutation is one change: an apply configuration or a JSON patch, each a
// CEL expression.
type Mutation struct {
	PatchType          string              `json:"patchType"`
	ApplyConfiguration *ApplyConfiguration `json:"applyConfiguration,omitempty"`
	JSONPatch          *JSONPatch          `json:"jsonPatch,omitempty"`
}

// ApplyConfiguration's expression gives an Object{...} to merge.
type ApplyConfiguration struct {
	Expression string `json:"expression,omitempty"`
}

// JSONPatch's expression gives a list of JSONPatch{op, path, value}.
type JSONPatch struct {
	Expression string `json:"expression,omitempty"`
}

// The patch types and reinvocation policies.
const (
	PatchTypeApplyConfiguration = "ApplyConfiguration"
	PatchTypeJSONPatch          = "JSONPatch"
	NeverReinvocation           = "Never"
	IfNeededReinvocation        = "IfNeeded"
)

// MutatingAdmissionPolicyBinding applies a mutating policy, with
// parameters, to the requests it selects.
type MutatingAdmissionPolicyBinding struct {
	meta.TypeMeta   `json:",inline"`
	meta.ObjectMeta `json:"metadata"`
	Spec            MutatingAdmissionPolicyBindingSpec `json:"spec"`
}

// MutatingAdmissionPolicyBindingSpec binds a mutating policy.
type MutatingAdmissionPolicyBindingSpec struct {
	PolicyName     string          `json:"policyName"`
	ParamRef       *ParamRef       `json:"paramRef,omitempty"`
	MatchResources *MatchResources `json:"matchResources,omitempty"`
}
