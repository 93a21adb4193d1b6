package core

import (
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/api/resource"
)

// PersistentVolumeAccessMode is how a volume may be mounted.
type PersistentVolumeAccessMode string

// Access modes.
const (
	ReadWriteOnce    PersistentVolumeAccessMode = "ReadWriteOnce"
	ReadOnlyMany     PersistentVolumeAccessMode = "ReadOnlyMany"
	ReadWriteMany    PersistentVolumeAccessMode = "ReadWriteMany"
	ReadWriteOncePod PersistentVolumeAccessMode = "ReadWriteOncePod"
)

// PersistentVolumeReclaimPolicy is what happens to a volume whose claim is
// deleted.
type PersistentVolumeReclaimPolicy string

// Reclaim policies.
const (
	ReclaimRetain PersistentVolumeReclaimPolicy = "Retain"
	ReclaimDelete PersistentVolumeReclaimPolicy = "Delete"
)

// PersistentVolume phases.
const (
	VolumePending   = "Pending"
	VolumeAvailable = "Available"
	VolumeBound     = "Bound"
	VolumeReleased  = "Released"
	VolumeFailed    = "Failed"
)

// PersistentVolumeClaim phases.
const (
	ClaimPending = "Pending"
	ClaimBound   = "Bound"
	ClaimLost    = "Lost"
)

// Finalizers and annotations of the volume controllers, Kubernetes' names.
const (
	PVCProtectionFinalizer = "kubernetes.io/pvc-protection"
	PVProtectionFinalizer  = "kubernetes.io/pv-protection"
	// AnnBindCompleted on a claim: the binder finished binding it.
	AnnBindCompleted = "pv.kubernetes.io/bind-completed"
	// AnnBoundByController on a claim or volume: the binder (not the user)
	// made the binding.
	AnnBoundByController = "pv.kubernetes.io/bound-by-controller"
	// AnnSelectedNode on a claim: the node the scheduler chose for the
	// first pod that uses it (WaitForFirstConsumer); the binder then binds
	// a volume that node reaches.
	AnnSelectedNode = "volume.kubernetes.io/selected-node"
	// AnnDefaultStorageClass on a StorageClass: claims without a class get it.
	AnnDefaultStorageClass = "storageclass.kubernetes.io/is-default-class"
)

// PersistentVolume is a piece of storage of the cluster.
type PersistentVolume struct {
	meta.TypeMeta   `json:",inline"`
	meta.ObjectMeta `json:"metadata"`
	Spec            PersistentVolumeSpec   `json:"spec"`
	Status          PersistentVolumeStatus `json:"status,omitzero"`
}

// PersistentVolumeSpec is what the volume is and who may use it.
type PersistentVolumeSpec struct {
	Capacity    resource.List                `json:"capacity,omitempty"`
	AccessModes []PersistentVolumeAccessMode `json:"accessModes,omitempty"`
	// ClaimRef is the claim the volume is bound (or reserved) to.
	ClaimRef                      *ObjectReference              `json:"claimRef,omitempty"`
	PersistentVolumeReclaimPolicy PersistentVolumeReclaimPolicy `json:"persistentVolumeReclaimPolicy,omitempty"`
	StorageClassName              string                        `json:"storageClassName,omitempty"`
	// VolumeMode: Filesystem only (block volumes are not supported).
	VolumeMode *string `json:"volumeMode,omitempty"`
	// NodeAffinity limits the nodes that can reach the volume (a local
	// volume: its node).
	NodeAffinity *VolumeNodeAffinity `json:"nodeAffinity,omitempty"`
	// The volume's source: a path of a node, or a CSI driver's volume.
	HostPath *HostPathVolumeSource      `json:"hostPath,omitempty"`
	Local    *LocalVolumeSource         `json:"local,omitempty"`
	CSI      *CSIPersistentVolumeSource `json:"csi,omitempty"`
	// MountOptions are not supported (no mount helper takes them).
	MountOptions []string `json:"mountOptions,omitempty" kobune:"unsupported"`
}

// VolumeNodeAffinity is the nodes a volume can be reached from.
type VolumeNodeAffinity struct {
	Required *NodeSelector `json:"required,omitempty"`
}

