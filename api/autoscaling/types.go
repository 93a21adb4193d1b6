// Package autoscaling holds autoscaling/v2's HorizontalPodAutoscaler,
// shaped like Kubernetes' k8s.io/api/autoscaling/v2: a target that has a
// scale subresource, the replicas it may have, the metrics that decide,
// and how fast it may change. Kobune serves Resource metrics (cpu and
// memory of the pods, from metrics.k8s.io); the other metric types are
// named unsupported when an autoscaler is written.
package autoscaling

import (
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/api/resource"
)

// HorizontalPodAutoscaler scales its target between minReplicas and
// maxReplicas so that its pods' average usage meets the metrics' targets.
type HorizontalPodAutoscaler struct {
	meta.TypeMeta   `json:",inline"`
	meta.ObjectMeta `json:"metadata"`
	Spec            HorizontalPodAutoscalerSpec   `json:"spec"`
	Status          HorizontalPodAutoscalerStatus `json:"status,omitzero"`
}

// HorizontalPodAutoscalerSpec is what to scale and by what.
type HorizontalPodAutoscalerSpec struct {
	ScaleTargetRef CrossVersionObjectReference      `json:"scaleTargetRef"`
	MinReplicas    *int32                           `json:"minReplicas,omitempty"`
	MaxReplicas    int32                            `json:"maxReplicas"`
	Metrics        []MetricSpec                     `json:"metrics,omitempty"`
	Behavior       *HorizontalPodAutoscalerBehavior `json:"behavior,omitempty"`
}

// CrossVersionObjectReference names the target in the autoscaler's
// namespace.
type CrossVersionObjectReference struct {
	Kind       string `json:"kind"`
	Name       string `json:"name"`
	APIVersion string `json:"apiVersion,omitempty"`
}

// Metric source types.
const (
	ResourceMetricSourceType          = "Resource"
	PodsMetricSourceType              = "Pods"
	ObjectMetricSourceType            = "Object"
	ExternalMetricSourceType          = "External"
	ContainerResourceMetricSourceType = "ContainerResource"
)

// MetricSpec is one metric and its target. Kobune serves type Resource.
type MetricSpec struct {
	Type     string                `json:"type"`
	Resource *ResourceMetricSource `json:"resource,omitempty"`
	// Kubernetes' other sources (pods, object, external,
	// containerResource) are not fields here: Kobune has no custom or
	// external metrics API, and validation refuses their types.
}

// ResourceMetricSource is a resource (cpu, memory) of the pods, averaged.
type ResourceMetricSource struct {
	Name   resource.Name `json:"name"`
	Target MetricTarget  `json:"target"`
}

// Metric target types.
const (
	UtilizationMetricType  = "Utilization"
	AverageValueMetricType = "AverageValue"
	ValueMetricType        = "Value"
)

// MetricTarget is the average to keep: averageUtilization, a percentage
// of the pods' requests, or averageValue, a quantity per pod.
type MetricTarget struct {
	Type               string             `json:"type"`
	Value              *resource.Quantity `json:"value,omitempty"`
	AverageValue       *resource.Quantity `json:"averageValue,omitempty"`
	AverageUtilization *int32             `json:"averageUtilization,omitempty"`
}

// HorizontalPodAutoscalerBehavior is how fast it scales each way.
type HorizontalPodAutoscalerBehavior struct {
	ScaleUp   *HPAScalingRules `json:"scaleUp,omitempty"`
	ScaleDown *HPAScalingRules `json:"scaleDown,omitempty"`
}

// Select policies.
const (
	MaxChangePolicySelect = "Max"
	MinChangePolicySelect = "Min"
	DisabledPolicySelect  = "Disabled"
	PodsScalingPolicy     = "Pods"
	PercentScalingPolicy  = "Percent"
)

// HPAScalingRules: recommendations within stabilizationWindowSeconds are
// considered together (scaling down takes the highest, up the lowest),
// and the policies bound the change per period.
type HPAScalingRules struct {
	StabilizationWindowSeconds *int32             `json:"stabilizationWindowSeconds,omitempty"`
	SelectPolicy               *string            `json:"selectPolicy,omitempty"`
	Policies                   []HPAScalingPolicy `json:"policies,omitempty"`
	Tolerance                  *resource.Quantity `json:"tolerance,omitempty" kobune:"unsupported"`
}

// HPAScalingPolicy allows Value pods, or Value percent, per PeriodSeconds.
type HPAScalingPolicy struct {
	Type          string `json:"type"`
	Value         int32  `json:"value"`
	PeriodSeconds int32  `json:"periodSeconds"`
}

// HorizontalPodAutoscalerStatus is what it saw and did last.
type HorizontalPodAutoscalerStatus struct {
	ObservedGeneration *int64                             `json:"observedGeneration,omitempty"`
	LastScaleTime      *meta.Time                         `json:"lastScaleTime,omitempty"`
	CurrentReplicas    int32                              `json:"currentReplicas"`
	DesiredReplicas    int32                              `json:"desiredReplicas"`
	CurrentMetrics     []MetricStatus                     `json:"currentMetrics,omitempty"`
	Conditions         []HorizontalPodAutoscalerCondition `json:"conditions,omitempty"`
}

// MetricStatus is one metric's current value.
type MetricStatus struct {
	Type     string                `json:"type"`
	Resource *ResourceMetricStatus `json:"resource,omitempty"`
}

// ResourceMetricStatus is a resource's current average.
type ResourceMetricStatus struct {
	Name    resource.Name     `json:"name"`
	Current MetricValueStatus `json:"current"`
}

// MetricValueStatus is a current average value and utilization.
type MetricValueStatus struct {
	Value              *resource.Quantity `json:"value,omitempty"`
	AverageValue       *resource.Quantity `json:"averageValue,omitempty"`
	AverageUtilization *int32             `json:"averageUtilization,omitempty"`
}

// Condition types.
const (
	AbleToScale    = "AbleToScale"
	ScalingActive  = "ScalingActive"
	ScalingLimited = "ScalingLimited"
)

// HorizontalPodAutoscalerCondition is one condition.
type HorizontalPodAutoscalerCondition struct {
	Type               string               `json:"type"`
	Status             meta.ConditionStatus `json:"status"`
	LastTransitionTime meta.Time            `json:"lastTransitionTime,omitzero"`
	Reason             string               `json:"reason,omitempty"`
	Message            string               `json:"message,omitempty"`
}

// Scale is autoscaling/v1's view of an object's replicas (the scale
// subresource of Deployments, ReplicaSets and StatefulSets): spec.replicas
// to write, status.replicas and the pods' selector to read.
type Scale struct {
	meta.TypeMeta   `json:",inline"`
	meta.ObjectMeta `json:"metadata"`
	Spec            struct {
		Replicas int32 `json:"replicas"`
	} `json:"spec"`
	Status struct {
		Replicas int32  `json:"replicas"`
		Selector string `json:"selector,omitempty"`
	} `json:"status"`
}
