package registry

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/kobune/kobune/api/autoscaling"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/api/scheme"
	"github.com/kobune/kobune/api/selector"
)

// The scale subresource (autoscaling/v1 Scale) of the kinds that have
// replicas, as kubectl scale and autoscalers use it: a view of the
// object's spec.replicas, status.replicas and selector; writing it
// changes only spec.replicas.

// scalable are the kinds with a scale subresource.
var scalable = map[string]bool{"deployments": true, "replicasets": true, "statefulsets": true, "replicationcontrollers": true}

// Scalable reports whether a kind has the scale subresource: the built-in
// ones above, and custom kinds whose definition asks for it.
func Scalable(k *scheme.Kind) bool {
	return scalable[k.Resource] || k.Custom != nil && k.Custom.Scale != nil
}

// replicated is the part of those kinds a Scale is made from.
type replicated struct {
	Metadata meta.ObjectMeta `json:"metadata"`
	Spec     struct {
		Replicas *int32 `json:"replicas"`
		// Selector is a LabelSelector, or a ReplicationController's map.
		Selector json.RawMessage `json:"selector"`
	} `json:"spec"`
	Status struct {
		Replicas int32 `json:"replicas"`
	} `json:"status"`
}

// scaleOf is the Scale of a stored object (JSON with its revision).
func scaleOf(k *scheme.Kind, stored []byte) ([]byte, error) {
	if k.Custom != nil && k.Custom.Scale != nil {
		return customScaleOf(k.Custom.Scale, stored)
	}
	var r replicated
	if err := json.Unmarshal(stored, &r); err != nil {
		return nil, fmt.Errorf("decode: %w", err)
	}
	var sel *meta.LabelSelector
	if len(r.Spec.Selector) > 0 && string(r.Spec.Selector) != "null" {
		sel = &meta.LabelSelector{}
		var err error
		if k.Resource == "replicationcontrollers" { // an equality selector: a map of labels
			err = json.Unmarshal(r.Spec.Selector, &sel.MatchLabels)
		} else {
			err = json.Unmarshal(r.Spec.Selector, sel)
		}
		if err != nil {
			return nil, fmt.Errorf("decode the selector: %w", err)
		}
	}
	sc := autoscaling.Scale{TypeMeta: meta.TypeMeta{APIVersion: "autoscaling/v1", Kind: "Scale"}}
	sc.ObjectMeta = meta.ObjectMeta{Name: r.Metadata.Name, Namespace: r.Metadata.Namespace, UID: r.Metadata.UID,
		ResourceVersion: r.Metadata.ResourceVersion, CreationTimestamp: r.Metadata.CreationTimestamp}
	if r.Spec.Replicas != nil {
		sc.Spec.Replicas = *r.Spec.Replicas
	}
	sc.Status.Replicas = r.Status.Replicas
	if sel != nil {
		if sel, err := selector.FromLabelSelector(sel); err == nil {
			sc.Status.Selector = sel.String()
		}
	}
	return json.Marshal(sc)
}

// replicasPatch is the merge patch that gives the object a Scale's
// spec.replicas, and the Scale's resourceVersion ("" if it names none).
func replicasPatch(k *scheme.Kind, scale []byte) ([]byte, string, error) {
	var sc autoscaling.Scale
	if err := json.Unmarshal(scale, &sc); err != nil {
		return nil, "", fmt.Errorf("Scale: %w", err)
	}
	if sc.Spec.Replicas < 0 {
		return nil, "", fmt.Errorf("Scale.spec.replicas: Invalid value: %d: must be greater than or equal to 0", sc.Spec.Replicas)
	}
	path := ".spec.replicas"
	if k.Custom != nil && k.Custom.Scale != nil {
		path = k.Custom.Scale.SpecReplicas
	}
	var p any = sc.Spec.Replicas
	parts := strings.Split(strings.TrimPrefix(path, "."), ".")
	for i := len(parts) - 1; i >= 0; i-- {
		p = map[string]any{parts[i]: p}
	}
	b, err := json.Marshal(p)
	return b, sc.ResourceVersion, err
}

// customScaleOf is a custom resource's Scale, read at its definition's
// paths.
func customScaleOf(paths *scheme.ScalePaths, stored []byte) ([]byte, error) {
	var u meta.Unstructured
	if err := json.Unmarshal(stored, &u); err != nil {
		return nil, fmt.Errorf("decode: %w", err)
	}
	obj, err := u.Object()
	if err != nil {
		return nil, err
	}
	sc := autoscaling.Scale{TypeMeta: meta.TypeMeta{APIVersion: "autoscaling/v1", Kind: "Scale"}}
	sc.ObjectMeta = meta.ObjectMeta{Name: u.Name, Namespace: u.Namespace, UID: u.UID, ResourceVersion: u.ResourceVersion, CreationTimestamp: u.CreationTimestamp}
	sc.Spec.Replicas = int32(intAt(obj, paths.SpecReplicas))
	sc.Status.Replicas = int32(intAt(obj, paths.StatusReplicas))
	if paths.LabelSelector != "" {
		sc.Status.Selector, _ = valueAt(obj, paths.LabelSelector).(string)
	}
	return json.Marshal(sc)
}

// valueAt is the value at a simple JSON path (.spec.replicas), or nil.
func valueAt(obj map[string]any, path string) any {
	var cur any = obj
	for _, part := range strings.Split(strings.TrimPrefix(path, "."), ".") {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = m[part]
	}
	return cur
}

func intAt(obj map[string]any, path string) int64 {
	if n, ok := valueAt(obj, path).(json.Number); ok {
		i, _ := n.Int64()
		return i
	}
	return 0
}
