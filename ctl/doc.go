// Package ctl is kobectl, Kobune's kubectl: apply, create, replace, get,
// describe, delete, logs, exec, api-resources and version, with kubectl's flags, output
// formats and table columns, so that habits (and scripts) carry over.
//
// Files by role: root.go (command tree, server address, errors), apply.go
// (apply, create, replace), get.go (get and watch), printers.go (tables per
// kind), describe.go, delete.go, logs.go, exec.go (and terminal_*.go for
// exec -t), resources.go (api-resources, version).
package ctl