// LocalVolumeSource is a directory of the node the volume's affinity names.
type LocalVolumeSource struct {
	Path string `json:"path"`
}

// CSIPersistentVolumeSource is a volume of a CSI driver: the agent of the
// node that mounts it calls the driver's NodeStageVolume and
// NodePublishVolume with these (agent/volume/csi.go).
type CSIPersistentVolumeSource struct {
	Driver       string `json:"driver"`
	VolumeHandle string `json:"volumeHandle"`
	// ReadOnly publishes the volume read-only for every pod.
	ReadOnly bool `json:"readOnly,omitempty"`
	// FSType goes to the driver in the volume capability.
	FSType string `json:"fsType,omitempty"`
	// VolumeAttributes go to the driver as the volume context.
	VolumeAttributes map[string]string `json:"volumeAttributes,omitempty"`
}

// CSIAccessMode is the name of the CSI access mode an access mode becomes
// (csi.VolumeCapability_AccessMode_Mode), as the kubelet and the
// external-provisioner map them.
func CSIAccessMode(m PersistentVolumeAccessMode) string {
	switch m {
	case ReadOnlyMany:
		return "MULTI_NODE_READER_ONLY"
	case ReadWriteMany:
		return "MULTI_NODE_MULTI_WRITER"
	case ReadWriteOncePod:
		return "SINGLE_NODE_SINGLE_WRITER"
	}
	return "SINGLE_NODE_WRITER"
}

// PersistentVolumeStatus is the volume's phase.
type PersistentVolumeStatus struct {
	Phase   string `json:"phase,omitempty"`
	Message string `json:"message,omitempty"`
	Reason  string `json:"reason,omitempty"`
}

// PersistentVolumeClaim is a request for storage, in a namespace.
type PersistentVolumeClaim struct {
	meta.TypeMeta   `json:",inline"`
	meta.ObjectMeta `json:"metadata"`
	Spec            PersistentVolumeClaimSpec   `json:"spec"`
	Status          PersistentVolumeClaimStatus `json:"status,omitzero"`
}

// PersistentVolumeClaimSpec is what the claim asks for.
type PersistentVolumeClaimSpec struct {
	AccessModes []PersistentVolumeAccessMode `json:"accessModes,omitempty"`
	// Selector picks among static volumes by their labels.
	Selector  *meta.LabelSelector        `json:"selector,omitempty"`
	Resources VolumeResourceRequirements `json:"resources,omitzero"`
	// VolumeName binds the claim to this volume (set by the binder, or by
	// the user to ask for one).
	VolumeName       string  `json:"volumeName,omitempty"`
	StorageClassName *string `json:"storageClassName,omitempty"`
	VolumeMode       *string `json:"volumeMode,omitempty"`
}

// VolumeResourceRequirements is the storage a claim asks for.
type VolumeResourceRequirements struct {
	Requests resource.List `json:"requests,omitempty"`
	Limits   resource.List `json:"limits,omitempty" kobune:"unsupported"`
}

// PersistentVolumeClaimStatus is what the claim got.
type PersistentVolumeClaimStatus struct {
	Phase       string                       `json:"phase,omitempty"`
	AccessModes []PersistentVolumeAccessMode `json:"accessModes,omitempty"`
	Capacity    resource.List                `json:"capacity,omitempty"`
	// Conditions are what a controller reports of the claim (Kubernetes'
	// resizer: Resizing, FileSystemResizePending); kept as written.
	Conditions []PersistentVolumeClaimCondition `json:"conditions,omitempty"`
}

// PersistentVolumeClaimCondition is one condition of a claim.
type PersistentVolumeClaimCondition struct {
	Type               string               `json:"type"`
	Status             meta.ConditionStatus `json:"status"`
	LastProbeTime      meta.Time            `json:"lastProbeTime,omitzero"`
	LastTransitionTime meta.Time            `json:"lastTransitionTime,omitzero"`
	Reason             string               `json:"reason,omitempty"`
	Message            string               `json:"message,omitempty"`
}

// ClaimClass is a claim's storage class name ("" when it names none).
func ClaimClass(c *PersistentVolumeClaim) string {
	if c.Spec.StorageClassName == nil {
		return ""
	}
	return *c.Spec.StorageClassName
}
