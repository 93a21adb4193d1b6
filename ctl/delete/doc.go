// Package delete is kobectl delete: by name, by label, or the objects
// of -f, with a grace period, a propagation policy and --wait (until they
// are gone). It mirrors kubectl's pkg/cmd/delete.
package delete
