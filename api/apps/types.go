package apps

import (
	"encoding/json"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
)

// ReplicaSet keeps a number of identical pods running.
type ReplicaSet struct {
	meta.TypeMeta   `json:",inline"`
	meta.ObjectMeta `json:"metadata"`
	Spec            ReplicaSetSpec   `json:"spec"`
	Status          ReplicaSetStatus `json:"status,omitzero"`
}

// ReplicaSetSpec is the desired state of a ReplicaSet.
type ReplicaSetSpec struct {
	Replicas        *int32               `json:"replicas,omitempty"`
	MinReadySeconds int32                `json:"minReadySeconds,omitempty"`
	Selector        *meta.LabelSelector  `json:"selector"`
	Template        core.PodTemplateSpec `json:"template"`
}

// ReplicaSetStatus is the observed state of a ReplicaSet.
type ReplicaSetStatus struct {
	Replicas             int32       `json:"replicas"`
	FullyLabeledReplicas int32       `json:"fullyLabeledReplicas,omitempty"`
	ReadyReplicas        int32       `json:"readyReplicas,omitempty"`
	AvailableReplicas    int32       `json:"availableReplicas,omitempty"`
	ObservedGeneration   int64       `json:"observedGeneration,omitempty"`
	Conditions           []Condition `json:"conditions,omitempty"`
}

// Condition is a workload condition (Progressing, Available, ReplicaFailure).
type Condition struct {
	Type               string               `json:"type"`
	Status             meta.ConditionStatus `json:"status"`
	LastUpdateTime     meta.Time            `json:"lastUpdateTime,omitzero"`
	LastTransitionTime meta.Time            `json:"lastTransitionTime,omitzero"`
	Reason             string               `json:"reason,omitempty"`
	Message            string               `json:"message,omitempty"`
}

// Deployment rolls out ReplicaSets.
type Deployment struct {
	meta.TypeMeta   `json:",inline"`
	meta.ObjectMeta `json:"metadata"`
	Spec            DeploymentSpec   `json:"spec"`
	Status          DeploymentStatus `json:"status,omitzero"`
}

// DeploymentSpec is the desired state of a Deployment.
type DeploymentSpec struct {
	Replicas                *int32               `json:"replicas,omitempty"`
	Selector                *meta.LabelSelector  `json:"selector"`
	Template                core.PodTemplateSpec `json:"template"`
	Strategy                DeploymentStrategy   `json:"strategy,omitzero"`
	MinReadySeconds         int32                `json:"minReadySeconds,omitempty"`
	RevisionHistoryLimit    *int32               `json:"revisionHistoryLimit,omitempty"`
	Paused                  bool                 `json:"paused,omitempty"`
	ProgressDeadlineSeconds *int32               `json:"progressDeadlineSeconds,omitempty"`
}

// DeploymentStrategy is RollingUpdate or Recreate.
type DeploymentStrategy struct {
	Type          string                   `json:"type,omitempty"`
	RollingUpdate *RollingUpdateDeployment `json:"rollingUpdate,omitempty"`
}

// Deployment strategy types.
const (
	RecreateDeploymentStrategyType      = "Recreate"
	RollingUpdateDeploymentStrategyType = "RollingUpdate"
)

// RollingUpdateDeployment bounds a rolling update.
type RollingUpdateDeployment struct {
	MaxUnavailable *meta.IntOrString `json:"maxUnavailable,omitempty"`
	MaxSurge       *meta.IntOrString `json:"maxSurge,omitempty"`
}

// DeploymentStatus is the observed state of a Deployment.
type DeploymentStatus struct {
	ObservedGeneration  int64       `json:"observedGeneration,omitempty"`
	Replicas            int32       `json:"replicas,omitempty"`
	UpdatedReplicas     int32       `json:"updatedReplicas,omitempty"`
	ReadyReplicas       int32       `json:"readyReplicas,omitempty"`
	AvailableReplicas   int32       `json:"availableReplicas,omitempty"`
	UnavailableReplicas int32       `json:"unavailableReplicas,omitempty"`
	Conditions          []Condition `json:"conditions,omitempty"`
	CollisionCount      *int32      `json:"collisionCount,omitempty"`
}

// DaemonSet runs one pod on each eligible node.
type DaemonSet struct {
	meta.TypeMeta   `json:",inline"`
	meta.ObjectMeta `json:"metadata"`
	Spec            DaemonSetSpec   `json:"spec"`
	Status          DaemonSetStatus `json:"status,omitzero"`
}

// DaemonSetSpec is the desired state of a DaemonSet.
type DaemonSetSpec struct {
	Selector             *meta.LabelSelector     `json:"selector"`
	Template             core.PodTemplateSpec    `json:"template"`
	UpdateStrategy       DaemonSetUpdateStrategy `json:"updateStrategy,omitzero"`
	MinReadySeconds      int32                   `json:"minReadySeconds,omitempty"`
	RevisionHistoryLimit *int32                  `json:"revisionHistoryLimit,omitempty"`
}

// DaemonSetUpdateStrategy is RollingUpdate or OnDelete.
type DaemonSetUpdateStrategy struct {
	Type          string                  `json:"type,omitempty"`
	RollingUpdate *RollingUpdateDaemonSet `json:"rollingUpdate,omitempty"`
}

