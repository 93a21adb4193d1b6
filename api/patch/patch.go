// Package patch applies the three patch types of Kubernetes' PATCH verb to
// an object's JSON: JSON merge patch (RFC 7386), JSON patch (RFC 6902) and
// strategic merge patch, Kubernetes' own, which merges lists by the merge
// keys of api/k8sapi (containers by name, ports by containerPort) instead
// of replacing them, and honours its directives ($patch, $retainKeys,
// $deleteFromPrimitiveList, $setElementOrder). kubectl patch, edit and
// client-side apply send these (so does kobectl patch); the API server
// applies them (apiserver/registry/patch.go), and server-side apply merges with the
// strategic merge (api/fieldmanager).
package patch

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/kobune/kobune/api/k8sapi"
)

// Patch types, as Content-Type values.
const (
	JSONPatchType           = "application/json-patch+json"
	MergePatchType          = "application/merge-patch+json"
	StrategicMergePatchType = "application/strategic-merge-patch+json"
	// ApplyPatchType is server-side apply, which api/fieldmanager merges
	// (Apply here refuses it).
	ApplyPatchType = "application/apply-patch+yaml"
)

// Apply applies a patch of the given type to original (a JSON object).
// t is the object's Kubernetes type, which a strategic merge patch needs
// for its merge keys.
func Apply(patchType string, original, p []byte, t *k8sapi.Type) ([]byte, error) {
	var doc any
	if err := unmarshal(original, &doc); err != nil {
		return nil, fmt.Errorf("the object is not JSON: %v", err)
	}
	var out any
	switch patchType {
	case JSONPatchType:
		var ops []map[string]any
		if err := unmarshal(p, &ops); err != nil {
			return nil, fmt.Errorf("a JSON patch is a list of operations: %v", err)
		}
		var err error
		if out, err = jsonPatch(doc, ops); err != nil {
			return nil, err
		}
	case MergePatchType:
		var pv any
		if err := unmarshal(p, &pv); err != nil {
			return nil, fmt.Errorf("the merge patch is not JSON: %v", err)
		}
		out = mergePatch(doc, pv)
	case StrategicMergePatchType:
		var pv map[string]any
		if err := unmarshal(p, &pv); err != nil {
			return nil, fmt.Errorf("a strategic merge patch is a JSON object: %v", err)
		}
		m, ok := doc.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("the object is not a JSON object")
		}
		var err error
		if out, err = strategicMerge(m, pv, t); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("patch type %q is not supported: use %s, %s or %s", patchType, JSONPatchType, MergePatchType, StrategicMergePatchType)
	}
	return json.Marshal(out)
}

// unmarshal keeps numbers as json.Number so that large integers survive.
func unmarshal(b []byte, v any) error {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	return d.Decode(v)
}

// mergePatch is RFC 7386: objects merge, null deletes, anything else
// replaces.
func mergePatch(doc, p any) any {
	pm, ok := p.(map[string]any)
	if !ok {
		return p
	}
	dm, ok := doc.(map[string]any)
	if !ok {
		dm = map[string]any{}
	}
	for k, v := range pm {
		if v == nil {
			delete(dm, k)
			continue
		}
		dm[k] = mergePatch(dm[k], v)
	}
	return dm
}

// jsonPatch is RFC 6902.
func jsonPatch(doc any, ops []map[string]any) (any, error) {
	for i, op := range ops {
		name, _ := op["op"].(string)
		path, ok := op["path"].(string)
		if !ok {
			return nil, fmt.Errorf("operation %d: path is required", i)
		}
		var err error
		switch name {
		case "add":
			v, ok := op["value"]
			if !ok {
				return nil, fmt.Errorf("operation %d (add %s): value is required", i, path)
			}
			doc, err = pointerSet(doc, path, v, true)
		case "replace":
			v, ok := op["value"]
			if !ok {
				return nil, fmt.Errorf("operation %d (replace %s): value is required", i, path)
			}
			if _, err = pointerGet(doc, path); err == nil {
				doc, err = pointerSet(doc, path, v, false)
			}
		case "remove":
			doc, err = pointerRemove(doc, path)
		case "move", "copy":
			from, _ := op["from"].(string)
			var v any
			if v, err = pointerGet(doc, from); err == nil {
				if name == "move" {
					doc, err = pointerRemove(doc, from)
				} else {
					v = deepCopy(v)
				}
				if err == nil {
					doc, err = pointerSet(doc, path, v, true)
				}
			}
		case "test":
			var v any
			if v, err = pointerGet(doc, path); err == nil && !jsonEqual(v, op["value"]) {
				err = fmt.Errorf("test failed: %s is not the value given", path)
			}
		default:
			err = fmt.Errorf("unknown operation %q", name)
		}
		if err != nil {
			return nil, fmt.Errorf("operation %d (%s %s): %w", i, name, path, err)
		}
	}
	return doc, nil
}

