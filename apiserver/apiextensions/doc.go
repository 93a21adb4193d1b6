// Package apiextensions is the API server's side of
// CustomResourceDefinitions: it turns a definition into a kind the server
// serves (kind.go: stored in the storage version, served at each served
// version), prunes, defaults and validates that kind's objects against the
// version's structural schema (schema.go), and follows the definitions in
// storage (controller.go): a new one is served once its names are
// accepted (conditions NamesAccepted and Established), a deleted one goes
// once every object of its kind is gone.
//
// It mirrors k8s.io/apiextensions-apiserver: the crdHandler that serves
// custom resources, the structural schema's pruning, defaulting and
// validation, and the naming, establishing and finalizing controllers.
package apiextensions
