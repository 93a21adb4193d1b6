// Package fieldmanager is server-side apply's bookkeeping (Kubernetes'
// structured-merge-diff, at teaching scale): which manager owns which
// fields of an object (metadata.managedFields, in the FieldsV1 form),
// how an applied configuration merges into the live object, when it
// conflicts with another manager's fields, and which fields a manager
// gives up by no longer applying them. Lists merge by the merge keys of
// api/k8sapi; lists without keys are atomic (owned whole).
package fieldmanager

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/kobune/kobune/api/k8sapi"
)

// Set is a set of field paths as a tree, encoded as FieldsV1:
// {"f:spec":{"f:replicas":{}},"f:containers":{"k:{\"name\":\"app\"}":{".":{},"f:image":{}}}}.
type Set map[string]Set

// MarshalJSON keeps an empty set as {} (a leaf), never null.
func (s Set) MarshalJSON() ([]byte, error) {
	if s == nil {
		return []byte("{}"), nil
	}
	return json.Marshal(map[string]Set(s))
}

// element names a list element in a path: "k:{...}" by merge key, "v:..."
// for a set of primitives.
func keyElement(key string, item map[string]any) string {
	b, _ := json.Marshal(map[string]any{key: item[key]})
	return "k:" + string(b)
}

func valueElement(v any) string {
	b, _ := json.Marshal(v)
	return "v:" + string(b)
}

// FieldsOf is the set of fields an object (or an applied configuration)
// sets; t is its Kubernetes type (nil: every field is a leaf).
func FieldsOf(obj map[string]any, t *k8sapi.Type) Set {
	s := Set{}
	for k, v := range obj {
		if k == "apiVersion" || k == "kind" {
			continue
		}
		if t == nil && k == "metadata" {
			continue
		}
		var f *k8sapi.Field
		if t != nil {
			f, _ = t.Field(k)
		}
		if t != nil && k == "metadata" {
			// Of the metadata only what a user configures is owned.
			m, _ := v.(map[string]any)
			ms := Set{}
			for _, mk := range []string{"labels", "annotations"} {
				if mv, ok := m[mk].(map[string]any); ok {
					sub := Set{}
					for lk := range mv {
						sub["f:"+lk] = Set{}
					}
					ms["f:"+mk] = sub
				}
			}
			for _, mk := range []string{"finalizers", "ownerReferences"} {
				if mv, ok := m[mk]; ok {
					ms["f:"+mk] = valueFields(mv, f2(t, "metadata", mk))
				}
			}
			if len(ms) > 0 {
				s["f:metadata"] = ms
			}
			continue
		}
		s["f:"+k] = valueFields(v, f)
	}
	return s
}

// f2 finds a field of a field's type.
func f2(t *k8sapi.Type, outer, inner string) *k8sapi.Field {
	of, ok := t.Field(outer)
	if !ok {
		return nil
	}
	ot, ok := k8sapi.Named(of.Type)
	if !ok {
		return nil
	}
	f, _ := ot.Field(inner)
	return f
}

func valueFields(v any, f *k8sapi.Field) Set {
	switch x := v.(type) {
	case map[string]any:
		if f == nil {
			return Set{}
		}
		switch f.Kind {
		case "object":
			if len(x) == 0 {
				return Set{}
			}
			t, _ := k8sapi.Named(f.Type)
			return FieldsOf(x, t)
		case "map":
			s := Set{}
			for k, mv := range x {
				if f.Elem == "object" {
					t, _ := k8sapi.Named(f.Type)
					if m, ok := mv.(map[string]any); ok && len(m) > 0 {
						s["f:"+k] = FieldsOf(m, t)
						continue
					}
				}
				s["f:"+k] = Set{}
			}
			return s
		}
		return Set{}
	case []any:
		if f == nil || !strings.Contains(f.PatchStrategy, "merge") {
			return Set{} // atomic: owned whole
		}
		s := Set{}
		if f.Elem == "object" && f.PatchMergeKey != "" {
			t, _ := k8sapi.Named(f.Type)
			for _, it := range x {
				m, ok := it.(map[string]any)
				if !ok {
					continue
				}
				sub := FieldsOf(m, t)
				sub["."] = Set{}
				s[keyElement(f.PatchMergeKey, m)] = sub
			}
			return s
		}
		for _, it := range x {
			s[valueElement(it)] = Set{}
		}
		return s
	}
	return Set{}
}

// Union adds o's paths to s.
func (s Set) Union(o Set) {
	for k, v := range o {
		if cur, ok := s[k]; ok && len(v) > 0 {
			if cur == nil {
				cur = Set{}
				s[k] = cur
			}
			cur.Union(v)
			continue
		}
		if _, ok := s[k]; !ok {
			c := Set{}
			c.Union(v)
			s[k] = c
		}
	}
}

// Leaves lists the set's leaf paths (as path element lists).
func (s Set) Leaves() [][]string {
	var out [][]string
	var walk func(Set, []string)
	walk = func(n Set, p []string) {
		for k, v := range n {
			q := append(append([]string{}, p...), k)
			if len(v) == 0 {
				out = append(out, q)
				continue
			}
			walk(v, q)
		}
	}
	walk(s, nil)
	sort.Slice(out, func(i, j int) bool { return strings.Join(out[i], "/") < strings.Join(out[j], "/") })
	return out
}

