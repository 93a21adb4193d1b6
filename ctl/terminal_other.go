//go:build !linux

package ctl

import "io"

// rawTerminal is a no-op where Kobune does not manage the terminal.
func rawTerminal(io.Reader) func() { return func() {} }
