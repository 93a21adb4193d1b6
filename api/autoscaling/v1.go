package autoscaling

import (
	"encoding/json"
	"fmt"

	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/api/resource"
)

// autoscaling/v1's HorizontalPodAutoscaler: CPU utilization only. Kubernetes
// still serves it beside v2 (older manifests, `kubectl autoscale` of older
// kubectls); Kobune stores v2 and converts, as kube-apiserver does: what v1
// cannot say (other metrics, behavior, conditions) travels in the
// annotations kube-apiserver uses, so that a v1 client's read-modify-write
// keeps it.
const (
	MetricsAnnotation        = "autoscaling.alpha.kubernetes.io/metrics"
	CurrentMetricsAnnotation = "autoscaling.alpha.kubernetes.io/current-metrics"
	ConditionsAnnotation     = "autoscaling.alpha.kubernetes.io/conditions"
	BehaviorAnnotation       = "autoscaling.alpha.kubernetes.io/behavior"
)

// V1 is the autoscaling/v1 apiVersion.
const V1 = "autoscaling/v1"

type hpaV1 struct {
	meta.TypeMeta   `json:",inline"`
	meta.ObjectMeta `json:"metadata"`
	Spec            struct {
		ScaleTargetRef                 CrossVersionObjectReference `json:"scaleTargetRef"`
		MinReplicas                    *int32                      `json:"minReplicas,omitempty"`
		MaxReplicas                    int32                       `json:"maxReplicas"`
		TargetCPUUtilizationPercentage *int32                      `json:"targetCPUUtilizationPercentage,omitempty"`
	} `json:"spec"`
	Status struct {
		ObservedGeneration              *int64     `json:"observedGeneration,omitempty"`
		LastScaleTime                   *meta.Time `json:"lastScaleTime,omitempty"`
		CurrentReplicas                 int32      `json:"currentReplicas"`
		DesiredReplicas                 int32      `json:"desiredReplicas"`
		CurrentCPUUtilizationPercentage *int32     `json:"currentCPUUtilizationPercentage,omitempty"`
	} `json:"status"`
}

// isCPUUtilization says whether a metric is the one v1 can say itself.
func isCPUUtilization(m MetricSpec) bool {
	return m.Type == ResourceMetricSourceType && m.Resource != nil && m.Resource.Name == resource.CPU &&
		m.Resource.Target.Type == UtilizationMetricType && m.Resource.Target.AverageUtilization != nil
}

// V2ToV1 turns a stored (autoscaling/v2) HorizontalPodAutoscaler's JSON
// into autoscaling/v1's.
func V2ToV1(b []byte) ([]byte, error) {
	var h HorizontalPodAutoscaler
	if err := json.Unmarshal(b, &h); err != nil {
		return nil, err
	}
	var out hpaV1
	out.TypeMeta = meta.TypeMeta{APIVersion: V1, Kind: "HorizontalPodAutoscaler"}
	out.ObjectMeta = h.ObjectMeta
	out.Spec.ScaleTargetRef, out.Spec.MinReplicas, out.Spec.MaxReplicas = h.Spec.ScaleTargetRef, h.Spec.MinReplicas, h.Spec.MaxReplicas
	var others []MetricSpec
	for _, m := range h.Spec.Metrics {
		if isCPUUtilization(m) && out.Spec.TargetCPUUtilizationPercentage == nil {
			out.Spec.TargetCPUUtilizationPercentage = m.Resource.Target.AverageUtilization
			continue
		}
		others = append(others, m)
	}
	st := h.Status
	out.Status.ObservedGeneration, out.Status.LastScaleTime = st.ObservedGeneration, st.LastScaleTime
	out.Status.CurrentReplicas, out.Status.DesiredReplicas = st.CurrentReplicas, st.DesiredReplicas
	var current []MetricStatus
	for _, m := range st.CurrentMetrics {
		if m.Type == ResourceMetricSourceType && m.Resource != nil && m.Resource.Name == resource.CPU &&
			m.Resource.Current.AverageUtilization != nil && out.Status.CurrentCPUUtilizationPercentage == nil {
			out.Status.CurrentCPUUtilizationPercentage = m.Resource.Current.AverageUtilization
			continue
		}
		current = append(current, m)
	}
	ann := map[string]string{}
	for k, v := range h.Annotations {
		ann[k] = v
	}
	for key, v := range map[string]any{MetricsAnnotation: others, CurrentMetricsAnnotation: current, ConditionsAnnotation: st.Conditions, BehaviorAnnotation: h.Spec.Behavior} {
		if isEmpty(v) {
			continue
		}
		j, err := json.Marshal(v)
		if err != nil {
			return nil, err
		}
		ann[key] = string(j)
	}
	if len(ann) > 0 {
		out.Annotations = ann
	}
	return json.Marshal(out)
}

