// Package apiextensions holds CustomResourceDefinition
// ("apiextensions.k8s.io/v1"): a kind added to the API at run time — its
// group, names, scope, versions with their OpenAPI v3 schemas, status and
// scale subresources and printer columns — and the checks a definition
// must pass before it is stored (names that are DNS labels, exactly one
// storage version, a structural schema).
//
// It mirrors k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1 and
// its validation. What the API server does with a definition — serving
// its objects, validating, pruning and defaulting them against the schema
// — lives in apiserver/apiextensions.
package apiextensions
