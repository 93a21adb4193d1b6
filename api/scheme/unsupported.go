package scheme

import (
	"bytes"
	"encoding"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/kobune/kobune/api/k8sapi"
)

// UnsupportedFields walks a decoded JSON document beside the Go type of its
// kind and returns every field the type does not have, by path, so that
// nothing a user wrote is dropped silently. Kubernetes fields that Kobune
// has not implemented show up here too, which is the point: the message
// says "not supported by kobune".
func UnsupportedFields(k *Kind, doc map[string]any) []string {
	var out []string
	walk(doc, reflect.TypeOf(k.New()), "", &out)
	sort.Strings(out)
	return out
}

var (
	unmarshalerType     = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
)

func walk(val any, t reflect.Type, path string, out *[]string) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if reflect.PointerTo(t).Implements(unmarshalerType) || reflect.PointerTo(t).Implements(textUnmarshalerType) {
		return // a leaf with its own syntax (Quantity, IntOrString, Time)
	}
	switch t.Kind() {
	case reflect.Struct:
		m, ok := val.(map[string]any)
		if !ok {
			return
		}
		fields := jsonFields(t)
		for key, sub := range m {
			ft, ok := fields[key]
			if ok && unsupportedFields(t)[key] && asksNothing(sub, ft) {
				continue // globalDefault: false asks for what Kobune does
			}
			if !ok || unsupportedFields(t)[key] {
				*out = append(*out, join(path, key)+unsupportedSuffix)
				continue
			}
			walk(sub, ft, join(path, key), out)
		}
	case reflect.Slice:
		list, ok := val.([]any)
		if !ok {
			return
		}
		for i, item := range list {
			walk(item, t.Elem(), path+"["+itoa(i)+"]", out)
		}
	case reflect.Map:
		m, ok := val.(map[string]any)
		if !ok {
			return
		}
		for key, sub := range m {
			walk(sub, t.Elem(), path+"["+key+"]", out)
		}
	}
}

// asksNothing says whether a kept-but-unsupported field's value is its
// Go zero value on a field without a pointer (false, 0, "", null): the
// same as leaving it out, which is what Kobune does anyway. A pointer
// field's zero is a choice (Kubernetes gives those other defaults), and
// is named.
func asksNothing(val any, t reflect.Type) bool {
	if val == nil {
		return true
	}
	switch t.Kind() {
	case reflect.Bool:
		return val == false
	case reflect.String:
		return val == ""
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
		return val == float64(0) || val == json.Number("0")
	}
	return false
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func itoa(i int) string {
	b, _ := json.Marshal(i)
	return string(b)
}

var fieldCache sync.Map // reflect.Type → map[string]reflect.Type

var unsupportedCache sync.Map // reflect.Type → map[string]bool

// unsupportedFields names a struct's fields tagged `kobune:"unsupported"`:
// Kubernetes fields Kobune keeps (so they round-trip) but does not act on.
func unsupportedFields(t reflect.Type) map[string]bool {
	if f, ok := unsupportedCache.Load(t); ok {
		return f.(map[string]bool)
	}
	out := map[string]bool{}
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Tag.Get("kobune") == "unsupported" {
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			out[name] = true
		}
	}
	unsupportedCache.Store(t, out)
	return out
}

var unsupportedKeysCache sync.Map // reflect.Type → [][]byte

// mentionsUnsupported reports whether data may set a field tagged
// unsupported anywhere in t: whether it holds the quoted JSON name of one
// (a cheap look, for the decoder's fast path; a name that is only a value
// costs a walk of the document, which then finds nothing).
func mentionsUnsupported(t reflect.Type, data []byte) bool {
	keys, ok := unsupportedKeysCache.Load(t)
	if !ok {
		var found [][]byte
		seen := map[reflect.Type]bool{}
		var visit func(t reflect.Type)
		visit = func(t reflect.Type) {
			for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Array || t.Kind() == reflect.Map {
				t = t.Elem()
			}
			if t.Kind() != reflect.Struct || seen[t] {
				return
			}
			seen[t] = true
			for name := range unsupportedFields(t) {
				found = append(found, []byte(strconv.Quote(name)))
			}
			for _, ft := range jsonFields(t) {
				visit(ft)
			}
		}
		visit(t)
		keys, _ = unsupportedKeysCache.LoadOrStore(t, found)
	}
	for _, key := range keys.([][]byte) {
		if bytes.Contains(data, key) {
			return true
		}
	}
	return false
}

// jsonFields maps the JSON names of a struct's fields, including those of
// inlined embedded structs, to their types.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	if f, ok := fieldCache.Load(t); ok {
		return f.(map[string]reflect.Type)
	}
	fields := map[string]reflect.Type{}
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		name, _, _ := strings.Cut(tag, ",")
		if tag == "-" || (!f.IsExported() && !f.Anonymous) {
			continue
		}
		if f.Anonymous && name == "" {
			for k, v := range jsonFields(f.Type) {
				fields[k] = v
			}
			continue
		}
		if name == "" {
			name = f.Name
		}
		fields[name] = f.Type
	}
	fieldCache.Store(t, fields)
	return fields
}

// CheckFields sorts the fields of a document that its kind's Go type does
// not have into typos — fields Kubernetes' own type (api/k8sapi) does not
// have either, as `unknown field "spec.foo"` — and Kubernetes fields that
// Kobune does not support, as "spec.x: not supported by kobune". A kind
// Kubernetes does not have reports every such field as unsupported.
func CheckFields(k *Kind, doc map[string]any) (unknown, unsupported []string) {
	if k.Custom != nil {
		b, _ := json.Marshal(doc)
		_, pruned, _ := k.Custom.Decode(b)
		for _, p := range pruned {
			unknown = append(unknown, fmt.Sprintf("unknown field %q", p))
		}
		return unknown, nil
	}
	all := UnsupportedFields(k, doc)
	t, ok := k8sapi.ForKind(k.APIVersion, k.Kind)
	if !ok {
		return nil, all
	}
	typos := k8sapi.UnknownFields(t, doc)
	typoSet := make(map[string]bool, len(typos))
	for _, p := range typos {
		typoSet[p] = true
	}
	for _, u := range all {
		path := strings.TrimSuffix(u, unsupportedSuffix)
		if !under(path, typoSet) {
			unsupported = append(unsupported, u)
		}
	}
	for _, p := range typos {
		unknown = append(unknown, fmt.Sprintf("unknown field %q", p))
	}
	return unknown, unsupported
}

const unsupportedSuffix = ": not supported by kobune"

// under: path is one of paths or inside one of them. It looks up path
// and each of its ancestors (cut at a "." or a "["), so that a document
// of 40,000 unknown fields is checked in a moment, not 30 s (every path
// against every other).
func under(path string, paths map[string]bool) bool {
	if paths[path] {
		return true
	}
	for i := len(path) - 1; i > 0; i-- {
		if (path[i] == '.' || path[i] == '[') && paths[path[:i]] {
			return true
		}
	}
	return false
}
