package storage

import (
	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/api/resource"
	v "github.com/kobune/kobune/api/validation"
)

// CSIDriver is what a CSI driver declares about itself
// ("storage.k8s.io/v1", cluster-scoped, named as the driver): the driver's
// deployment creates it, and kobune-agent reads it when it mounts one of
// the driver's volumes, as the kubelet does:
//
//   - volumeLifecycleModes: a pod's inline csi volume needs Ephemeral;
//   - podInfoOnMount: NodePublishVolume gets the pod's name, namespace,
//     uid and ServiceAccount in its volume context;
//   - fsGroupPolicy: whether the pod's fsGroup owns the published volume;
//   - attachRequired: Kobune has no attach/detach controller, so a driver
//     that needs ControllerPublishVolume first cannot mount: the agent
//     says so in the pod's events (docs/differences.md);
//   - storageCapacity: the scheduler checks the driver's
//     CSIStorageCapacity objects for a claim waiting for its first pod.
//
// With no CSIDriver object, a driver's volumes mount as persistent ones,
// without pod information and without attach.
type CSIDriver struct {
	meta.TypeMeta   `json:",inline"`
	meta.ObjectMeta `json:"metadata"`
	Spec            CSIDriverSpec `json:"spec"`
}

// VolumeLifecycleMode is how a driver's volumes live.
type VolumeLifecycleMode string

// Lifecycle modes.
const (
	// Persistent volumes are PersistentVolumes, made and deleted apart
	// from the pods that use them.
	VolumeLifecyclePersistent VolumeLifecycleMode = "Persistent"
	// Ephemeral volumes are a pod's inline csi volumes: published for
	// the pod, gone with it.
	VolumeLifecycleEphemeral VolumeLifecycleMode = "Ephemeral"
)

// FSGroupPolicy says when a pod's fsGroup owns the driver's volumes.
type FSGroupPolicy string

// fsGroup policies.
const (
	// ReadWriteOnceWithFSTypeFSGroupPolicy: only a volume with an fsType
	// mounted ReadWriteOnce (an inline volume: with an fsType).
	ReadWriteOnceWithFSTypeFSGroupPolicy FSGroupPolicy = "ReadWriteOnceWithFSType"
	// FileFSGroupPolicy: always.
	FileFSGroupPolicy FSGroupPolicy = "File"
	// NoneFSGroupPolicy: never; the volume keeps the owner it has.
	NoneFSGroupPolicy FSGroupPolicy = "None"
)

// CSIDriverSpec is the driver's declaration. Kubernetes defaults each
// yes-or-no field (SetDefaultsCSIDriver), so every stored object has them.
type CSIDriverSpec struct {
	AttachRequired       *bool                 `json:"attachRequired,omitempty"`
	PodInfoOnMount       *bool                 `json:"podInfoOnMount,omitempty"`
	VolumeLifecycleModes []VolumeLifecycleMode `json:"volumeLifecycleModes,omitempty"`
	StorageCapacity      *bool                 `json:"storageCapacity,omitempty"`
	FSGroupPolicy        *FSGroupPolicy        `json:"fsGroupPolicy,omitempty"`
	// RequiresRepublish false and SELinuxMount false ask for what the
	// agent does (publish once; no SELinux); true is not supported, nor
	// are tokens for the driver, nor node allocatable updates.
	RequiresRepublish                  *bool  `json:"requiresRepublish,omitempty" kobune:"unsupported"`
	SELinuxMount                       *bool  `json:"seLinuxMount,omitempty" kobune:"unsupported"`
	TokenRequests                      []any  `json:"tokenRequests,omitempty" kobune:"unsupported"`
	NodeAllocatableUpdatePeriodSeconds *int64 `json:"nodeAllocatableUpdatePeriodSeconds,omitempty" kobune:"unsupported"`
	ServiceAccountTokenInSecrets       *bool  `json:"serviceAccountTokenInSecrets,omitempty" kobune:"unsupported"`
	PreventPodSchedulingIfMissing      *bool  `json:"preventPodSchedulingIfMissing,omitempty" kobune:"unsupported"`
}

// Mode reports whether the driver serves volumes of lifecycle mode m.
func (s *CSIDriverSpec) Mode(m VolumeLifecycleMode) bool {
	for _, x := range s.VolumeLifecycleModes {
		if x == m {
			return true
		}
	}
	return false
}

