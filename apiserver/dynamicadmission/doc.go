// Package dynamicadmission is the API server's admission webhooks: the
// mutating and validating steps of the admission chain that call out,
// over TLS, to the webhooks that ValidatingWebhookConfigurations and
// MutatingWebhookConfigurations name (config.go follows them), with an
// AdmissionReview v1 for each request its rules, selectors and CEL match
// conditions select (match.go), and act on the answer: a refusal, a JSON
// patch to the object, warnings (call.go, dispatch.go; the HTTPS call
// itself is apiserver/webhook's). A webhook that cannot be reached or
// answers late fails the request or is skipped, as its failurePolicy
// says. ValidatingAdmissionPolicies (policy.go) and
// MutatingAdmissionPolicies (mutatingpolicy.go, mutationcel.go) are the
// same steps written in CEL instead of served by a webhook.
//
// It mirrors k8s.io/apiserver/pkg/admission/plugin/webhook (the generic
// dispatcher, the mutating and validating plugins, the request and
// response conversion).
package dynamicadmission
