package volume

import (
	"bytes"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
)

// A reader that keeps reading a projected file while the payload changes
// underneath sees either the old contents or the new, whole — never a
// part of a file, never a mix of two.
func TestAtomicWriterReaderNeverSeesAHalfWrittenFile(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "cfg")
	payload := func(b byte) map[string]File {
		data := bytes.Repeat([]byte{b}, 256<<10)
		return map[string]File{"config.yaml": {Data: data, Mode: 0o644}, "nested/extra": {Data: data[:10], Mode: 0o600}}
	}
	if _, err := WriteAtomic(dir, payload('1')); err != nil {
		t.Fatal(err)
	}
	var stop atomic.Bool
	var reads, partial atomic.Int64
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				b, err := os.ReadFile(filepath.Join(dir, "config.yaml"))
				if err != nil {
					continue // the old payload removed between two steps of the path walk
				}
				reads.Add(1)
				if len(b) != 256<<10 || bytes.Count(b, b[:1]) != len(b) {
					partial.Add(1)
				}
			}
		}()
	}
	for i := range 200 {
		if _, err := WriteAtomic(dir, payload(byte('1'+i%2))); err != nil {
			t.Fatal(err)
		}
	}
	stop.Store(true)
	wg.Wait()
	if partial.Load() > 0 {
		t.Errorf("%d of %d reads saw a partial or mixed file", partial.Load(), reads.Load())
	}
	if reads.Load() == 0 {
		t.Fatal("the readers read nothing")
	}
	t.Logf("%d reads during 200 payload swaps", reads.Load())
}

// The layout is the kubelet's: ..data names the payload, each top-level
// name links through it, modes are as asked, a name dropped from the
// payload goes, old payloads go, and an unchanged payload writes nothing.
func TestAtomicWriterLayout(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "cfg")
	wrote, err := WriteAtomic(dir, map[string]File{"a": {Data: []byte("1"), Mode: 0o644}, "b/c": {Data: []byte("2"), Mode: 0o400}})
	if err != nil || !wrote {
		t.Fatal(wrote, err)
	}
	if l, _ := os.Readlink(filepath.Join(dir, "a")); l != "..data/a" {
		t.Errorf("a links to %q", l)
	}
	if info, err := os.Stat(filepath.Join(dir, "b", "c")); err != nil || info.Mode().Perm() != 0o400 {
		t.Errorf("b/c: %v %v", info, err)
	}
	if wrote, err = WriteAtomic(dir, map[string]File{"a": {Data: []byte("1"), Mode: 0o644}, "b/c": {Data: []byte("2"), Mode: 0o400}}); err != nil || wrote {
		t.Errorf("the same payload again: wrote %v, %v", wrote, err)
	}
	if _, err = WriteAtomic(dir, map[string]File{"a": {Data: []byte("new"), Mode: 0o644}}); err != nil {
		t.Fatal(err)
	}
	if got := Names(dir); len(got) != 1 || got[0] != "a" {
		t.Errorf("names after b was dropped: %v", got)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "a")); string(b) != "new" {
		t.Errorf("a = %q", b)
	}
	entries, _ := os.ReadDir(dir)
	payloads := 0
	for _, e := range entries {
		if e.IsDir() && e.Name() != "..data" && e.Name()[:2] == ".." {
			payloads++
		}
	}
	if payloads != 1 {
		t.Errorf("%d payload directories left, want 1", payloads)
	}
	for _, bad := range []string{"/etc/passwd", "../x", "a/../../x", "..data"} {
		if _, err := WriteAtomic(dir, map[string]File{bad: {Data: nil, Mode: 0o644}}); err == nil {
			t.Errorf("path %q accepted", bad)
		}
	}
}