// SetDefaultsCSIDriver fills in Kubernetes' defaults: attach required,
// no pod information, persistent volumes only, no capacity tracking,
// fsGroup for ReadWriteOnce volumes with an fsType, no republish, no
// SELinux mount.
func SetDefaultsCSIDriver(d *CSIDriver) {
	s := &d.Spec
	for _, f := range []struct {
		p   **bool
		def bool
	}{{&s.AttachRequired, true}, {&s.PodInfoOnMount, false}, {&s.StorageCapacity, false}, {&s.RequiresRepublish, false}, {&s.SELinuxMount, false}} {
		if *f.p == nil {
			b := f.def
			*f.p = &b
		}
	}
	if len(s.VolumeLifecycleModes) == 0 {
		s.VolumeLifecycleModes = []VolumeLifecycleMode{VolumeLifecyclePersistent}
	}
	if s.FSGroupPolicy == nil {
		p := ReadWriteOnceWithFSTypeFSGroupPolicy
		s.FSGroupPolicy = &p
	}
}

// ValidateCSIDriver checks a driver's name (a CSI driver name) and spec.
func ValidateCSIDriver(d *CSIDriver) v.ErrorList {
	errs := v.ValidateObjectMeta(&d.ObjectMeta, false, core.CSIDriverNameError, v.NewPath("metadata"))
	p := v.NewPath("spec")
	for name, b := range map[string]*bool{"attachRequired": d.Spec.AttachRequired, "podInfoOnMount": d.Spec.PodInfoOnMount, "storageCapacity": d.Spec.StorageCapacity} {
		if b == nil {
			errs = append(errs, v.NewRequired(p.Child(name), ""))
		}
	}
	for i, m := range d.Spec.VolumeLifecycleModes {
		if m != VolumeLifecyclePersistent && m != VolumeLifecycleEphemeral {
			errs = append(errs, v.NewNotSupported(p.Child("volumeLifecycleModes").Index(i), string(m),
				[]string{string(VolumeLifecyclePersistent), string(VolumeLifecycleEphemeral)}))
		}
	}
	if f := d.Spec.FSGroupPolicy; f != nil && *f != ReadWriteOnceWithFSTypeFSGroupPolicy && *f != FileFSGroupPolicy && *f != NoneFSGroupPolicy {
		errs = append(errs, v.NewNotSupported(p.Child("fsGroupPolicy"), string(*f),
			[]string{string(FileFSGroupPolicy), string(NoneFSGroupPolicy), string(ReadWriteOnceWithFSTypeFSGroupPolicy)}))
	}
	return errs
}

// ValidateCSIDriverUpdate: attachRequired and volumeLifecycleModes are
// immutable, as in Kubernetes (pods already mounted rely on them).
func ValidateCSIDriverUpdate(n, o *CSIDriver) v.ErrorList {
	errs := v.Immutable(v.NewPath("spec", "attachRequired"), n.Spec.AttachRequired, o.Spec.AttachRequired)
	return append(errs, v.Immutable(v.NewPath("spec", "volumeLifecycleModes"), n.Spec.VolumeLifecycleModes, o.Spec.VolumeLifecycleModes)...)
}

// CSIStorageCapacity ("storage.k8s.io/v1", namespaced) is what one CSI
// GetCapacity call answered: how much of a StorageClass's storage the
// nodes that nodeTopology selects have left. A driver's
// external-provisioner publishes them (in its own namespace); the
// scheduler reads them, for drivers whose CSIDriver says storageCapacity,
// before it puts a pod whose claim waits for its first consumer on a
// node: no object for the node and class, or too little, and the node
// does not fit.
type CSIStorageCapacity struct {
	meta.TypeMeta   `json:",inline"`
	meta.ObjectMeta `json:"metadata"`
	// NodeTopology selects the nodes, by their labels, that this
	// capacity is for (nil: none).
	NodeTopology     *meta.LabelSelector `json:"nodeTopology,omitempty"`
	StorageClassName string              `json:"storageClassName"`
	// Capacity is what is left; unset means none.
	Capacity *resource.Quantity `json:"capacity,omitempty"`
	// MaximumVolumeSize, when set, is the largest volume the driver can
	// make there (else Capacity is).
	MaximumVolumeSize *resource.Quantity `json:"maximumVolumeSize,omitempty"`
}

// Fits reports whether a volume of size fits this capacity: within
// maximumVolumeSize where set, else within capacity.
func (c *CSIStorageCapacity) Fits(size resource.Quantity) bool {
	limit := c.MaximumVolumeSize
	if limit == nil {
		limit = c.Capacity
	}
	return limit != nil && limit.Cmp(size) >= 0
}

