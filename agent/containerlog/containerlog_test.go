package containerlog

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// clock hands out times one second apart from t0.
func clock(t0 time.Time) func() time.Time {
	n := 0
	return func() time.Time { n++; return t0.Add(time.Duration(n-1) * time.Second) }
}

var t0 = time.Date(2026, 12, 3, 10, 0, 0, 123456789, time.UTC)

// logFile writes stdout (and nothing on stderr) through the writer into a
// file and returns it, read from the start.
func logFile(t *testing.T, stdout string) *os.File {
	t.Helper()
	f, err := os.Create(filepath.Join(t.TempDir(), "0.log"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	if err := Write(f, strings.NewReader(stdout), strings.NewReader(""), clock(t0)); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	return f
}

func read(t *testing.T, r io.Reader, opts Options) string {
	t.Helper()
	var out bytes.Buffer
	rd := NewReader(r, opts)
	if err := rd.Copy(&out); err != nil {
		t.Fatal(err)
	}
	if err := rd.Flush(&out); err != nil {
		t.Fatal(err)
	}
	return out.String()
}

func TestRecordsAreWrittenInTheCRIFormat(t *testing.T) {
	f := logFile(t, "one\n\ntwo")
	b, _ := io.ReadAll(f)
	want := "2026-12-03T10:00:00.123456789Z stdout F one\n" +
		"2026-12-03T10:00:01.123456789Z stdout F \n" +
		"2026-12-03T10:00:02.123456789Z stdout P two\n"
	if string(b) != want {
		t.Fatalf("file:\n%s\nwant:\n%s", b, want)
	}
}

func TestReaderShowsWhatTheProgramWrote(t *testing.T) {
	long := strings.Repeat("x", MaxLine*2+10)
	for _, tc := range []struct {
		name, in string
		opts     Options
		want     string
	}{
		{"plain", "a\nb\n", Options{}, "a\nb\n"},
		{"no newline at the end stays without one", "a\nb", Options{}, "a\nb"},
		{"empty lines", "\n\nx\n", Options{}, "\n\nx\n"},
		{"a line longer than a record is whole again", long + "\nend\n", Options{}, long + "\nend\n"},
		{"timestamps", "a\nb\n", Options{Timestamps: true},
			"2026-12-03T10:00:00.123456789Z a\n2026-12-03T10:00:01.123456789Z b\n"},
		{"a split line has one timestamp", long + "\n", Options{Timestamps: true},
			"2026-12-03T10:00:00.123456789Z " + long + "\n"},
		{"since leaves out older lines", "a\nb\nc\n", Options{Since: t0.Add(time.Second)}, "b\nc\n"},
		{"since at the exact time keeps the line", "a\nb\n", Options{Since: t0}, "a\nb\n"},
		{"since after everything", "a\nb\n", Options{Since: t0.Add(time.Hour)}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := read(t, logFile(t, tc.in), tc.opts); got != tc.want {
				t.Fatalf("got %q\nwant %q", trim(got), trim(tc.want))
			}
		})
	}
}

func trim(s string) string {
	if len(s) > 200 {
		return s[:90] + "..." + s[len(s)-90:]
	}
	return s
}

func TestStdoutAndStderrBothReachTheFile(t *testing.T) {
	var buf bytes.Buffer
	if err := Write(&buf, strings.NewReader("out1\nout2\n"), strings.NewReader("err1\n"), time.Now); err != nil {
		t.Fatal(err)
	}
	n := map[string]int{}
	for _, l := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		n[strings.Fields(l)[1]]++
	}
	if n["stdout"] != 2 || n["stderr"] != 1 {
		t.Fatalf("records per stream %v in:\n%s", n, buf.String())
	}
	got := read(t, &buf, Options{})
	for _, l := range []string{"out1\n", "out2\n", "err1\n"} {
		if !strings.Contains(got, l) {
			t.Fatalf("%q missing from %q", l, got)
		}
	}
}

func TestTailCountsLinesAsTheUserSeesThem(t *testing.T) {
	long := strings.Repeat("y", MaxLine+5) // two records, one line
	in := "1\n2\n" + long + "\n4\n5"
	for _, tc := range []struct {
		n    int64
		want string
	}{
		{1, "5"},
		{2, "4\n5"},
		{3, long + "\n4\n5"},
		{4, "2\n" + long + "\n4\n5"},
		{5, in},
		{100, in},
	} {
		f := logFile(t, in)
		off, err := TailOffset(f, tc.n)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.Seek(off, io.SeekStart); err != nil {
			t.Fatal(err)
		}
		if got := read(t, f, Options{}); got != tc.want {
			t.Errorf("tail %d: got %q, want %q", tc.n, trim(got), trim(tc.want))
		}
	}
}

// A followed file is read while the logging process writes it: a record
// cut by the end of what has been written waits for the rest.
func TestReaderKeepsARecordCutByTheEndOfTheFile(t *testing.T) {
	rec := "2026-12-03T10:00:00Z stdout F hello\n"
	pr, pw := io.Pipe()
	rd := NewReader(pr, Options{Timestamps: true})
	var out bytes.Buffer
	go func() {
		pw.Write([]byte(rec[:20]))
		pw.Write([]byte(rec[20:]))
		pw.Close()
	}()
	if err := rd.Copy(&out); err != nil {
		t.Fatal(err)
	}
	if got := out.String(); got != "2026-12-03T10:00:00Z hello\n" {
		t.Fatalf("got %q", got)
	}
}

func TestLinesWrittenBeforeRecordsAreShownAsTheyAre(t *testing.T) {
	in := "plain old line\n2026-12-03T10:00:00Z stdout F new\nnot 2026 a record\n"
	if got := read(t, strings.NewReader(in), Options{Timestamps: true}); got != "plain old line\n2026-12-03T10:00:00Z new\nnot 2026 a record\n" {
		t.Fatalf("got %q", got)
	}
}

// A file that is not a log of records, with no newline at all, is shown
// as it is and never held whole in memory.
func TestReaderBoundsWhatItHolds(t *testing.T) {
	in := strings.Repeat("z", 10*maxPending)
	var out bytes.Buffer
	rd := NewReader(strings.NewReader(in), Options{})
	if err := rd.Copy(&out); err != nil {
		t.Fatal(err)
	}
	if cap(rd.pending) > 2*maxPending+len(rd.buf) {
		t.Fatalf("the reader holds %d bytes", cap(rd.pending))
	}
	rd.Flush(&out)
	if out.String() != in {
		t.Fatalf("got %d bytes, want %d", out.Len(), len(in))
	}
}
