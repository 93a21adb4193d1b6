// Package selector parses and evaluates label and field selectors: the string
// form ("app=web,tier!=db", "env in (prod,staging)", "!canary") that
// `kobectl get -l` and the List and Watch calls take, and the structured
// LabelSelector (matchLabels, matchExpressions) of Deployments and Services.
//
// It mirrors Kubernetes' k8s.io/apimachinery/pkg/labels and .../fields.
package selector
