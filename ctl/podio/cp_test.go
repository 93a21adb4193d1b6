package podio

import (
	"archive/tar"
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestExtractTarStaysInsideTheDestination: what a container sends back
// for kobectl cp lands under the destination; an entry with .. is refused.
func TestExtractTarStaysInsideTheDestination(t *testing.T) {
	archive := func(names ...string) *bytes.Buffer {
		var b bytes.Buffer
		tw := tar.NewWriter(&b)
		for _, n := range names {
			tw.WriteHeader(&tar.Header{Name: n, Mode: 0o644, Size: 2, Typeflag: tar.TypeReg})
			tw.Write([]byte("x\n"))
		}
		tw.Close()
		return &b
	}
	dir := t.TempDir()
	dest := filepath.Join(dir, "out")
	if err := extractTar(archive("logs/a.log", "logs/sub/b.log", "other/c"), "logs", dest); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"a.log", "sub/b.log"} {
		if b, err := os.ReadFile(filepath.Join(dest, f)); err != nil || string(b) != "x\n" {
			t.Errorf("%s: %v %q", f, err, b)
		}
	}
	if _, err := os.Stat(filepath.Join(dest, "c")); err == nil {
		t.Error("an entry outside the copied path was extracted")
	}
	err := extractTar(archive("logs/../../escaped"), "logs", filepath.Join(dir, "out2"))
	if err == nil || !strings.Contains(err.Error(), "outside") {
		t.Errorf("a .. entry: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "escaped")); err == nil {
		t.Error("the .. entry was written")
	}
}
