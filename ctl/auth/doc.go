// Package auth is kobectl auth can-i and whoami: the access and
// self-subject reviews the API server answers. It mirrors kubectl's
// pkg/cmd/auth.
package auth