func jsonEqual(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	var xa, ya any
	_ = unmarshal(x, &xa)
	_ = unmarshal(y, &ya)
	x, _ = json.Marshal(xa)
	y, _ = json.Marshal(ya)
	return bytes.Equal(x, y)
}

func deepCopy(v any) any {
	b, _ := json.Marshal(v)
	var out any
	_ = unmarshal(b, &out)
	return out
}

func splitPointer(path string) ([]string, error) {
	if path == "" {
		return nil, nil
	}
	if !strings.HasPrefix(path, "/") {
		return nil, fmt.Errorf("a JSON pointer starts with /")
	}
	parts := strings.Split(path[1:], "/")
	for i, p := range parts {
		parts[i] = strings.ReplaceAll(strings.ReplaceAll(p, "~1", "/"), "~0", "~")
	}
	return parts, nil
}

func pointerGet(doc any, path string) (any, error) {
	parts, err := splitPointer(path)
	if err != nil {
		return nil, err
	}
	cur := doc
	for _, p := range parts {
		switch c := cur.(type) {
		case map[string]any:
			v, ok := c[p]
			if !ok {
				return nil, fmt.Errorf("%s: no such field", path)
			}
			cur = v
		case []any:
			i, err := strconv.Atoi(p)
			if err != nil || i < 0 || i >= len(c) {
				return nil, fmt.Errorf("%s: index %q out of range", path, p)
			}
			cur = c[i]
		default:
			return nil, fmt.Errorf("%s: not an object or list", path)
		}
	}
	return cur, nil
}

// pointerSet sets (or, with insert, adds: lists grow) the value at path
// and returns the new document.
func pointerSet(doc any, path string, v any, insert bool) (any, error) {
	parts, err := splitPointer(path)
	if err != nil {
		return nil, err
	}
	if len(parts) == 0 {
		return v, nil
	}
	parent, err := pointerGet(doc, joinPointer(parts[:len(parts)-1]))
	if err != nil {
		return nil, err
	}
	last := parts[len(parts)-1]
	switch c := parent.(type) {
	case map[string]any:
		c[last] = v
		return doc, nil
	case []any:
		i := len(c)
		if last != "-" {
			if i, err = strconv.Atoi(last); err != nil || i < 0 || i > len(c) || !insert && i == len(c) {
				return nil, fmt.Errorf("%s: index %q out of range", path, last)
			}
		}
		var n []any
		if insert {
			n = append(append(append([]any{}, c[:i]...), v), c[i:]...)
		} else {
			n = append([]any{}, c...)
			n[i] = v
		}
		return pointerSet(doc, joinPointer(parts[:len(parts)-1]), n, false)
	}
	return nil, fmt.Errorf("%s: the parent is not an object or list", path)
}

func pointerRemove(doc any, path string) (any, error) {
	parts, err := splitPointer(path)
	if err != nil || len(parts) == 0 {
		return nil, fmt.Errorf("%q: cannot remove the whole document", path)
	}
	if _, err := pointerGet(doc, path); err != nil {
		return nil, err
	}
	parent, _ := pointerGet(doc, joinPointer(parts[:len(parts)-1]))
	last := parts[len(parts)-1]
	switch c := parent.(type) {
	case map[string]any:
		delete(c, last)
		return doc, nil
	case []any:
		i, _ := strconv.Atoi(last)
		n := append(append([]any{}, c[:i]...), c[i+1:]...)
		return pointerSet(doc, joinPointer(parts[:len(parts)-1]), n, false)
	}
	return nil, fmt.Errorf("%s: cannot remove", path)
}

func joinPointer(parts []string) string {
	if len(parts) == 0 {
		return ""
	}
	esc := make([]string, len(parts))
	for i, p := range parts {
		esc[i] = strings.ReplaceAll(strings.ReplaceAll(p, "~", "~0"), "/", "~1")
	}
	return "/" + strings.Join(esc, "/")
}
