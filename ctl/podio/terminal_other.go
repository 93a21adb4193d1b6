//go:build !linux

package podio

import (
	"io"

	"github.com/kobune/kobune/client"
)

// rawTerminal is a no-op where Kobune does not manage the terminal.
func rawTerminal(io.Reader) func() { return func() {} }

// terminalSizes reports nothing where Kobune does not manage the terminal.
func terminalSizes(io.Writer) (<-chan client.TerminalSize, func()) { return nil, func() {} }
