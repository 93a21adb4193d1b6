package containerlog

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"time"
)

// Options say what a Reader shows of the records.
type Options struct {
	// Timestamps puts each line's time (RFC 3339 with nanoseconds, UTC)
	// and a space before it: kubectl logs --timestamps.
	Timestamps bool
	// Since leaves out records read before it (kubectl logs --since,
	// --since-time); zero: none left out.
	Since time.Time
}

// maxPending bounds the unfinished record a Reader keeps while it waits
// for its newline. The writer's records are at most MaxLine bytes and a
// header; a file with longer lines was not written by it, and such a line
// is shown as it is.
const maxPending = 4 * MaxLine

// Reader turns the records of a log file into the text a user reads: the
// bytes each line had, in the order they were read from the container,
// stdout and stderr together (kubectl logs shows both).
type Reader struct {
	r       io.Reader
	opts    Options
	pending []byte // bytes after the last newline read: a record still being written
	midLine bool   // the last record was partial: the next continues its line (no timestamp)
	buf     []byte
}

// NewReader reads records from r (a log file at the offset to start at).
func NewReader(r io.Reader, opts Options) *Reader {
	return &Reader{r: r, opts: opts, buf: make([]byte, 32*1024)}
}

// Copy writes the text of every whole record r has now to w, one Write
// per read. It returns at the end of what is there (nil: more may come
// later, as a followed file grows); a record not finished yet waits for
// the next Copy.
func (r *Reader) Copy(w io.Writer) error {
	var out bytes.Buffer
	for {
		n, err := r.r.Read(r.buf)
		if n > 0 {
			r.pending = append(r.pending, r.buf[:n]...)
			last := bytes.LastIndexByte(r.pending, '\n')
			if last >= 0 {
				for _, line := range bytes.Split(r.pending[:last], []byte{'\n'}) {
					r.record(line, &out)
				}
				r.pending = append(r.pending[:0], r.pending[last+1:]...)
			}
			if len(r.pending) > maxPending { // not a record of ours: the bytes as they are
				out.Write(r.pending)
				r.pending, r.midLine = r.pending[:0], true
			}
			if out.Len() > 0 {
				if _, werr := w.Write(out.Bytes()); werr != nil {
					return werr
				}
				out.Reset()
			}
		}
		if errors.Is(err, io.EOF) || n == 0 && err == nil {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// Flush writes what is left of a file that ends without a newline (one
// not written by the logging process, which ends every record).
func (r *Reader) Flush(w io.Writer) error {
	if len(r.pending) == 0 {
		return nil
	}
	var out bytes.Buffer
	r.record(r.pending, &out)
	r.pending = r.pending[:0]
	_, err := w.Write(bytes.TrimSuffix(out.Bytes(), []byte{'\n'}))
	return err
}

// record appends the text of one line of the file to out.
func (r *Reader) record(line []byte, out *bytes.Buffer) {
	rec, ok := parse(line)
	if !ok { // not a record: a line written before Kobune kept records, shown as it is
		out.Write(line)
		out.WriteByte('\n')
		r.midLine = false
		return
	}
	cont := r.midLine
	r.midLine = rec.partial
	if !r.opts.Since.IsZero() && rec.time.Before(r.opts.Since) {
		return
	}
	if r.opts.Timestamps && !cont {
		out.Write(rec.time.UTC().AppendFormat(nil, time.RFC3339Nano))
		out.WriteByte(' ')
	}
	out.Write(rec.content)
	if !rec.partial {
		out.WriteByte('\n')
	}
}

type record struct {
	time    time.Time
	partial bool
	content []byte
}

// parse reads "<time> <stdout|stderr> <F|P> <content>".
func parse(line []byte) (record, bool) {
	var rec record
	ts, rest, ok := bytes.Cut(line, []byte{' '})
	if !ok {
		return rec, false
	}
	t, err := time.Parse(time.RFC3339Nano, string(ts))
	if err != nil {
		return rec, false
	}
	stream, rest, ok := bytes.Cut(rest, []byte{' '})
	if !ok || string(stream) != "stdout" && string(stream) != "stderr" {
		return rec, false
	}
	tag, content, ok := bytes.Cut(rest, []byte{' '})
	if !ok {
		return rec, false
	}
	switch string(tag) {
	case tagFull:
	case tagPartial:
		rec.partial = true
	default:
		return rec, false
	}
	rec.time, rec.content = t, content
	return rec, true
}

// TailOffset is the offset in r (read from its start) of the n-th line
// from the end, counting lines as a user sees them (the pieces of a split
// line are one line), or 0 when r has n lines or fewer. It reads r twice
// over and keeps no more than one record in memory, whatever n is.
func TailOffset(r io.ReadSeeker, n int64) (int64, error) {
	total := int64(0)
	if err := lineStarts(r, func(int64) bool { total++; return true }); err != nil {
		return 0, err
	}
	if total <= n {
		return 0, nil
	}
	skip, off := total-n, int64(0)
	err := lineStarts(r, func(o int64) bool {
		if skip == 0 {
			off = o
			return false
		}
		skip--
		return true
	})
	return off, err
}

// lineStarts calls fn with the offset of each line's first record, from
// the start of r, until fn returns false.
func lineStarts(r io.ReadSeeker, fn func(int64) bool) error {
	if _, err := r.Seek(0, io.SeekStart); err != nil {
		return err
	}
	br := bufio.NewReaderSize(r, maxPending)
	off, atStart, cont := int64(0), true, false
	for {
		chunk, err := br.ReadSlice('\n')
		if len(chunk) > 0 {
			if atStart {
				rec, ok := parse(bytes.TrimSuffix(chunk, []byte{'\n'}))
				if !cont && !fn(off) {
					return nil
				}
				cont = ok && rec.partial
			}
			off += int64(len(chunk))
			atStart = err == nil // a line longer than the buffer goes on in the next chunk
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil && !errors.Is(err, bufio.ErrBufferFull) {
			return err
		}
	}
}
