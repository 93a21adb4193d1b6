// Package authorization holds the access reviews ("authorization.k8s.io/v1")
// — "may this user do this?" asked of the API server's authorizer
// (SubjectAccessReview, LocalSubjectAccessReview, SelfSubjectAccessReview,
// which `kobectl auth can-i` sends), "what may I do here?"
// (SelfSubjectRulesReview, `auth can-i --list`) — and SelfSubjectReview
// ("authentication.k8s.io/v1": "who am I?", `kobectl auth whoami`). They
// are never stored: a create returns the request with its status filled.
package authorization

import "github.com/kobune/kobune/api/meta"

// ResourceAttributes are a resource request.
type ResourceAttributes struct {
	Namespace   string `json:"namespace,omitempty"`
	Verb        string `json:"verb,omitempty"`
	Group       string `json:"group,omitempty"`
	Version     string `json:"version,omitempty"`
	Resource    string `json:"resource,omitempty"`
	Subresource string `json:"subresource,omitempty"`
	Name        string `json:"name,omitempty"`
}

// NonResourceAttributes are a request on a path.
type NonResourceAttributes struct {
	Path string `json:"path,omitempty"`
	Verb string `json:"verb,omitempty"`
}

// SubjectAccessReviewSpec is the question: exactly one of the attributes,
// and (for SubjectAccessReview) whom it is about.
type SubjectAccessReviewSpec struct {
	ResourceAttributes    *ResourceAttributes    `json:"resourceAttributes,omitempty"`
	NonResourceAttributes *NonResourceAttributes `json:"nonResourceAttributes,omitempty"`
	User                  string                 `json:"user,omitempty"`
	Groups                []string               `json:"groups,omitempty"`
	UID                   string                 `json:"uid,omitempty"`
	Extra                 map[string][]string    `json:"extra,omitempty" kobune:"unsupported"`
}

// SelfSubjectAccessReviewSpec is the question about the caller.
type SelfSubjectAccessReviewSpec struct {
	ResourceAttributes    *ResourceAttributes    `json:"resourceAttributes,omitempty"`
	NonResourceAttributes *NonResourceAttributes `json:"nonResourceAttributes,omitempty"`
}

// SubjectAccessReviewStatus is the answer.
type SubjectAccessReviewStatus struct {
	Allowed         bool   `json:"allowed"`
	Denied          bool   `json:"denied,omitempty"`
	Reason          string `json:"reason,omitempty"`
	EvaluationError string `json:"evaluationError,omitempty"`
}

// SubjectAccessReview asks about any user (cluster-scoped).
type SubjectAccessReview struct {
	meta.TypeMeta   `json:",inline"`
	meta.ObjectMeta `json:"metadata"`
	Spec            SubjectAccessReviewSpec   `json:"spec"`
	Status          SubjectAccessReviewStatus `json:"status,omitempty"`
}

// LocalSubjectAccessReview asks about any user in one namespace (its own).
type LocalSubjectAccessReview SubjectAccessReview

// SelfSubjectAccessReview asks about the caller.
type SelfSubjectAccessReview struct {
	meta.TypeMeta   `json:",inline"`
	meta.ObjectMeta `json:"metadata"`
	Spec            SelfSubjectAccessReviewSpec `json:"spec"`
	Status          SubjectAccessReviewStatus   `json:"status,omitempty"`
}

// UserInfo is who the caller is, as authentication found it.
type UserInfo struct {
	Username string              `json:"username,omitempty"`
	UID      string              `json:"uid,omitempty"`
	Groups   []string            `json:"groups,omitempty"`
	Extra    map[string][]string `json:"extra,omitempty"`
}

// SelfSubjectRulesReview asks for every rule the caller holds in a
// namespace (`kubectl auth can-i --list`).
type SelfSubjectRulesReview struct {
	meta.TypeMeta   `json:",inline"`
	meta.ObjectMeta `json:"metadata"`
	Spec            SelfSubjectRulesReviewSpec `json:"spec"`
	Status          SubjectRulesReviewStatus   `json:"status,omitempty"`
}

