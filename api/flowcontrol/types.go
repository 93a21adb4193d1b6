package flowcontrol

import (
	"github.com/kobune/kobune/api/meta"
)

// FlowSchema classifies requests: the first schema (lowest
// matchingPrecedence) whose rules match a request decides its priority
// level, and its distinguisher method splits that level's traffic into
// flows that queue fairly against each other.
type FlowSchema struct {
	meta.TypeMeta   `json:",inline"`
	meta.ObjectMeta `json:"metadata"`
	Spec            FlowSchemaSpec   `json:"spec"`
	Status          FlowSchemaStatus `json:"status,omitzero"`
}

// FlowSchemaSpec is what a schema matches and where it sends it.
type FlowSchemaSpec struct {
	PriorityLevelConfiguration PriorityLevelConfigurationReference `json:"priorityLevelConfiguration"`
	// MatchingPrecedence orders the schemas, lowest first (1 to 10000;
	// defaults to 1000).
	MatchingPrecedence  int32                     `json:"matchingPrecedence,omitempty"`
	DistinguisherMethod *FlowDistinguisherMethod  `json:"distinguisherMethod,omitempty"`
	Rules               []PolicyRulesWithSubjects `json:"rules,omitempty"`
}

// PriorityLevelConfigurationReference names a priority level.
type PriorityLevelConfigurationReference struct {
	Name string `json:"name"`
}

// Distinguisher methods: requests of one user (or one namespace) make one
// flow; without a method, a schema's requests are all one flow.
const (
	ByUser      = "ByUser"
	ByNamespace = "ByNamespace"
)

// FlowDistinguisherMethod says how a schema's requests are split into flows.
type FlowDistinguisherMethod struct {
	Type string `json:"type"`
}

// PolicyRulesWithSubjects matches a request when one subject matches its
// user and one rule matches what it asks.
type PolicyRulesWithSubjects struct {
	Subjects         []Subject               `json:"subjects"`
	ResourceRules    []ResourcePolicyRule    `json:"resourceRules,omitempty"`
	NonResourceRules []NonResourcePolicyRule `json:"nonResourceRules,omitempty"`
}

// Subject kinds.
const (
	SubjectUser           = "User"
	SubjectGroup          = "Group"
	SubjectServiceAccount = "ServiceAccount"
)

// Subject is a user, a group or a ServiceAccount ("*" matches any name).
type Subject struct {
	Kind           string                 `json:"kind"`
	User           *UserSubject           `json:"user,omitempty"`
	Group          *GroupSubject          `json:"group,omitempty"`
	ServiceAccount *ServiceAccountSubject `json:"serviceAccount,omitempty"`
}

// UserSubject names a user.
type UserSubject struct {
	Name string `json:"name"`
}

// GroupSubject names a group.
type GroupSubject struct {
	Name string `json:"name"`
}

// ServiceAccountSubject names a ServiceAccount ("*" for any in the namespace).
type ServiceAccountSubject struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
}

// ResourcePolicyRule matches resource requests: verbs, groups and
// resources ("*" for all), in the namespaces listed ("*" for any) or,
// with clusterScope, requests that name no namespace.
type ResourcePolicyRule struct {
	Verbs        []string `json:"verbs"`
	APIGroups    []string `json:"apiGroups"`
	Resources    []string `json:"resources"`
	ClusterScope bool     `json:"clusterScope,omitempty"`
	Namespaces   []string `json:"namespaces,omitempty"`
}

// NonResourcePolicyRule matches requests for paths such as /healthz
// ("/apis/*" matches a prefix, "*" everything).
type NonResourcePolicyRule struct {
	Verbs           []string `json:"verbs"`
	NonResourceURLs []string `json:"nonResourceURLs"`
}

// FlowSchemaStatus holds the schema's conditions.
type FlowSchemaStatus struct {
	Conditions []FlowSchemaCondition `json:"conditions,omitempty"`
}

