// Package config is kobectl config: the kubeconfig's contexts, users and
// clusters (view, use-context, set-context, current-context ...). It
// mirrors kubectl's pkg/cmd/config.
package config