// ValidateCSIStorageCapacity checks the selector, the class's name and
// that no quantity is negative.
func ValidateCSIStorageCapacity(c *CSIStorageCapacity) v.ErrorList {
	errs := v.ValidateObjectMeta(&c.ObjectMeta, true, v.IsDNS1123Subdomain, v.NewPath("metadata"))
	errs = append(errs, v.ValidateLabelSelector(c.NodeTopology, v.NewPath("nodeTopology"))...)
	if c.StorageClassName == "" {
		errs = append(errs, v.NewRequired(v.NewPath("storageClassName"), ""))
	} else if msg := v.IsDNS1123Subdomain(c.StorageClassName); msg != "" {
		errs = append(errs, v.NewInvalid(v.NewPath("storageClassName"), c.StorageClassName, msg))
	}
	for name, q := range map[string]*resource.Quantity{"capacity": c.Capacity, "maximumVolumeSize": c.MaximumVolumeSize} {
		if q != nil && q.Sign() < 0 {
			errs = append(errs, v.NewInvalid(v.NewPath(name), q.String(), "must be greater than or equal to 0"))
		}
	}
	return errs
}

// ValidateCSIStorageCapacityUpdate: what GetCapacity was asked (the
// topology and the class) is immutable; the answers may change.
func ValidateCSIStorageCapacityUpdate(n, o *CSIStorageCapacity) v.ErrorList {
	errs := v.Immutable(v.NewPath("nodeTopology"), n.NodeTopology, o.NodeTopology)
	return append(errs, v.Immutable(v.NewPath("storageClassName"), n.StorageClassName, o.StorageClassName)...)
}

// VolumeAttachment ("storage.k8s.io/v1", cluster-scoped, with a status
// subresource) asks that a volume be attached to a node (the CSI
// controller's ControllerPublishVolume) and records the answer. In
// Kubernetes the attach/detach controller creates them and a driver's
// external-attacher acts on them; Kobune has no attach/detach controller
// (its drivers need no attach), so it serves the kind for drivers and
// tools that create and act on their own (docs/differences.md).
type VolumeAttachment struct {
	meta.TypeMeta   `json:",inline"`
	meta.ObjectMeta `json:"metadata"`
	Spec            VolumeAttachmentSpec   `json:"spec"`
	Status          VolumeAttachmentStatus `json:"status,omitempty"`
}

// VolumeAttachmentSpec is which volume, which node, whose driver.
type VolumeAttachmentSpec struct {
	// Attacher is the CSI driver's name.
	Attacher string                 `json:"attacher"`
	Source   VolumeAttachmentSource `json:"source"`
	NodeName string                 `json:"nodeName"`
}

// VolumeAttachmentSource is the volume: a PersistentVolume by name.
type VolumeAttachmentSource struct {
	PersistentVolumeName *string `json:"persistentVolumeName,omitempty"`
	// InlineVolumeSpec is for in-tree volumes migrated to CSI, which
	// Kobune does not have.
	InlineVolumeSpec *core.PersistentVolumeSpec `json:"inlineVolumeSpec,omitempty" kobune:"unsupported"`
}

// VolumeAttachmentStatus is what the attacher answered.
type VolumeAttachmentStatus struct {
	Attached bool `json:"attached"`
	// AttachmentMetadata is ControllerPublishVolume's publish context.
	AttachmentMetadata map[string]string `json:"attachmentMetadata,omitempty"`
	AttachError        *VolumeError      `json:"attachError,omitempty"`
	DetachError        *VolumeError      `json:"detachError,omitempty"`
}

// VolumeError is the last error of an attach or a detach.
type VolumeError struct {
	Time      meta.Time `json:"time,omitempty"`
	Message   string    `json:"message,omitempty"`
	ErrorCode *int32    `json:"errorCode,omitempty"`
}

// Kubernetes' bounds on what an attacher records.
const (
	maxAttachmentMetadataBytes = 256 * 1024
	maxVolumeErrorMessageBytes = 1024
)