// Has reports whether the set holds the path (as a leaf or above one).
func (s Set) Has(p []string) bool {
	n := s
	for _, e := range p {
		c, ok := n[e]
		if !ok {
			return false
		}
		n = c
	}
	return true
}

// Remove takes a path (and everything under it) out of the set, and the
// branches it leaves empty.
func (s Set) Remove(p []string) {
	if len(p) == 0 {
		return
	}
	c, ok := s[p[0]]
	if !ok {
		return
	}
	if len(p) == 1 {
		delete(s, p[0])
		return
	}
	c.Remove(p[1:])
	if len(c) == 0 {
		delete(s, p[0])
	}
}

// PathString prints a path as Kubernetes prints conflicts:
// .spec.template.spec.containers[name="app"].image.
func PathString(p []string) string {
	var b strings.Builder
	for _, e := range p {
		switch {
		case e == ".":
		case strings.HasPrefix(e, "f:"):
			b.WriteString("." + e[2:])
		case strings.HasPrefix(e, "k:"):
			var m map[string]any
			_ = json.Unmarshal([]byte(e[2:]), &m)
			var parts []string
			for k, v := range m {
				vb, _ := json.Marshal(v)
				parts = append(parts, fmt.Sprintf("%s=%s", k, vb))
			}
			sort.Strings(parts)
			b.WriteString("[" + strings.Join(parts, ",") + "]")
		case strings.HasPrefix(e, "v:"):
			b.WriteString("[" + e[2:] + "]")
		default:
			b.WriteString("." + e)
		}
	}
	return b.String()
}

// Lookup finds the value at a path in an object; false when it is absent.
func Lookup(obj any, p []string) (any, bool) {
	cur := obj
	for _, e := range p {
		switch {
		case e == ".":
			continue
		case strings.HasPrefix(e, "f:"):
			m, ok := cur.(map[string]any)
			if !ok {
				return nil, false
			}
			if cur, ok = m[e[2:]]; !ok {
				return nil, false
			}
		case strings.HasPrefix(e, "k:"):
			l, ok := cur.([]any)
			if !ok {
				return nil, false
			}
			var key map[string]any
			_ = json.Unmarshal([]byte(e[2:]), &key)
			found := false
			for _, it := range l {
				if m, ok := it.(map[string]any); ok && matchesKey(m, key) {
					cur, found = m, true
					break
				}
			}
			if !found {
				return nil, false
			}
		case strings.HasPrefix(e, "v:"):
			l, ok := cur.([]any)
			if !ok {
				return nil, false
			}
			found := false
			for _, it := range l {
				if valueElement(it) == e {
					cur, found = it, true
					break
				}
			}
			if !found {
				return nil, false
			}
		default:
			return nil, false
		}
	}
	return cur, true
}

func matchesKey(m, key map[string]any) bool {
	for k, v := range key {
		a, _ := json.Marshal(m[k])
		b, _ := json.Marshal(v)
		if string(a) != string(b) {
			return false
		}
	}
	return true
}

// Delete removes the value at a path from an object (a field, a map key,
// a list element).
func Delete(obj any, p []string) {
	if len(p) == 0 {
		return
	}
	if p[len(p)-1] == "." {
		p = p[:len(p)-1]
		if len(p) == 0 {
			return
		}
	}
	parent, ok := Lookup(obj, p[:len(p)-1])
	if !ok {
		return
	}
	last := p[len(p)-1]
	switch {
	case strings.HasPrefix(last, "f:"):
		if m, ok := parent.(map[string]any); ok {
			delete(m, last[2:])
		}
	case strings.HasPrefix(last, "k:"), strings.HasPrefix(last, "v:"):
		l, ok := parent.([]any)
		if !ok {
			return
		}
		var key map[string]any
		if strings.HasPrefix(last, "k:") {
			_ = json.Unmarshal([]byte(last[2:]), &key)
		}
		out := l[:0:0]
		for _, it := range l {
			m, isMap := it.(map[string]any)
			if key != nil && isMap && matchesKey(m, key) || key == nil && valueElement(it) == last {
				continue
			}
			out = append(out, it)
		}
		setChild(obj, p[:len(p)-1], out)
	}
}

// setChild replaces the value at a path (a list the deletion shortened).
func setChild(obj any, p []string, v any) {
	parent, ok := Lookup(obj, p[:len(p)-1])
	if !ok {
		return
	}
	last := p[len(p)-1]
	if m, ok := parent.(map[string]any); ok && strings.HasPrefix(last, "f:") {
		m[last[2:]] = v
		return
	}
	if l, ok := parent.([]any); ok && strings.HasPrefix(last, "k:") {
		var key map[string]any
		_ = json.Unmarshal([]byte(last[2:]), &key)
		for i, it := range l {
			if m, ok := it.(map[string]any); ok && matchesKey(m, key) {
				l[i] = v
			}
		}
	}
}
