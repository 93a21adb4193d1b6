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
	"errors"
	"fmt"

	jsonpatch "github.com/evanphx/json-patch/v5"

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

// Limits on a JSON patch, Kubernetes' own: a patch of more operations is
// refused before it is applied, and its copy operations may add at most
// MaxCopyBytes to the object (18 copies that each double a value once
// took 1.5 GB).
const (
	MaxJSONPatchOperations = 10000
	MaxCopyBytes           = 3 << 20
)

// TooLargeError is a patch over one of the limits (the API answers 413).
type TooLargeError struct{ msg string }

func (e *TooLargeError) Error() string { return e.msg }

// applyJSONPatch is RFC 6902, with evanphx/json-patch (the library
// kube-apiserver applies JSON patches with; it bounds what copies add).
func applyJSONPatch(original, p []byte) ([]byte, error) {
	ops, err := jsonpatch.DecodePatch(p)
	if err != nil {
		return nil, fmt.Errorf("a JSON patch is a list of operations: %v", err)
	}
	if len(ops) > MaxJSONPatchOperations {
		return nil, &TooLargeError{fmt.Sprintf("The allowed maximum operations in a JSON patch is %d, got %d", MaxJSONPatchOperations, len(ops))}
	}
	opts := jsonpatch.NewApplyOptions()
	opts.AccumulatedCopySizeLimit = MaxCopyBytes
	out, err := ops.ApplyWithOptions(original, opts)
	var copyErr *jsonpatch.AccumulatedCopySizeError
	if errors.As(err, &copyErr) {
		return nil, &TooLargeError{fmt.Sprintf("the patch's copy operations would add more than %d MiB to the object", MaxCopyBytes>>20)}
	}
	return out, err
}

// Apply applies a patch of the given type to original (a JSON object).
// t is the object's Kubernetes type, which a strategic merge patch needs
// for its merge keys.
func Apply(patchType string, original, p []byte, t *k8sapi.Type) ([]byte, error) {
	if patchType == JSONPatchType {
		return applyJSONPatch(original, p)
	}
	var doc any
	if err := unmarshal(original, &doc); err != nil {
		return nil, fmt.Errorf("the object is not JSON: %v", err)
	}
	var out any
	switch patchType {
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
		if out, err = (smp{order: orderMerged}).strategicMerge(m, pv, t); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("patch type %q is not supported: use %s, %s or %s", patchType, JSONPatchType, MergePatchType, StrategicMergePatchType)
	}
	return json.Marshal(out)
}

// MergeApplied merges a server-side apply's configuration into the live
// object (JSON objects) as a strategic merge, with lists in the live
// order and what only the applied configuration has last (storedOrder),
// not in a PATCH's order.
func MergeApplied(live, applied []byte, t *k8sapi.Type) ([]byte, error) {
	var doc, pv map[string]any
	if err := unmarshal(live, &doc); err != nil {
		return nil, fmt.Errorf("the object is not a JSON object: %v", err)
	}
	if err := unmarshal(applied, &pv); err != nil {
		return nil, fmt.Errorf("the applied configuration is not a JSON object: %v", err)
	}
	out, err := (smp{order: storedOrder}).strategicMerge(doc, pv, t)
	if err != nil {
		return nil, err
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

// jsonEqual compares two decoded JSON values as JSON (numbers by their
// text, maps whatever their order).
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
