package registry

// Review is a create-only resource answered by the authorizer or the
// authenticator and never stored.
type Review struct {
	Kind, Group string
	Namespaced  bool
}

// Reviews are the review resources, by resource name.
var Reviews = map[string]Review{
	"selfsubjectaccessreviews":  {"SelfSubjectAccessReview", "authorization.k8s.io", false},
	"selfsubjectrulesreviews":   {"SelfSubjectRulesReview", "authorization.k8s.io", false},
	"subjectaccessreviews":      {"SubjectAccessReview", "authorization.k8s.io", false},
	"localsubjectaccessreviews": {"LocalSubjectAccessReview", "authorization.k8s.io", true},
	"selfsubjectreviews":        {"SelfSubjectReview", "authentication.k8s.io", false},
	"tokenreviews":              {"TokenReview", "authentication.k8s.io", false},
}
