package layering

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
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
