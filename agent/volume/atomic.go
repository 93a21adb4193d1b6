package volume

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// File is one file of a projected directory: a relative path, its bytes
// and its mode.
type File struct {
	Data []byte
	Mode os.FileMode
}

// dataDir is the link that names the current payload.
const dataDir = "..data"

// WriteAtomic makes dir hold exactly files (path → File), so that a
// reader never sees a mix of old and new contents — the kubelet's atomic
// writer:
//
//	dir/..2026_12_01_19_30_00.123456789/  the payload, written whole first
//	dir/..data -> ..2026_12_01_19_30_00.123456789
//	dir/key    -> ..data/key              one link per top-level name
//
// A new payload goes into a new timestamped directory; then a link
// ..data_tmp to it is renamed over ..data (rename is atomic), the
// top-level links are made or removed, and the old payload is deleted.
// Every path a reader opens goes through ..data, so it resolves wholly in
// the old payload or wholly in the new. Nothing is written when the
// payload is what dir holds already; it reports whether it wrote.
func WriteAtomic(dir string, files map[string]File) (bool, error) {
	for p := range files {
		if p == "" || filepath.IsAbs(p) || strings.HasPrefix(p, "..") || strings.Contains(p, "/../") || filepath.Clean(p) != p {
			return false, fmt.Errorf("file path %q must be relative, clean and not start with '..'", p)
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return false, err
	}
	old, _ := os.Readlink(filepath.Join(dir, dataDir))
	if old != "" && same(filepath.Join(dir, old), files) {
		return false, nil
	}
	ts := ".." + time.Now().UTC().Format("2006_01_02_15_04_05.000000000")
	payload := filepath.Join(dir, ts)
	if err := os.Mkdir(payload, 0o755); err != nil {
		return false, err
	}
	for p, f := range files {
		full := filepath.Join(payload, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return false, err
		}
		if err := os.WriteFile(full, f.Data, f.Mode); err != nil {
			return false, err
		}
		if err := os.Chmod(full, f.Mode); err != nil { // WriteFile's mode passes through the umask
			return false, err
		}
	}
	tmp := filepath.Join(dir, dataDir+"_tmp")
	_ = os.Remove(tmp)
	if err := os.Symlink(ts, tmp); err != nil {
		return false, err
	}
	if err := os.Rename(tmp, filepath.Join(dir, dataDir)); err != nil {
		return false, err
	}
	// The user-visible names: a link through ..data for each top-level
	// name of the payload; names no longer there go.
	top := map[string]bool{}
	for p := range files {
		top[strings.SplitN(p, "/", 2)[0]] = true
	}
	for name := range top {
		link := filepath.Join(dir, name)
		if target, err := os.Readlink(link); err == nil && target == filepath.Join(dataDir, name) {
			continue
		}
		_ = os.Remove(link)
		if err := os.Symlink(filepath.Join(dataDir, name), link); err != nil {
			return false, err
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return false, err
	}
	for _, e := range entries {
		name := e.Name()
		switch {
		case name == dataDir || name == ts:
		case strings.HasPrefix(name, ".."):
			if err := os.RemoveAll(filepath.Join(dir, name)); err != nil { // an old payload
				return false, err
			}
		case !top[name]:
			if err := os.Remove(filepath.Join(dir, name)); err != nil {
				return false, err
			}
		}
	}
	return true, nil
}

// same: the payload directory holds exactly files.
func same(payload string, files map[string]File) bool {
	seen := 0
	err := filepath.WalkDir(payload, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		rel, _ := filepath.Rel(payload, path)
		f, ok := files[rel]
		if !ok {
			return errors.New("extra")
		}
		info, err := d.Info()
		if err != nil || info.Mode().Perm() != f.Mode.Perm() {
			return errors.New("mode")
		}
		b, err := os.ReadFile(path)
		if err != nil || !bytes.Equal(b, f.Data) {
			return errors.New("data")
		}
		seen++
		return nil
	})
	return err == nil && seen == len(files)
}

// Names are the top-level names a projected directory shows, sorted.
func Names(dir string) []string {
	entries, _ := os.ReadDir(dir)
	var out []string
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), "..") {
			out = append(out, e.Name())
		}
	}
	sort.Strings(out)
	return out
}