// ValidateVolumeAttachment checks the attacher's name, the volume's, the
// node's and the status's bounds.
func ValidateVolumeAttachment(a *VolumeAttachment) v.ErrorList {
	errs := v.ValidateObjectMeta(&a.ObjectMeta, false, v.IsDNS1123Subdomain, v.NewPath("metadata"))
	p := v.NewPath("spec")
	errs = append(errs, core.ValidateCSIDriverName(a.Spec.Attacher, p.Child("attacher"))...)
	switch pv := a.Spec.Source.PersistentVolumeName; {
	case pv == nil:
		errs = append(errs, v.NewRequired(p.Child("source"), "must specify exactly one of inlineVolumeSpec and persistentVolumeName"))
	case *pv == "":
		errs = append(errs, v.NewRequired(p.Child("source", "persistentVolumeName"), "must specify non empty persistentVolumeName"))
	default:
		if msg := v.IsDNS1123Subdomain(*pv); msg != "" {
			errs = append(errs, v.NewInvalid(p.Child("source", "persistentVolumeName"), *pv, msg))
		}
	}
	if msg := v.IsDNS1123Subdomain(a.Spec.NodeName); msg != "" {
		errs = append(errs, v.NewInvalid(p.Child("nodeName"), a.Spec.NodeName, msg))
	}
	return append(errs, validateVolumeAttachmentStatus(&a.Status)...)
}

func validateVolumeAttachmentStatus(s *VolumeAttachmentStatus) v.ErrorList {
	var errs v.ErrorList
	p := v.NewPath("status")
	size := 0
	for k, val := range s.AttachmentMetadata {
		size += len(k) + len(val)
	}
	if size > maxAttachmentMetadataBytes {
		errs = append(errs, v.NewTooLong(p.Child("attachmentMetadata"), "", maxAttachmentMetadataBytes))
	}
	for name, e := range map[string]*VolumeError{"attachError": s.AttachError, "detachError": s.DetachError} {
		if e == nil {
			continue
		}
		if len(e.Message) > maxVolumeErrorMessageBytes {
			errs = append(errs, v.NewTooLong(p.Child(name, "message"), "", maxVolumeErrorMessageBytes))
		}
		if e.ErrorCode != nil && *e.ErrorCode < 0 {
			errs = append(errs, v.NewInvalid(p.Child(name, "errorCode"), *e.ErrorCode, "must be between 0 and 2147483647, inclusive"))
		}
	}
	return errs
}

// ValidateVolumeAttachmentUpdate: the spec is immutable.
func ValidateVolumeAttachmentUpdate(n, o *VolumeAttachment) v.ErrorList {
	return v.Immutable(v.NewPath("spec"), n.Spec, o.Spec)
}

// ValidateVolumeAttachmentStatus checks a write of the status subresource.
func ValidateVolumeAttachmentStatus(n, _ *VolumeAttachment) v.ErrorList {
	return validateVolumeAttachmentStatus(&n.Status)
}

// VolumeAttributesClass ("storage.k8s.io/v1", cluster-scoped) names a set
// of a CSI driver's volume attributes (IOPS, throughput...) a claim can
// ask for and change (ControllerModifyVolume). Kobune serves the class
// for drivers and clients; a claim's volumeAttributesClassName is not
// supported, since kobune-csi-local has nothing to modify
// (docs/differences.md).
type VolumeAttributesClass struct {
	meta.TypeMeta   `json:",inline"`
	meta.ObjectMeta `json:"metadata"`
	DriverName      string            `json:"driverName"`
	Parameters      map[string]string `json:"parameters,omitempty"`
}

// ValidateVolumeAttributesClass checks the driver's name (as a
// StorageClass's provisioner) and the parameters' count.
func ValidateVolumeAttributesClass(c *VolumeAttributesClass) v.ErrorList {
	errs := v.ValidateObjectMeta(&c.ObjectMeta, false, v.IsDNS1123Subdomain, v.NewPath("metadata"))
	errs = append(errs, validateProvisioner(c.DriverName, v.NewPath("driverName"))...)
	const maxParameters = 512
	if len(c.Parameters) > maxParameters {
		errs = append(errs, v.NewTooMany(v.NewPath("parameters"), len(c.Parameters), maxParameters))
	}
	for k := range c.Parameters {
		if k == "" {
			errs = append(errs, v.NewInvalid(v.NewPath("parameters"), k, "parameter keys must be non-empty"))
		}
	}
	return errs
}

// ValidateVolumeAttributesClassUpdate: driverName and parameters are
// immutable (a claim that names the class keeps what it was given).
func ValidateVolumeAttributesClassUpdate(n, o *VolumeAttributesClass) v.ErrorList {
	return driverAndParametersFixed("driverName", n.DriverName, o.DriverName, n.Parameters, o.Parameters)
}
