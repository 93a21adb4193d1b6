package autoscaling

import (
	"fmt"

	"github.com/kobune/kobune/api/resource"
	v "github.com/kobune/kobune/api/validation"
)

func i32(n int32) *int32   { return &n }
func str(s string) *string { return &s }

// DefaultScaleUp and DefaultScaleDown are Kubernetes' default behaviour:
// up at once, by 100 % or 4 pods per 15 s, whichever is more; down after
// 5 minutes of lower recommendations, by up to 100 % per 15 s.
func DefaultScaleUp() *HPAScalingRules {
	return &HPAScalingRules{StabilizationWindowSeconds: i32(0), SelectPolicy: str(MaxChangePolicySelect),
		Policies: []HPAScalingPolicy{{Type: PodsScalingPolicy, Value: 4, PeriodSeconds: 15}, {Type: PercentScalingPolicy, Value: 100, PeriodSeconds: 15}}}
}

// DefaultScaleDown is the default scale-down rule.
func DefaultScaleDown() *HPAScalingRules {
	return &HPAScalingRules{StabilizationWindowSeconds: i32(300), SelectPolicy: str(MaxChangePolicySelect),
		Policies: []HPAScalingPolicy{{Type: PercentScalingPolicy, Value: 100, PeriodSeconds: 15}}}
}

// SetDefaultsHorizontalPodAutoscaler fills what Kubernetes fills:
// minReplicas 1, a cpu target of 80 % when no metric is named, and each
// direction's behaviour field by field from the defaults.
func SetDefaultsHorizontalPodAutoscaler(h *HorizontalPodAutoscaler) {
	if h.Spec.MinReplicas == nil {
		h.Spec.MinReplicas = i32(1)
	}
	if len(h.Spec.Metrics) == 0 {
		h.Spec.Metrics = []MetricSpec{{Type: ResourceMetricSourceType, Resource: &ResourceMetricSource{Name: resource.CPU,
			Target: MetricTarget{Type: UtilizationMetricType, AverageUtilization: i32(80)}}}}
	}
	if h.Spec.Behavior == nil {
		h.Spec.Behavior = &HorizontalPodAutoscalerBehavior{}
	}
	h.Spec.Behavior.ScaleUp = fillRules(h.Spec.Behavior.ScaleUp, DefaultScaleUp())
	h.Spec.Behavior.ScaleDown = fillRules(h.Spec.Behavior.ScaleDown, DefaultScaleDown())
}

func fillRules(r, def *HPAScalingRules) *HPAScalingRules {
	if r == nil {
		return def
	}
	if r.StabilizationWindowSeconds == nil {
		r.StabilizationWindowSeconds = def.StabilizationWindowSeconds
	}
	if r.SelectPolicy == nil {
		r.SelectPolicy = def.SelectPolicy
	}
	if len(r.Policies) == 0 {
		r.Policies = def.Policies
	}
	return r
}

// scalableKinds are the targets with a scale subresource.
var scalableKinds = map[string]string{"Deployment": "apps/v1", "ReplicaSet": "apps/v1", "StatefulSet": "apps/v1", "ReplicationController": "v1"}

