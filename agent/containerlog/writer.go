// Package containerlog owns the files that hold what containers write:
// the CRI log format (one record per line: the time it was read, the
// stream, a tag saying whether the line is complete, the bytes), the
// logging process that writes it, and the reader that turns it back into
// what `kubectl logs` shows, with or without timestamps, from a time on,
// the last N lines, following the file as it grows.
//
// It mirrors two pieces of Kubernetes: the log writer in containerd's CRI
// plugin (which writes /var/log/pods/.../N.log in this format) and the
// kubelet's log reader (pkg/kubelet/kuberuntime/logs). Kobune's agent
// uses containerd's own client API rather than CRI, so the writer runs
// as containerd's "logging binary": containerd's shim starts it for each
// container task with the task's stdout and stderr as pipes, and it
// outlives the agent — a container keeps logging, with times, while the
// agent is stopped or restarting (Kobune's agent may be killed at any
// moment). The binary is kobune-agent itself, started by the shim as
// `kobune-agent container-log <file>`.
package containerlog

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/containerd/containerd/v2/core/runtime/v2/logging"
)

// Mode is the first argument with which containerd's shim starts the
// agent binary as a container's logging process: the shim passes the
// query of the log URI as arguments, and the log URI
// (binary://<agent>?container-log=<file>) has this one key.
const Mode = "container-log"

// MaxLine is the longest record: a longer line is split into partial
// records (tag P), as containerd's CRI plugin splits at 16 KiB.
const MaxLine = 16 * 1024

// Tags of a record: the line ends here (F) or continues in the next
// record (P).
const (
	tagFull    = "F"
	tagPartial = "P"
)

// RunLogger is the logging process's main: it takes stdout and stderr
// from the file descriptors the shim passes (3 and 4), tells the shim it
// is ready (so no output is written before it reads), and appends records
// to path until both streams end. It never returns.
func RunLogger(path string) {
	logging.Run(func(ctx context.Context, cfg *logging.Config, ready func() error) error {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o640)
		if err != nil {
			_ = ready() // the container still runs; its output is lost (and the shim's log says why)
			return fmt.Errorf("container log %s: %w", path, err)
		}
		defer f.Close()
		if err := ready(); err != nil {
			return err
		}
		return Write(f, cfg.Stdout, cfg.Stderr, time.Now)
	})
}

// Write copies stdout and stderr into w as records stamped by now, until
// both end. Each record is one Write, so a reader of the file sees whole
// records (or a record not yet finished, which it keeps until its newline
// comes).
func Write(w io.Writer, stdout, stderr io.Reader, now func() time.Time) error {
	var (
		mu   sync.Mutex
		wg   sync.WaitGroup
		errs = make([]error, 2)
	)
	emit := func(stream string, b []byte, tag string) error {
		mu.Lock()
		defer mu.Unlock()
		rec := make([]byte, 0, len(b)+64)
		rec = now().UTC().AppendFormat(rec, time.RFC3339Nano)
		rec = append(rec, ' ')
		rec = append(rec, stream...)
		rec = append(rec, ' ')
		rec = append(rec, tag...)
		rec = append(rec, ' ')
		rec = append(rec, b...)
		rec = append(rec, '\n')
		_, err := w.Write(rec)
		return err
	}
	for i, s := range []struct {
		name string
		r    io.Reader
	}{{"stdout", stdout}, {"stderr", stderr}} {
		if s.r == nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = copyLines(s.r, func(b []byte, tag string) error { return emit(s.name, b, tag) })
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// copyLines passes what r gives as records: each line that ends in what
// was read is passed without its newline and tagged F; the bytes after the
// last newline are passed at once, tagged P (the line goes on in the next
// record), not held until their newline or the stream's end comes. A
// container that writes "DONE" without a newline and exits has it in its
// log (and in a FallbackToLogsOnError termination message) then, not once
// its task is deleted and the stream closes. A read is at most MaxLine
// bytes, so no record holds more.
func copyLines(r io.Reader, emit func([]byte, string) error) error {
	buf := make([]byte, MaxLine)
	for {
		n, err := r.Read(buf)
		chunk := buf[:n]
		for len(chunk) > 0 {
			i := bytes.IndexByte(chunk, '\n')
			if i < 0 {
				if werr := emit(chunk, tagPartial); werr != nil {
					return werr
				}
				break
			}
			if werr := emit(chunk[:i], tagFull); werr != nil {
				return werr
			}
			chunk = chunk[i+1:]
		}
		if errors.Is(err, io.EOF) || errors.Is(err, os.ErrClosed) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}
