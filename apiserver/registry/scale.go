package registry

import (
	"encoding/json"
	"fmt"

	"github.com/kobune/kobune/api/autoscaling"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/api/selector"
)

// The scale subresource (autoscaling/v1 Scale) of the kinds that have
// replicas, as kubectl scale and autoscalers use it: a view of the
// object's spec.replicas, status.replicas and selector; writing it
// changes only spec.replicas.

// scalable are the kinds with a scale subresource.
var scalable = map[string]bool{"deployments": true, "replicasets": true, "statefulsets": true}

// Scalable reports whether a resource has the scale subresource.
func Scalable(resource string) bool { return scalable[resource] }

// replicated is the part of those kinds a Scale is made from.
type replicated struct {
	Metadata meta.ObjectMeta `json:"metadata"`
	Spec     struct {
		Replicas *int32              `json:"replicas"`
		Selector *meta.LabelSelector `json:"selector"`
	} `json:"spec"`
	Status struct {
		Replicas int32 `json:"replicas"`
	} `json:"status"`
}

// scaleOf is the Scale of a stored object (JSON with its revision).
func scaleOf(stored []byte) ([]byte, error) {
	var r replicated
	if err := json.Unmarshal(stored, &r); err != nil {
		return nil, fmt.Errorf("decode: %w", err)
	}
	sc := autoscaling.Scale{TypeMeta: meta.TypeMeta{APIVersion: "autoscaling/v1", Kind: "Scale"}}
	sc.ObjectMeta = meta.ObjectMeta{Name: r.Metadata.Name, Namespace: r.Metadata.Namespace, UID: r.Metadata.UID,
		ResourceVersion: r.Metadata.ResourceVersion, CreationTimestamp: r.Metadata.CreationTimestamp}
	if r.Spec.Replicas != nil {
		sc.Spec.Replicas = *r.Spec.Replicas
	}
	sc.Status.Replicas = r.Status.Replicas
	if r.Spec.Selector != nil {
		if sel, err := selector.FromLabelSelector(r.Spec.Selector); err == nil {
			sc.Status.Selector = sel.String()
		}
	}
	return json.Marshal(sc)
}

// replicasPatch is the merge patch that gives the object a Scale's
// spec.replicas, and the Scale's resourceVersion ("" if it names none).
func replicasPatch(scale []byte) ([]byte, string, error) {
	var sc autoscaling.Scale
	if err := json.Unmarshal(scale, &sc); err != nil {
		return nil, "", fmt.Errorf("Scale: %w", err)
	}
	if sc.Spec.Replicas < 0 {
		return nil, "", fmt.Errorf("Scale.spec.replicas: Invalid value: %d: must be greater than or equal to 0", sc.Spec.Replicas)
	}
	b, err := json.Marshal(map[string]any{"spec": map[string]any{"replicas": sc.Spec.Replicas}})
	return b, sc.ResourceVersion, err
}
