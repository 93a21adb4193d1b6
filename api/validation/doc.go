// Package validation holds the building blocks of API validation: field paths
// ("spec.template.spec.containers[0].name"), field errors and their lists,
// and the name, label and annotation checks every kind shares (DNS-1123
// labels and subdomains, label keys and values, object metadata).
//
// It mirrors Kubernetes' k8s.io/apimachinery/pkg/util/validation and
// .../util/validation/field. Per-kind rules live with the kinds (api/core,
// api/apps, ...).
package validation