// ValidateHorizontalPodAutoscaler checks an autoscaler with Kubernetes'
// rules and messages; metric types other than Resource are refused as
// unsupported.
func ValidateHorizontalPodAutoscaler(h *HorizontalPodAutoscaler) v.ErrorList {
	errs := v.ValidateObjectMeta(&h.ObjectMeta, true, v.IsDNS1123Subdomain, v.NewPath("metadata"))
	spec := v.NewPath("spec")
	ref := spec.Child("scaleTargetRef")
	switch {
	case h.Spec.ScaleTargetRef.Kind == "":
		errs = append(errs, v.NewRequired(ref.Child("kind"), ""))
	case scalableKinds[h.Spec.ScaleTargetRef.Kind] == "":
		errs = append(errs, v.NewNotSupported(ref.Child("kind"), h.Spec.ScaleTargetRef.Kind, []string{"Deployment", "ReplicaSet", "StatefulSet", "ReplicationController"}))
	case h.Spec.ScaleTargetRef.APIVersion != "" && h.Spec.ScaleTargetRef.APIVersion != scalableKinds[h.Spec.ScaleTargetRef.Kind]:
		errs = append(errs, v.NewInvalid(ref.Child("apiVersion"), h.Spec.ScaleTargetRef.APIVersion, "must be "+scalableKinds[h.Spec.ScaleTargetRef.Kind]))
	}
	if h.Spec.ScaleTargetRef.Name == "" {
		errs = append(errs, v.NewRequired(ref.Child("name"), ""))
	} else if msg := v.IsDNS1123Subdomain(h.Spec.ScaleTargetRef.Name); msg != "" {
		errs = append(errs, v.NewInvalid(ref.Child("name"), h.Spec.ScaleTargetRef.Name, msg))
	}
	if h.Spec.MinReplicas != nil && *h.Spec.MinReplicas < 1 {
		errs = append(errs, v.NewInvalid(spec.Child("minReplicas"), *h.Spec.MinReplicas, "must be greater than or equal to 1"))
	}
	if h.Spec.MaxReplicas < 1 {
		errs = append(errs, v.NewInvalid(spec.Child("maxReplicas"), h.Spec.MaxReplicas, "must be greater than 0"))
	}
	if h.Spec.MinReplicas != nil && h.Spec.MaxReplicas < *h.Spec.MinReplicas {
		errs = append(errs, v.NewInvalid(spec.Child("maxReplicas"), h.Spec.MaxReplicas, "must be greater than or equal to `minReplicas`"))
	}
	for i, m := range h.Spec.Metrics {
		p := spec.Child("metrics").Index(i)
		switch m.Type {
		case ResourceMetricSourceType:
		case PodsMetricSourceType, ObjectMetricSourceType, ExternalMetricSourceType, ContainerResourceMetricSourceType:
			errs = append(errs, v.NewInvalid(p.Child("type"), m.Type, "not supported by Kobune: only Resource metrics (cpu, memory from metrics.k8s.io) are served; there is no custom or external metrics API"))
			continue
		case "":
			errs = append(errs, v.NewRequired(p.Child("type"), "must specify a metric source type"))
			continue
		default:
			errs = append(errs, v.NewNotSupported(p.Child("type"), m.Type, []string{ContainerResourceMetricSourceType, ExternalMetricSourceType, ObjectMetricSourceType, PodsMetricSourceType, ResourceMetricSourceType}))
			continue
		}
		if m.Resource == nil {
			errs = append(errs, v.NewRequired(p.Child("resource"), "must populate information for the given metric source"))
			continue
		}
		rp := p.Child("resource")
		if m.Resource.Name != resource.CPU && m.Resource.Name != resource.Memory {
			errs = append(errs, v.NewNotSupported(rp.Child("name"), string(m.Resource.Name), []string{"cpu", "memory"}))
		}
		t := m.Resource.Target
		tp := rp.Child("target")
		switch t.Type {
		case UtilizationMetricType:
			if t.AverageUtilization == nil {
				errs = append(errs, v.NewRequired(tp.Child("averageUtilization"), "must set either a target raw value or a target utilization"))
			} else if *t.AverageUtilization < 1 {
				errs = append(errs, v.NewInvalid(tp.Child("averageUtilization"), *t.AverageUtilization, "must be greater than 0"))
			}
		case AverageValueMetricType:
			if t.AverageValue == nil {
				errs = append(errs, v.NewRequired(tp.Child("averageValue"), "must set either a target raw value or a target utilization"))
			} else if t.AverageValue.Sign() <= 0 {
				errs = append(errs, v.NewInvalid(tp.Child("averageValue"), t.AverageValue.String(), "must be positive"))
			}
		case ValueMetricType:
			errs = append(errs, v.NewInvalid(tp.Child("type"), t.Type, "a Resource metric takes Utilization or AverageValue"))
		default:
			errs = append(errs, v.NewNotSupported(tp.Child("type"), t.Type, []string{AverageValueMetricType, UtilizationMetricType}))
		}
	}
	if b := h.Spec.Behavior; b != nil {
		errs = append(errs, validateRules(b.ScaleUp, spec.Child("behavior", "scaleUp"))...)
		errs = append(errs, validateRules(b.ScaleDown, spec.Child("behavior", "scaleDown"))...)
	}
	return errs
}

func validateRules(r *HPAScalingRules, p *v.Path) v.ErrorList {
	if r == nil {
		return nil
	}
	var errs v.ErrorList
	if w := r.StabilizationWindowSeconds; w != nil && (*w < 0 || *w > 3600) {
		errs = append(errs, v.NewInvalid(p.Child("stabilizationWindowSeconds"), *w, "must be between 0 and 3600"))
	}
	if s := r.SelectPolicy; s != nil && *s != MaxChangePolicySelect && *s != MinChangePolicySelect && *s != DisabledPolicySelect {
		errs = append(errs, v.NewNotSupported(p.Child("selectPolicy"), *s, []string{DisabledPolicySelect, MaxChangePolicySelect, MinChangePolicySelect}))
	}
	if r.Tolerance != nil {
		errs = append(errs, v.NewInvalid(p.Child("tolerance"), r.Tolerance.String(), "not supported by Kobune: the tolerance is the controller's 10 %"))
	}
	for i, pol := range r.Policies {
		pp := p.Child("policies").Index(i)
		if pol.Type != PodsScalingPolicy && pol.Type != PercentScalingPolicy {
			errs = append(errs, v.NewNotSupported(pp.Child("type"), pol.Type, []string{PercentScalingPolicy, PodsScalingPolicy}))
		}
		if pol.Value <= 0 {
			errs = append(errs, v.NewInvalid(pp.Child("value"), pol.Value, "must be greater than zero"))
		}
		if pol.PeriodSeconds <= 0 || pol.PeriodSeconds > 1800 {
			errs = append(errs, v.NewInvalid(pp.Child("periodSeconds"), pol.PeriodSeconds, fmt.Sprintf("must be greater than zero and less than or equal to %d", 1800)))
		}
	}
	return errs
}

// ValidateHorizontalPodAutoscalerStatus checks a status write: the
// replica counts are not negative (kube-apiserver's).
func ValidateHorizontalPodAutoscalerStatus(n, _ *HorizontalPodAutoscaler) v.ErrorList {
	s := &n.Status
	return v.NonNegativeCounts(v.NewPath("status"), v.Count{Field: "currentReplicas", Value: int64(s.CurrentReplicas)},
		v.Count{Field: "desiredReplicas", Value: int64(s.DesiredReplicas)})
}
