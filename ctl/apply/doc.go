// Package apply is kobectl's writes of whole objects and of their
// fields: apply (client-side, kubectl's three-way merge with the
// last-applied annotation, or --server-side), create -f and replace -f
// (with the generators of ctl/create as create's subcommands), edit, diff,
// patch, label and annotate. It mirrors kubectl's pkg/cmd/apply, create,
// replace, edit, diff, patch, label and annotate.
package apply