// SelfSubjectRulesReviewSpec names the namespace.
type SelfSubjectRulesReviewSpec struct {
	Namespace string `json:"namespace,omitempty"`
}

// SubjectRulesReviewStatus is the rules; Incomplete says an authorization
// mode decides requests it cannot list as rules.
type SubjectRulesReviewStatus struct {
	ResourceRules    []ResourceRule    `json:"resourceRules"`
	NonResourceRules []NonResourceRule `json:"nonResourceRules"`
	Incomplete       bool              `json:"incomplete"`
	EvaluationError  string            `json:"evaluationError,omitempty"`
}

// ResourceRule is what verbs may be done to which resources ("pods/exec"
// for a subresource) of which groups, optionally only to named objects.
type ResourceRule struct {
	Verbs         []string `json:"verbs"`
	APIGroups     []string `json:"apiGroups,omitempty"`
	Resources     []string `json:"resources,omitempty"`
	ResourceNames []string `json:"resourceNames,omitempty"`
}

// NonResourceRule is what verbs may be done on which paths.
type NonResourceRule struct {
	Verbs           []string `json:"verbs"`
	NonResourceURLs []string `json:"nonResourceURLs,omitempty"`
}

// SelfSubjectReview ("authentication.k8s.io/v1") returns the caller's user.
type SelfSubjectReview struct {
	meta.TypeMeta   `json:",inline"`
	meta.ObjectMeta `json:"metadata"`
	Status          struct {
		UserInfo UserInfo `json:"userInfo"`
	} `json:"status,omitempty"`
}

// TokenReview ("authentication.k8s.io/v1") asks the API server whether
// a bearer token is one it accepts, and whose it is: how a webhook or an
// extension server authenticates the tokens sent to it (kube-apiserver's
// token review API). Never stored.
type TokenReview struct {
	meta.TypeMeta   `json:",inline"`
	meta.ObjectMeta `json:"metadata"`
	Spec            TokenReviewSpec   `json:"spec"`
	Status          TokenReviewStatus `json:"status,omitempty"`
}

// TokenReviewSpec is the token and the audiences it must be for (the API
// server's when empty).
type TokenReviewSpec struct {
	Token     string   `json:"token,omitempty"`
	Audiences []string `json:"audiences,omitempty"`
}

// TokenReviewStatus is the answer: whose the token is, for which of the
// audiences asked, or why it is refused.
type TokenReviewStatus struct {
	Authenticated bool     `json:"authenticated,omitempty"`
	User          UserInfo `json:"user,omitempty"`
	Audiences     []string `json:"audiences,omitempty"`
	Error         string   `json:"error,omitempty"`
}

// TokenRequest ("authentication.k8s.io/v1", the serviceaccounts/token
// subresource) asks the API server for a ServiceAccount token: for these
// audiences (the API server's when empty), valid this long, and bound to
// an object (a pod) whose deletion ends it.
type TokenRequest struct {
	meta.TypeMeta   `json:",inline"`
	meta.ObjectMeta `json:"metadata"`
	Spec            TokenRequestSpec   `json:"spec"`
	Status          TokenRequestStatus `json:"status,omitempty"`
}

// TokenRequestSpec is what the token is for.
type TokenRequestSpec struct {
	Audiences         []string              `json:"audiences,omitempty"`
	ExpirationSeconds *int64                `json:"expirationSeconds,omitempty"`
	BoundObjectRef    *BoundObjectReference `json:"boundObjectRef,omitempty"`
}

// BoundObjectReference is the object a token is bound to (a Pod).
type BoundObjectReference struct {
	Kind       string `json:"kind,omitempty"`
	APIVersion string `json:"apiVersion,omitempty"`
	Name       string `json:"name,omitempty"`
	UID        string `json:"uid,omitempty"`
}

// TokenRequestStatus is the token and when it expires.
type TokenRequestStatus struct {
	Token               string    `json:"token"`
	ExpirationTimestamp meta.Time `json:"expirationTimestamp"`
}
