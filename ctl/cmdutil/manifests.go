package cmdutil

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/kobune/kobune/api/scheme"
)

// Manifest is one decoded object with where it came from.
type Manifest struct {
	scheme.Document
	Source string // file name, or "-" for stdin
	Raw    []byte // the typed object's JSON, with the namespace filled in
	// Applied is the document's JSON as the user wrote it (with the
	// namespace filled in): what apply merges and records as last applied.
	Applied []byte
}

// ReadManifests reads -f arguments: files, directories (their .yaml, .yml
// and .json files, sorted) and "-" for stdin. Everything is decoded before
// anything is sent; a document that cannot be used comes back with its
// Err (and is not sent), the others as they are.
func ReadManifests(paths []string, stdin io.Reader) ([]Manifest, error) {
	return readManifests(nil, paths, stdin)
}

func readManifests(kinds *scheme.Kinds, paths []string, stdin io.Reader) ([]Manifest, error) {
	if len(paths) == 0 {
		return nil, fmt.Errorf("must specify -f FILE (a file, a directory, or - for stdin)")
	}
	var out []Manifest
	for _, p := range paths {
		files, err := expand(p)
		if err != nil {
			return nil, err
		}
		for _, f := range files {
			var data []byte
			if f == "-" {
				data, err = io.ReadAll(stdin)
			} else {
				data, err = os.ReadFile(f)
			}
			if err != nil {
				return nil, fmt.Errorf("read %s: %w", f, err)
			}
			docs, err := kinds.DecodeEach(data)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", f, err)
			}
			for _, d := range docs {
				out = append(out, Manifest{Document: d, Source: f})
			}
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no objects passed (the files hold no manifests)")
	}
	return out, nil
}

func expand(p string) ([]string, error) {
	if p == "-" {
		return []string{"-"}, nil
	}
	st, err := os.Stat(p)
	if err != nil {
		return nil, fmt.Errorf("the path %q does not exist", p)
	}
	if !st.IsDir() {
		return []string{p}, nil
	}
	var files []string
	err = filepath.WalkDir(p, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		ext := strings.ToLower(filepath.Ext(path))
		if !d.IsDir() && (ext == ".yaml" || ext == ".yml" || ext == ".json") {
			files = append(files, path)
		}
		return nil
	})
	sort.Strings(files)
	return files, err
}

// Ref prints kind/name the way kubectl does: deployment.apps/web.
func Ref(k *scheme.Kind, name string) string {
	singular := strings.ToLower(k.Kind)
	if g := k.Group(); g != "" {
		singular += "." + g
	}
	return singular + "/" + name
}

// QuotedRef prints `deployment.apps "web"`.
func QuotedRef(k *scheme.Kind, name string) string {
	r := Ref(k, name)
	i := strings.Index(r, "/")
	return fmt.Sprintf("%s %q", r[:i], r[i+1:])
}
