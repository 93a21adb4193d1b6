package patch

import (
	"slices"
	"strings"

	"github.com/kobune/kobune/api/k8sapi"
)

// ThreeWay is client-side apply's merge (kubectl apply without
// --server-side): the manifest (desired) goes onto the live object, the
// fields the last applied manifest (last) had and desired no longer has
// are removed, and everything else on the live object — what defaulting,
// admission and controllers set — stays. Lists with a merge key in
// Kubernetes' types (containers by name, volumes by name, volumeMounts
// by mountPath, ports by containerPort, env by name) merge item by item
// as kubectl's strategic merge does: an item the server added to a
// container (the service account token's volumeMount) is kept, a
// defaulted field inside an item (imagePullPolicy) too, so applying an
// unchanged manifest changes nothing. Other lists are replaced whole. t
// is the object's Kubernetes type (nil: every list is replaced). live is
// changed and returned.
func ThreeWay(live, last, desired map[string]any, t *k8sapi.Type) map[string]any {
	if live == nil {
		live = map[string]any{}
	}
	for k, v := range desired {
		var f *k8sapi.Field
		if t != nil {
			f, _ = t.Field(k)
		}
		live[k] = threeWayValue(live[k], last[k], v, f)
	}
	for k := range last {
		if _, still := desired[k]; !still {
			delete(live, k)
		}
	}
	return live
}

func threeWayValue(live, last, desired any, f *k8sapi.Field) any {
	switch d := desired.(type) {
	case map[string]any:
		l, ok := live.(map[string]any)
		if !ok {
			return d
		}
		lastMap, _ := last.(map[string]any)
		var t *k8sapi.Type
		if f != nil && f.Kind == "object" {
			t, _ = k8sapi.Named(f.Type)
		}
		if f != nil && f.Kind != "object" && f.Kind != "map" {
			return d // raw JSON, quantities and the like: as written
		}
		return ThreeWay(l, lastMap, d, t)
	case []any:
		l, ok := live.([]any)
		if !ok || f == nil || f.Kind != "list" || !strings.Contains(f.PatchStrategy, "merge") {
			return d
		}
		lastList, _ := last.([]any)
		if f.Elem == "object" && f.PatchMergeKey != "" {
			et, _ := k8sapi.Named(f.Type)
			return threeWayKeyed(l, lastList, d, f.PatchMergeKey, et)
		}
		// Primitives that merge (finalizers): what desired has, plus what
		// others added that the last manifest did not have.
		out := slices.Clone(d)
		for _, v := range l {
			if !slices.ContainsFunc(out, func(o any) bool { return jsonEqual(o, v) }) &&
				!slices.ContainsFunc(lastList, func(o any) bool { return jsonEqual(o, v) }) {
				out = append(out, v)
			}
		}
		return out
	}
	return desired
}

// threeWayKeyed merges a list of objects by key: live items keep their
// place (merged with the desired item of their key), items only the last
// manifest had go, items only desired has are appended in its order,
// items neither manifest had (the server's) stay.
func threeWayKeyed(live, last, desired []any, key string, et *k8sapi.Type) []any {
	keyOf := func(v any) (any, bool) {
		m, ok := v.(map[string]any)
		if !ok {
			return nil, false
		}
		k, ok := m[key]
		return k, ok
	}
	find := func(list []any, k any) (map[string]any, bool) {
		for _, v := range list {
			if vk, ok := keyOf(v); ok && jsonEqual(vk, k) {
				return v.(map[string]any), true
			}
		}
		return nil, false
	}
	out := make([]any, 0, len(live)+len(desired))
	for _, v := range live {
		k, ok := keyOf(v)
		if !ok {
			out = append(out, v)
			continue
		}
		d, wanted := find(desired, k)
		l, hadIt := find(last, k)
		switch {
		case wanted:
			out = append(out, ThreeWay(v.(map[string]any), l, d, et))
		case !hadIt:
			out = append(out, v) // the server's or another user's: kept
		}
	}
	for _, d := range desired {
		k, ok := keyOf(d)
		if !ok {
			out = append(out, d)
			continue
		}
		if _, there := find(live, k); !there {
			out = append(out, d)
		}
	}
	return out
}
