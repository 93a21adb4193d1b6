package runtime

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/pkg/cio"
)

// Exec runs cmd in a running container, as exec probes do, and returns
// its exit code. It gives up when ctx ends. The command's output is read
// and dropped: it must have a stdout and a stderr to write to (a `cat`
// whose stdout is closed fails, and the probe with it).
func (r *Containerd) Exec(ctx context.Context, podUID, container string, cmd []string) (int, error) {
	return r.ExecStream(ctx, podUID, container, cmd, ExecIO{Stdout: io.Discard, Stderr: io.Discard})
}

// ExecIO is what an exec session is wired to: nil streams are discarded;
// with TTY the command gets a terminal, whose size follows Resize.
type ExecIO struct {
	TTY            bool
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	Resize         <-chan TerminalSize
}

// TerminalSize is a terminal's size in characters.
type TerminalSize struct{ Width, Height uint32 }

// ExecStream runs cmd in a running container wired to sio and returns its
// exit code (kobectl exec, the pods/exec subresource).
func (r *Containerd) ExecStream(ctx context.Context, podUID, container string, cmd []string, sio ExecIO) (int, error) {
	tty, stdin, stdout, stderr := sio.TTY, sio.Stdin, sio.Stdout, sio.Stderr
	ctx = r.ctx(ctx)
	ctr, err := r.client.LoadContainer(ctx, containerID(podUID, container))
	if err != nil {
		return -1, fmt.Errorf("container %s: %w", container, err)
	}
	task, err := ctr.Task(ctx, nil)
	if err != nil {
		return -1, fmt.Errorf("container %s is not running: %w", container, err)
	}
	spec, err := ctr.Spec(ctx)
	if err != nil {
		return -1, err
	}
	pspec := *spec.Process
	pspec.Args, pspec.Terminal = cmd, tty
	creator := cio.NullIO
	stdinDone := make(chan struct{})
	if stdin != nil {
		stdin = &eofNotifier{r: stdin, done: stdinDone}
	}
	if stdin != nil || stdout != nil || stderr != nil {
		opts := []cio.Opt{cio.WithStreams(stdin, orDiscard(stdout), orDiscard(stderr))}
		if tty {
			opts = append(opts, cio.WithTerminal)
		}
		creator = cio.NewCreator(opts...)
	}
	execID := fmt.Sprintf("exec-%d", time.Now().UnixNano())
	proc, err := task.Exec(ctx, execID, &pspec, creator)
	if err != nil {
		return -1, fmt.Errorf("exec in %s: %w", container, err)
	}
	defer func() { _, _ = proc.Delete(context.WithoutCancel(ctx), client.WithProcessKill) }()
	exited, err := proc.Wait(context.WithoutCancel(ctx))
	if err != nil {
		return -1, err
	}
	if err := proc.Start(ctx); err != nil {
		return -1, fmt.Errorf("exec %q in %s: %w", strings.Join(cmd, " "), container, err)
	}
	finished := make(chan struct{})
	defer close(finished)
	go func() {
		// When the caller's input ends, the process must see end of file.
		select {
		case <-stdinDone:
			_ = proc.CloseIO(context.WithoutCancel(ctx), client.WithStdinCloser)
		case <-finished:
		}
	}()
	if tty && sio.Resize != nil {
		go func() { // the terminal follows the client's window
			for {
				select {
				case sz := <-sio.Resize:
					if sz.Width > 0 && sz.Height > 0 {
						_ = proc.Resize(ctx, sz.Width, sz.Height)
					}
				case <-finished:
					return
				}
			}
		}()
	}
	select {
	case st := <-exited:
		if pio := proc.IO(); pio != nil {
			pio.Wait() // the last output is copied before we report the exit
		}
		return int(st.ExitCode()), nil
	case <-ctx.Done():
		_ = proc.Kill(context.WithoutCancel(ctx), syscall.SIGKILL)
		return -1, fmt.Errorf("exec in %s: %w", container, ctx.Err())
	}
}

// eofNotifier closes done when its reader reaches the end.
type eofNotifier struct {
	r    io.Reader
	done chan struct{}
	once sync.Once
}

func (e *eofNotifier) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	if err != nil {
		e.once.Do(func() { close(e.done) })
	}
	return n, err
}

func orDiscard(w io.Writer) io.Writer {
	if w == nil {
		return io.Discard
	}
	return w
}

// KillContainer implements Runtime: SIGTERM, then SIGKILL after grace. The
// container's exit then goes through the restart policy like any other.
func (r *Containerd) KillContainer(ctx context.Context, podUID, container string, grace time.Duration) error {
	ctx = r.ctx(ctx)
	ctr, err := r.client.LoadContainer(ctx, containerID(podUID, container))
	if err != nil {
		return err
	}
	task, err := ctr.Task(ctx, nil)
	if err != nil {
		return err
	}
	exited, err := task.Wait(ctx)
	if err != nil {
		return err
	}
	_ = task.Kill(ctx, syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(grace):
		_ = task.Kill(ctx, syscall.SIGKILL)
	}
	return nil
}
