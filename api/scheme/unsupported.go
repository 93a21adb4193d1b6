package scheme

import (
	"encoding"
	"encoding/json"
	"reflect"
	"sort"
	"strings"
	"sync"
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
			if !ok || unsupportedFields(t)[key] {
				*out = append(*out, join(path, key)+": not supported by kobune")
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
