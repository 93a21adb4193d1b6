// Package admissionregistration holds the admission webhooks'
// configurations ("admissionregistration.k8s.io/v1"):
// ValidatingWebhookConfiguration and MutatingWebhookConfiguration, each a
// list of webhooks — where to call (a URL or a Service, with the CA that
// signs its certificate), for which requests (rules of operations,
// groups, versions, resources and scope; namespace and object selectors;
// CEL match conditions), what to do when the call fails, how long to
// wait — and the checks a configuration must pass before it is stored.
//
// It mirrors k8s.io/api/admissionregistration/v1 and its validation. The
// API server calls the webhooks (apiserver/webhook).
package admissionregistration
