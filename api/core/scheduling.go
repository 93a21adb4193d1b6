package core

import "github.com/kobune/kobune/api/meta"

// Toleration lets a pod run on a node with a matching taint.
type Toleration struct {
	Key               string             `json:"key,omitempty"`
	Operator          TolerationOperator `json:"operator,omitempty"`
	Value             string             `json:"value,omitempty"`
	Effect            TaintEffect        `json:"effect,omitempty"`
	TolerationSeconds *int64             `json:"tolerationSeconds,omitempty"`
}

// TolerationOperator is Exists or Equal.
type TolerationOperator string

// Toleration operators.
const (
	TolerationOpExists TolerationOperator = "Exists"
	TolerationOpEqual  TolerationOperator = "Equal"
)

// ToleratesTaint reports whether the toleration matches the taint, by
// Kubernetes' rules: an empty effect matches every effect, an empty key with
// Exists matches every taint.
func (t *Toleration) ToleratesTaint(taint *Taint) bool {
	if t.Effect != "" && t.Effect != taint.Effect {
		return false
	}
	if t.Key != "" && t.Key != taint.Key {
		return false
	}
	switch t.Operator {
	case TolerationOpExists:
		return true
	case "", TolerationOpEqual:
		return t.Value == taint.Value
	}
	return false
}

// Affinity groups the node and pod (anti-)affinity rules.
type Affinity struct {
	NodeAffinity    *NodeAffinity    `json:"nodeAffinity,omitempty"`
	PodAffinity     *PodAffinity     `json:"podAffinity,omitempty"`
	PodAntiAffinity *PodAntiAffinity `json:"podAntiAffinity,omitempty"`
}

// NodeAffinity constrains which nodes a pod may or prefers to run on.
type NodeAffinity struct {
	RequiredDuringSchedulingIgnoredDuringExecution  *NodeSelector             `json:"requiredDuringSchedulingIgnoredDuringExecution,omitempty"`
	PreferredDuringSchedulingIgnoredDuringExecution []PreferredSchedulingTerm `json:"preferredDuringSchedulingIgnoredDuringExecution,omitempty"`
}

// NodeSelector is a list of terms, any of which may match (OR).
type NodeSelector struct {
	NodeSelectorTerms []NodeSelectorTerm `json:"nodeSelectorTerms"`
}

// NodeSelectorTerm is a conjunction of requirements (AND).
type NodeSelectorTerm struct {
	MatchExpressions []NodeSelectorRequirement `json:"matchExpressions,omitempty"`
	MatchFields      []NodeSelectorRequirement `json:"matchFields,omitempty"`
}

// NodeSelectorRequirement is key, operator (In, NotIn, Exists, DoesNotExist, Gt, Lt) and values.
type NodeSelectorRequirement struct {
	Key      string   `json:"key"`
	Operator string   `json:"operator"`
	Values   []string `json:"values,omitempty"`
}

// PreferredSchedulingTerm is a weighted node selector term.
type PreferredSchedulingTerm struct {
	Weight     int32            `json:"weight"`
	Preference NodeSelectorTerm `json:"preference"`
}

// PodAffinity attracts a pod to nodes running matching pods.
type PodAffinity struct {
	RequiredDuringSchedulingIgnoredDuringExecution  []PodAffinityTerm         `json:"requiredDuringSchedulingIgnoredDuringExecution,omitempty"`
	PreferredDuringSchedulingIgnoredDuringExecution []WeightedPodAffinityTerm `json:"preferredDuringSchedulingIgnoredDuringExecution,omitempty"`
}

// PodAntiAffinity repels a pod from nodes running matching pods.
type PodAntiAffinity struct {
	RequiredDuringSchedulingIgnoredDuringExecution  []PodAffinityTerm         `json:"requiredDuringSchedulingIgnoredDuringExecution,omitempty"`
	PreferredDuringSchedulingIgnoredDuringExecution []WeightedPodAffinityTerm `json:"preferredDuringSchedulingIgnoredDuringExecution,omitempty"`
}

// PodAffinityTerm selects pods in namespaces over a topology key.
type PodAffinityTerm struct {
	LabelSelector *meta.LabelSelector `json:"labelSelector,omitempty"`
	Namespaces    []string            `json:"namespaces,omitempty"`
	TopologyKey   string              `json:"topologyKey"`
}

// WeightedPodAffinityTerm is a preferred pod affinity term.
type WeightedPodAffinityTerm struct {
	Weight          int32           `json:"weight"`
	PodAffinityTerm PodAffinityTerm `json:"podAffinityTerm"`
}

// TopologySpreadConstraint spreads matching pods across topology domains.
type TopologySpreadConstraint struct {
	MaxSkew           int32               `json:"maxSkew"`
	TopologyKey       string              `json:"topologyKey"`
	WhenUnsatisfiable string              `json:"whenUnsatisfiable"`
	LabelSelector     *meta.LabelSelector `json:"labelSelector,omitempty"`
	MinDomains        *int32              `json:"minDomains,omitempty"`
}
