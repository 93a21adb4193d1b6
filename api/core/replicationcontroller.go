package core

import (
	"maps"

	"github.com/kobune/kobune/api/meta"
	v "github.com/kobune/kobune/api/validation"
)

// ReplicationController is the ReplicaSet's predecessor in the core group
// (v1): it keeps a number of identical pods running, chosen by an
// equality selector (a map of labels). kube-controller-manager runs the
// ReplicaSet controller's code on it; so does Kobune's (controller/
// replicaset). Its validation is apps.ValidateReplicationController, beside
// the other workloads'.
type ReplicationController struct {
	meta.TypeMeta   `json:",inline"`
	meta.ObjectMeta `json:"metadata"`
	Spec            ReplicationControllerSpec   `json:"spec"`
	Status          ReplicationControllerStatus `json:"status,omitzero"`
}

// ReplicationControllerSpec is the desired state of a ReplicationController.
type ReplicationControllerSpec struct {
	Replicas        *int32 `json:"replicas,omitempty"`
	MinReadySeconds int32  `json:"minReadySeconds,omitempty"`
	// Selector is the labels a pod must have, all of them; defaulted to
	// the template's labels.
	Selector map[string]string `json:"selector,omitempty"`
	Template *PodTemplateSpec  `json:"template,omitempty"`
}

// ReplicationControllerStatus is the observed state of a ReplicationController.
type ReplicationControllerStatus struct {
	Replicas             int32                            `json:"replicas"`
	FullyLabeledReplicas int32                            `json:"fullyLabeledReplicas,omitempty"`
	ReadyReplicas        int32                            `json:"readyReplicas,omitempty"`
	AvailableReplicas    int32                            `json:"availableReplicas,omitempty"`
	ObservedGeneration   int64                            `json:"observedGeneration,omitempty"`
	Conditions           []ReplicationControllerCondition `json:"conditions,omitempty"`
}

// ReplicationControllerCondition is ReplicaFailure, as a ReplicaSet's.
type ReplicationControllerCondition struct {
	Type               string               `json:"type"`
	Status             meta.ConditionStatus `json:"status"`
	LastTransitionTime meta.Time            `json:"lastTransitionTime,omitzero"`
	Reason             string               `json:"reason,omitempty"`
	Message            string               `json:"message,omitempty"`
}

// SetDefaultsReplicationController applies Kubernetes' defaults: 1
// replica; the selector, and the controller's labels when it has none,
// from the template's labels; the pod template's defaults.
func SetDefaultsReplicationController(rc *ReplicationController) {
	if rc.Spec.Replicas == nil {
		one := int32(1)
		rc.Spec.Replicas = &one
	}
	if t := rc.Spec.Template; t != nil {
		if len(rc.Spec.Selector) == 0 {
			rc.Spec.Selector = maps.Clone(t.Labels)
		}
		if len(rc.Labels) == 0 {
			rc.Labels = maps.Clone(t.Labels)
		}
		SetDefaultsPodSpec(&t.Spec)
	}
}

// ValidateReplicationControllerStatus checks a status write as a
// ReplicaSet's is checked.
func ValidateReplicationControllerStatus(n, _ *ReplicationController) v.ErrorList {
	s := &n.Status
	return v.ReplicaCounts(s.Replicas, s.FullyLabeledReplicas, s.ReadyReplicas, s.AvailableReplicas, s.ObservedGeneration)
}