// Condition types and reasons the API server writes.
const (
	// FlowSchemaConditionDangling is True when the schema names a
	// priority level that does not exist: its requests then go to the
	// next schema that matches, as in Kubernetes.
	FlowSchemaConditionDangling = "Dangling"
)

// FlowSchemaCondition is one condition of a FlowSchema.
type FlowSchemaCondition struct {
	Type               string    `json:"type,omitempty"`
	Status             string    `json:"status,omitempty"`
	LastTransitionTime meta.Time `json:"lastTransitionTime,omitzero"`
	Reason             string    `json:"reason,omitempty"`
	Message            string    `json:"message,omitempty"`
}

// Priority level types.
const (
	PriorityLevelExempt  = "Exempt"
	PriorityLevelLimited = "Limited"
)

// PriorityLevelConfiguration is a share of the server's concurrency and
// what happens to requests beyond it (queue or reject).
type PriorityLevelConfiguration struct {
	meta.TypeMeta   `json:",inline"`
	meta.ObjectMeta `json:"metadata"`
	Spec            PriorityLevelConfigurationSpec   `json:"spec"`
	Status          PriorityLevelConfigurationStatus `json:"status,omitzero"`
}

// PriorityLevelConfigurationSpec is Exempt (never limited) or Limited.
type PriorityLevelConfigurationSpec struct {
	Type    string                             `json:"type"`
	Limited *LimitedPriorityLevelConfiguration `json:"limited,omitempty"`
	Exempt  *ExemptPriorityLevelConfiguration  `json:"exempt,omitempty"`
}

// LimitedPriorityLevelConfiguration is a limited level's share and queues.
type LimitedPriorityLevelConfiguration struct {
	// NominalConcurrencyShares is this level's part of the server's
	// concurrency: the level gets total × shares / (all levels' shares)
	// seats, rounded up (defaults to 30).
	NominalConcurrencyShares *int32        `json:"nominalConcurrencyShares,omitempty"`
	LimitResponse            LimitResponse `json:"limitResponse,omitzero"`
	// LendablePercent of the level's seats may be used by other levels
	// while this one leaves them idle.
	LendablePercent *int32 `json:"lendablePercent,omitempty"`
	// BorrowingLimitPercent bounds the seats the level may borrow from
	// others, as a percentage of its own; unset is no bound.
	BorrowingLimitPercent *int32 `json:"borrowingLimitPercent,omitempty"`
}

// ExemptPriorityLevelConfiguration is the exempt level's share: its
// requests are never limited, the share only counts in others' arithmetic.
type ExemptPriorityLevelConfiguration struct {
	NominalConcurrencyShares *int32 `json:"nominalConcurrencyShares,omitempty"`
	LendablePercent          *int32 `json:"lendablePercent,omitempty"`
}

// Limit response types.
const (
	LimitResponseQueue  = "Queue"
	LimitResponseReject = "Reject"
)

// LimitResponse says what happens to a request that finds no free seat:
// it waits in a queue, or is rejected at once (429).
type LimitResponse struct {
	Type    string                `json:"type"`
	Queuing *QueuingConfiguration `json:"queuing,omitempty"`
}

// QueuingConfiguration is the level's queues: each flow is dealt a hand
// of handSize of them (shuffle sharding) and waits in the shortest.
type QueuingConfiguration struct {
	Queues           int32 `json:"queues,omitempty"`
	HandSize         int32 `json:"handSize,omitempty"`
	QueueLengthLimit int32 `json:"queueLengthLimit,omitempty"`
}

// PriorityLevelConfigurationStatus holds the level's conditions.
type PriorityLevelConfigurationStatus struct {
	Conditions []PriorityLevelConfigurationCondition `json:"conditions,omitempty"`
}

// PriorityLevelConfigurationCondition is one condition of a level.
type PriorityLevelConfigurationCondition struct {
	Type               string    `json:"type,omitempty"`
	Status             string    `json:"status,omitempty"`
	LastTransitionTime meta.Time `json:"lastTransitionTime,omitzero"`
	Reason             string    `json:"reason,omitempty"`
	Message            string    `json:"message,omitempty"`
}
