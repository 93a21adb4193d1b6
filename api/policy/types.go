// Package policy holds policy/v1: the PodDisruptionBudget, which limits
// how many of a set of pods voluntary disruptions (evictions: kobectl
// drain, node maintenance) may take down at once, and the Eviction a
// client posts to a pod's eviction subresource to ask for one, shaped
// like Kubernetes' k8s.io/api/policy/v1.
package policy

import (
	"github.com/kobune/kobune/api/meta"
	v "github.com/kobune/kobune/api/validation"
)

// PodDisruptionBudget keeps at least minAvailable (or at most
// maxUnavailable away) of the pods its selector picks.
type PodDisruptionBudget struct {
	meta.TypeMeta   `json:",inline"`
	meta.ObjectMeta `json:"metadata"`
	Spec            PodDisruptionBudgetSpec   `json:"spec"`
	Status          PodDisruptionBudgetStatus `json:"status,omitzero"`
}

// PodDisruptionBudgetSpec: one of minAvailable and maxUnavailable, a
// count or a percentage.
type PodDisruptionBudgetSpec struct {
	MinAvailable               *meta.IntOrString   `json:"minAvailable,omitempty"`
	Selector                   *meta.LabelSelector `json:"selector,omitempty"`
	MaxUnavailable             *meta.IntOrString   `json:"maxUnavailable,omitempty"`
	UnhealthyPodEvictionPolicy *string             `json:"unhealthyPodEvictionPolicy,omitempty"`
}

// Unhealthy pod eviction policies: IfHealthyBudget (the default) lets an
// unready pod go only while the budget is met; AlwaysAllow always.
const (
	IfHealthyBudget = "IfHealthyBudget"
	AlwaysAllow     = "AlwaysAllow"
)

// PodDisruptionBudgetStatus is the disruption controller's count.
type PodDisruptionBudgetStatus struct {
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// DisruptedPods are pods the eviction subresource has let go and
	// that have not gone yet, with when (the controller drops entries
	// older than 2 minutes).
	DisruptedPods      map[string]meta.Time `json:"disruptedPods,omitempty"`
	DisruptionsAllowed int32                `json:"disruptionsAllowed"`
	CurrentHealthy     int32                `json:"currentHealthy"`
	DesiredHealthy     int32                `json:"desiredHealthy"`
	ExpectedPods       int32                `json:"expectedPods"`
	Conditions         []Condition          `json:"conditions,omitempty"`
}

// DisruptionBudgetCause is the cause type of an eviction refused for a
// budget (its Status's details.causes, which clients such as kubectl
// drain and Kubernetes' tests look for).
const DisruptionBudgetCause = "DisruptionBudget"

// Eviction asks for a pod to go, within its budget (POST
// pods/NAME/eviction).
type Eviction struct {
	meta.TypeMeta   `json:",inline"`
	meta.ObjectMeta `json:"metadata"`
	DeleteOptions   *DeleteOptions `json:"deleteOptions,omitempty"`
}

// DeleteOptions are an Eviction's delete options.
type DeleteOptions struct {
	GracePeriodSeconds *int64 `json:"gracePeriodSeconds,omitempty"`
}

// Condition is metav1.Condition, as the budget's status uses it.
type Condition = meta.Condition

// DisruptionAllowed is the budget's condition.
const DisruptionAllowed = "DisruptionAllowed"

// ValidatePodDisruptionBudget checks a budget with Kubernetes' rules.
func ValidatePodDisruptionBudget(b *PodDisruptionBudget) v.ErrorList {
	errs := v.ValidateObjectMeta(&b.ObjectMeta, true, v.IsDNS1123Subdomain, v.NewPath("metadata"))
	spec := v.NewPath("spec")
	if b.Spec.MinAvailable != nil && b.Spec.MaxUnavailable != nil {
		errs = append(errs, v.NewInvalid(spec, b.Spec, "minAvailable and maxUnavailable cannot be both set"))
	}
	for name, x := range map[string]*meta.IntOrString{"minAvailable": b.Spec.MinAvailable, "maxUnavailable": b.Spec.MaxUnavailable} {
		if x != nil {
			if msg := x.PercentError(); msg != "" {
				errs = append(errs, v.NewInvalid(spec.Child(name), x.String(), msg))
			}
		}
	}
	if b.Spec.Selector != nil {
		errs = append(errs, v.ValidateLabelSelector(b.Spec.Selector, spec.Child("selector"))...)
	}
	if p := b.Spec.UnhealthyPodEvictionPolicy; p != nil && *p != IfHealthyBudget && *p != AlwaysAllow {
		errs = append(errs, v.NewNotSupported(spec.Child("unhealthyPodEvictionPolicy"), *p, []string{AlwaysAllow, IfHealthyBudget}))
	}
	return errs
}

// ValidatePodDisruptionBudgetStatus checks a status write: its counts are
// not negative (kube-apiserver's PodDisruptionBudget status validation).
func ValidatePodDisruptionBudgetStatus(n, _ *PodDisruptionBudget) v.ErrorList {
	s := &n.Status
	return v.NonNegativeCounts(v.NewPath("status"), v.Count{Field: "disruptionsAllowed", Value: int64(s.DisruptionsAllowed)},
		v.Count{Field: "currentHealthy", Value: int64(s.CurrentHealthy)}, v.Count{Field: "desiredHealthy", Value: int64(s.DesiredHealthy)},
		v.Count{Field: "expectedPods", Value: int64(s.ExpectedPods)})
}