// RollingUpdateDaemonSet bounds a DaemonSet rolling update.
type RollingUpdateDaemonSet struct {
	MaxUnavailable *meta.IntOrString `json:"maxUnavailable,omitempty"`
	MaxSurge       *meta.IntOrString `json:"maxSurge,omitempty"`
}

// DaemonSetStatus is the observed state of a DaemonSet.
type DaemonSetStatus struct {
	CurrentNumberScheduled int32       `json:"currentNumberScheduled"`
	NumberMisscheduled     int32       `json:"numberMisscheduled"`
	DesiredNumberScheduled int32       `json:"desiredNumberScheduled"`
	NumberReady            int32       `json:"numberReady"`
	ObservedGeneration     int64       `json:"observedGeneration,omitempty"`
	UpdatedNumberScheduled int32       `json:"updatedNumberScheduled,omitempty"`
	NumberAvailable        int32       `json:"numberAvailable,omitempty"`
	NumberUnavailable      int32       `json:"numberUnavailable,omitempty"`
	Conditions             []Condition `json:"conditions,omitempty"`
}

// StatefulSet runs pods with stable names <name>-<ordinal>.
type StatefulSet struct {
	meta.TypeMeta   `json:",inline"`
	meta.ObjectMeta `json:"metadata"`
	Spec            StatefulSetSpec   `json:"spec"`
	Status          StatefulSetStatus `json:"status,omitzero"`
}

// StatefulSetSpec is the desired state of a StatefulSet.
type StatefulSetSpec struct {
	Replicas             *int32                    `json:"replicas,omitempty"`
	Selector             *meta.LabelSelector       `json:"selector"`
	Template             core.PodTemplateSpec      `json:"template"`
	ServiceName          string                    `json:"serviceName,omitempty"`
	PodManagementPolicy  string                    `json:"podManagementPolicy,omitempty"`
	UpdateStrategy       StatefulSetUpdateStrategy `json:"updateStrategy,omitzero"`
	RevisionHistoryLimit *int32                    `json:"revisionHistoryLimit,omitempty"`
	MinReadySeconds      int32                     `json:"minReadySeconds,omitempty"`
	// VolumeClaimTemplates give each pod claims of its own, named
	// <template>-<set>-<ordinal>, kept across the pod's restarts and
	// rescheduling.
	VolumeClaimTemplates []core.PersistentVolumeClaim `json:"volumeClaimTemplates,omitempty"`
	// PersistentVolumeClaimRetentionPolicy says whether those claims are
	// deleted with the set (whenDeleted) or with a scale-down (whenScaled):
	// Retain (the default) or Delete.
	PersistentVolumeClaimRetentionPolicy *StatefulSetPersistentVolumeClaimRetentionPolicy `json:"persistentVolumeClaimRetentionPolicy,omitempty"`
}

// StatefulSetPersistentVolumeClaimRetentionPolicy is Retain or Delete, for
// the set's deletion and for scale-down.
type StatefulSetPersistentVolumeClaimRetentionPolicy struct {
	WhenDeleted string `json:"whenDeleted,omitempty"`
	WhenScaled  string `json:"whenScaled,omitempty"`
}

// StatefulSetUpdateStrategy is RollingUpdate (with a partition) or OnDelete.
type StatefulSetUpdateStrategy struct {
	Type          string                            `json:"type,omitempty"`
	RollingUpdate *RollingUpdateStatefulSetStrategy `json:"rollingUpdate,omitempty"`
}

// RollingUpdateStatefulSetStrategy holds the partition.
type RollingUpdateStatefulSetStrategy struct {
	Partition      *int32            `json:"partition,omitempty"`
	MaxUnavailable *meta.IntOrString `json:"maxUnavailable,omitempty"`
}

// StatefulSetStatus is the observed state of a StatefulSet.
type StatefulSetStatus struct {
	ObservedGeneration int64       `json:"observedGeneration,omitempty"`
	Replicas           int32       `json:"replicas"`
	ReadyReplicas      int32       `json:"readyReplicas,omitempty"`
	CurrentReplicas    int32       `json:"currentReplicas,omitempty"`
	UpdatedReplicas    int32       `json:"updatedReplicas,omitempty"`
	AvailableReplicas  int32       `json:"availableReplicas,omitempty"`
	CurrentRevision    string      `json:"currentRevision,omitempty"`
	UpdateRevision     string      `json:"updateRevision,omitempty"`
	CollisionCount     *int32      `json:"collisionCount,omitempty"`
	Conditions         []Condition `json:"conditions,omitempty"`
}

// ControllerRevision is one revision of a DaemonSet's or StatefulSet's pod
// template: Data is the strategic merge patch that puts that template back
// (what `kubectl rollout undo` applies), Revision its number in the
// owner's history. The DaemonSet and StatefulSet controllers write them;
// they are immutable but for the revision number.
type ControllerRevision struct {
	meta.TypeMeta   `json:",inline"`
	meta.ObjectMeta `json:"metadata"`
	Data            json.RawMessage `json:"data,omitempty"`
	Revision        int64           `json:"revision"`
}
