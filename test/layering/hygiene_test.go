package layering

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// TestNoCompiledBinaryIsTracked: no file git tracks is a compiled program
// or object (ELF); binaries were committed twice by accident, and the
// repository is something a course reads. make build writes to bin/,
// make dist to dist/, both ignored.
func TestNoCompiledBinaryIsTracked(t *testing.T) {
	root := filepath.Join("..", "..")
	out, err := exec.Command("git", "-C", root, "ls-files", "-z").Output()
	if err != nil {
		t.Skipf("not a git checkout (git ls-files: %v): nothing to check", err)
	}
	for _, f := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
		fh, err := os.Open(filepath.Join(root, f))
		if err != nil {
			continue // deleted in the work tree
		}
		head := make([]byte, 4)
		n, _ := fh.Read(head)
		fh.Close()
		if n == 4 && bytes.Equal(head, []byte("\x7fELF")) {
			t.Errorf("%s is a compiled binary (ELF) tracked by git: git rm --cached it (make build writes bin/, make dist dist/)", f)
		}
	}
}

// TestReadingOrderFilesExist: every file and directory docs/reading-order.md
// names (in backquotes, with a slash) exists, so the course's reading
// path does not send a student to code that moved.
func TestReadingOrderFilesExist(t *testing.T) {
	root := filepath.Join("..", "..")
	doc, err := os.ReadFile(filepath.Join(root, "docs", "reading-order.md"))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, m := range regexp.MustCompile("`([a-z][a-z0-9_./-]*/[a-z0-9_./-]*)`").FindAllStringSubmatch(string(doc), -1) {
		p := m[1]
		if strings.ContainsAny(p, "*") {
			continue
		}
		n++
		if _, err := os.Stat(filepath.Join(root, p)); err != nil {
			t.Errorf("docs/reading-order.md names %s, which does not exist", p)
		}
	}
	if n < 30 {
		t.Errorf("docs/reading-order.md names only %d paths: is its format still `path`?", n)
	}
}

// subjectRuleSince is when TestCommitSubjectsFitOneLine began to hold
// (author dates, which a rebase keeps): older commits, some with subjects
// of a paragraph, are history and stay as they are.
var subjectRuleSince = time.Date(2026, 12, 6, 17, 10, 0, 0, time.UTC)

// maxSubject is one line of `git log --oneline` on a terminal (the hash
// included): the subject a reader of the history sees whole.
const maxSubject = 100

// TestCommitSubjectsFitOneLine: every commit since subjectRuleSince has a
// subject of at most maxSubject characters, followed by a blank line if
// the message goes on (a subject is one line; the why goes in the body).
func TestCommitSubjectsFitOneLine(t *testing.T) {
	root := filepath.Join("..", "..")
	out, err := exec.Command("git", "-C", root, "log", "--since="+subjectRuleSince.Format(time.RFC3339), "--format=%h %at%x00%B%x01").Output()
	if err != nil {
		t.Skipf("not a git checkout (git log: %v): nothing to check", err)
	}
	for _, entry := range strings.Split(string(out), "\x01") {
		head, body, ok := strings.Cut(strings.TrimLeft(entry, "\n"), "\x00")
		if !ok {
			continue
		}
		hash, at, _ := strings.Cut(head, " ")
		if sec, err := strconv.ParseInt(at, 10, 64); err != nil || time.Unix(sec, 0).Before(subjectRuleSince) {
			continue // committed since, written before: the author date decides
		}
		lines := strings.Split(strings.TrimRight(body, "\n"), "\n")
		if n := utf8.RuneCountInString(lines[0]); n > maxSubject {
			t.Errorf("commit %s: subject of %d characters, more than %d (one line of git log --oneline): say the rest in the body after a blank line: %q", hash, n, maxSubject, lines[0])
		}
		if len(lines) > 1 && strings.TrimSpace(lines[1]) != "" {
			t.Errorf("commit %s: the subject runs onto a second line; put a blank line after the subject: %q", hash, lines[0])
		}
	}
}