func isEmpty(v any) bool {
	switch x := v.(type) {
	case []MetricSpec:
		return len(x) == 0
	case []MetricStatus:
		return len(x) == 0
	case []HorizontalPodAutoscalerCondition:
		return len(x) == 0
	case *HorizontalPodAutoscalerBehavior:
		return x == nil
	}
	return v == nil
}

// V1ToV2 turns an autoscaling/v1 HorizontalPodAutoscaler's JSON into the
// stored autoscaling/v2 form: targetCPUUtilizationPercentage is a
// Resource metric on cpu, the annotations give back what v1 cannot hold
// (and are removed). A malformed annotation is named.
func V1ToV2(b []byte) ([]byte, error) {
	var in hpaV1
	if err := json.Unmarshal(b, &in); err != nil {
		return nil, err
	}
	h := HorizontalPodAutoscaler{TypeMeta: meta.TypeMeta{APIVersion: "autoscaling/v2", Kind: "HorizontalPodAutoscaler"}, ObjectMeta: in.ObjectMeta}
	h.Spec.ScaleTargetRef, h.Spec.MinReplicas, h.Spec.MaxReplicas = in.Spec.ScaleTargetRef, in.Spec.MinReplicas, in.Spec.MaxReplicas
	if p := in.Spec.TargetCPUUtilizationPercentage; p != nil {
		h.Spec.Metrics = append(h.Spec.Metrics, MetricSpec{Type: ResourceMetricSourceType,
			Resource: &ResourceMetricSource{Name: resource.CPU, Target: MetricTarget{Type: UtilizationMetricType, AverageUtilization: p}}})
	}
	st := in.Status
	h.Status = HorizontalPodAutoscalerStatus{ObservedGeneration: st.ObservedGeneration, LastScaleTime: st.LastScaleTime,
		CurrentReplicas: st.CurrentReplicas, DesiredReplicas: st.DesiredReplicas}
	if p := st.CurrentCPUUtilizationPercentage; p != nil {
		h.Status.CurrentMetrics = append(h.Status.CurrentMetrics, MetricStatus{Type: ResourceMetricSourceType,
			Resource: &ResourceMetricStatus{Name: resource.CPU, Current: MetricValueStatus{AverageUtilization: p}}})
	}
	var others []MetricSpec
	var current []MetricStatus
	for key, into := range map[string]any{MetricsAnnotation: &others, CurrentMetricsAnnotation: &current,
		ConditionsAnnotation: &h.Status.Conditions, BehaviorAnnotation: &h.Spec.Behavior} {
		v, ok := in.Annotations[key]
		if !ok {
			continue
		}
		if err := json.Unmarshal([]byte(v), into); err != nil {
			return nil, fmt.Errorf("metadata.annotations[%s]: %w", key, err)
		}
	}
	h.Spec.Metrics = append(h.Spec.Metrics, others...)
	h.Status.CurrentMetrics = append(h.Status.CurrentMetrics, current...)
	if len(in.Annotations) > 0 {
		h.Annotations = map[string]string{}
		for k, v := range in.Annotations {
			switch k {
			case MetricsAnnotation, CurrentMetricsAnnotation, ConditionsAnnotation, BehaviorAnnotation:
			default:
				h.Annotations[k] = v
			}
		}
		if len(h.Annotations) == 0 {
			h.Annotations = nil
		}
	}
	return json.Marshal(h)
}
