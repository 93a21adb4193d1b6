package podio

import (
	"io"
	"os"
	"os/signal"

	"golang.org/x/sys/unix"

	"github.com/kobune/kobune/client"
)

// rawTerminal puts the local terminal in raw mode for `exec -t`, so that
// keys go to the remote program as typed; the returned function restores
// it. Input that is not a terminal is left alone.
func rawTerminal(in io.Reader) func() {
	f, ok := in.(*os.File)
	if !ok {
		return func() {}
	}
	fd := int(f.Fd())
	old, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	if err != nil {
		return func() {}
	}
	raw := *old
	raw.Iflag &^= unix.IGNBRK | unix.BRKINT | unix.PARMRK | unix.ISTRIP | unix.INLCR | unix.IGNCR | unix.ICRNL | unix.IXON
	raw.Oflag &^= unix.OPOST
	raw.Lflag &^= unix.ECHO | unix.ECHONL | unix.ICANON | unix.ISIG | unix.IEXTEN
	raw.Cflag &^= unix.CSIZE | unix.PARENB
	raw.Cflag |= unix.CS8
	raw.Cc[unix.VMIN], raw.Cc[unix.VTIME] = 1, 0
	if err := unix.IoctlSetTermios(fd, unix.TCSETS, &raw); err != nil {
		return func() {}
	}
	return func() { _ = unix.IoctlSetTermios(fd, unix.TCSETS, old) }
}

// terminalSizes reports the size of the terminal out writes to, now and
// each time the window changes (SIGWINCH), until stop is called; nil when
// out is not a terminal.
func terminalSizes(out io.Writer) (<-chan client.TerminalSize, func()) {
	f, ok := out.(*os.File)
	if !ok {
		return nil, func() {}
	}
	size := func() (client.TerminalSize, bool) {
		ws, err := unix.IoctlGetWinsize(int(f.Fd()), unix.TIOCGWINSZ)
		if err != nil {
			return client.TerminalSize{}, false
		}
		return client.TerminalSize{Width: uint32(ws.Col), Height: uint32(ws.Row)}, true
	}
	first, ok := size()
	if !ok {
		return nil, func() {}
	}
	sizes := make(chan client.TerminalSize, 1)
	sizes <- first
	winch := make(chan os.Signal, 1)
	signal.Notify(winch, unix.SIGWINCH)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-winch:
				if sz, ok := size(); ok {
					select {
					case sizes <- sz:
					case <-done:
						return
					}
				}
			case <-done:
				return
			}
		}
	}()
	return sizes, func() { signal.Stop(winch); close(done) }
}
