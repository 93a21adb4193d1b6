package fieldaudit

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/kobune/kobune/api/scheme"
)

// field is one field of one API struct type.
type field struct {
	typ, goName, jsonName string
	unsupported           bool
}

// apiFields walks every kind's type and returns each struct field once.
func apiFields() map[string]field {
	out := map[string]field{}
	seen := map[reflect.Type]bool{}
	var walk func(t reflect.Type)
	walk = func(t reflect.Type) {
		for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Map {
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct || seen[t] || !strings.Contains(t.PkgPath(), "kobune/api/") {
			return
		}
		if reflect.PointerTo(t).Implements(reflect.TypeFor[json.Unmarshaler]()) {
			return // a leaf with its own syntax (IntOrString, Quantity, Time)
		}
		seen[t] = true
		for i := range t.NumField() {
			f := t.Field(i)
			if !f.IsExported() {
				continue
			}
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if f.Anonymous && name == "" {
				walk(f.Type)
				continue
			}
			if name == "-" {
				continue
			}
			typ := t.PkgPath()[strings.Index(t.PkgPath(), "api/")+4:] + "." + t.Name()
			unsupported := f.Tag.Get("kobune") == "unsupported"
			out[typ+"."+name] = field{typ: typ, goName: f.Name, jsonName: name, unsupported: unsupported}
			if !unsupported { // what lies under an unsupported field is named with it
				walk(f.Type)
			}
		}
	}
	for _, k := range scheme.All() {
		walk(reflect.TypeOf(k.New()))
	}
	return out
}

// selectors returns every selector name (x.Name) used in the non-test code
// outside api/: where components read or write fields.
func selectors(t *testing.T) map[string]bool {
	root := filepath.Join("..", "..")
	out := map[string]bool{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		top := strings.SplitN(filepath.ToSlash(rel), "/", 2)[0]
		if d.IsDir() {
			if rel != "." && (strings.HasPrefix(d.Name(), ".") || top == "api" || top == "test" || top == "proto" || d.Name() == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch x := n.(type) {
			case *ast.SelectorExpr:
				out[x.Sel.Name] = true
			case *ast.KeyValueExpr: // composite literals: core.Pod{Spec: ...}
				if id, ok := x.Key.(*ast.Ident); ok {
					out[id.Name] = true
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestEveryFieldIsActedOnOrNamedUnsupported: a field the code outside api/
// never names is stored and ignored — unless it is handled generically
// (explained in actedOnGenerically) or tagged `kobune:"unsupported"`, which
// makes the decoder warn about it (an error with --strict).
func TestEveryFieldIsActedOnOrNamedUnsupported(t *testing.T) {
	used := selectors(t)
	fields := apiFields()
	var bad []string
	for key, f := range fields {
		_, generic := actedOnGenerically[key]
		for prefix := range servedForOthers {
			generic = generic || strings.HasPrefix(key, prefix)
		}
		switch {
		case f.unsupported && (used[f.goName] || generic) && !usedAnyway[key]:
			// Named unsupported but something acts on it: one of the two is wrong.
			bad = append(bad, key+": tagged unsupported, yet code outside api/ names "+f.goName)
		case f.unsupported, generic, used[f.goName]:
		default:
			bad = append(bad, key+": nothing outside api/ acts on it; implement it, tag it `kobune:\"unsupported\"`, or say in actedOnGenerically who handles it")
		}
	}
	for key := range actedOnGenerically {
		if _, ok := fields[key]; !ok {
			bad = append(bad, key+": listed in actedOnGenerically but no such field")
		}
	}
	sort.Strings(bad)
	for _, b := range bad {
		t.Error(b)
	}
	t.Logf("%d fields checked", len(fields))
}
