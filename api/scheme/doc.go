// Package scheme is the registry of API kinds — for each kind its apiVersion,
// resource name, scope, defaulting, validation and selectable fields — and
// the manifest decoder that turns multi-document YAML or JSON into typed
// objects, reporting every field Kobune does not support by its path.
//
// It mirrors Kubernetes' runtime.Scheme and RESTMapper, kept to one plain
// table (kinds.go) that a reader can scan top to bottom.
package scheme
