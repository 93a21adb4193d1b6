package storage

import (
	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	v "github.com/kobune/kobune/api/validation"
)

// VolumeBindingMode is when a class's claims are bound.
type VolumeBindingMode string

// Binding modes.
const (
	// Immediate binds (or provisions) a claim as soon as it is made.
	Immediate VolumeBindingMode = "Immediate"
	// WaitForFirstConsumer waits until a pod using the claim is
	// scheduled, so a local volume is made on the pod's node.
	WaitForFirstConsumer VolumeBindingMode = "WaitForFirstConsumer"
)

// StorageClass is a kind of storage claims can ask for.
type StorageClass struct {
	meta.TypeMeta     `json:",inline"`
	meta.ObjectMeta   `json:"metadata"`
	Provisioner       string             `json:"provisioner"`
	VolumeBindingMode *VolumeBindingMode `json:"volumeBindingMode,omitempty"`
	// ReclaimPolicy and Parameters go to the volumes a provisioner makes,
	// AllowVolumeExpansion lets claims grow: not yet (no provisioner runs).
	ReclaimPolicy        *core.PersistentVolumeReclaimPolicy `json:"reclaimPolicy,omitempty" kobune:"unsupported"`
	Parameters           map[string]string                   `json:"parameters,omitempty" kobune:"unsupported"`
	AllowVolumeExpansion *bool                               `json:"allowVolumeExpansion,omitempty" kobune:"unsupported"`
	// MountOptions and AllowedTopologies are not supported yet.
	MountOptions      []string `json:"mountOptions,omitempty" kobune:"unsupported"`
	AllowedTopologies []any    `json:"allowedTopologies,omitempty" kobune:"unsupported"`
}

// SetDefaultsStorageClass defaults reclaimPolicy to Delete and
// volumeBindingMode to Immediate, as Kubernetes does.
func SetDefaultsStorageClass(sc *StorageClass) {
	if sc.ReclaimPolicy == nil {
		p := core.ReclaimDelete
		sc.ReclaimPolicy = &p
	}
	if sc.VolumeBindingMode == nil {
		m := Immediate
		sc.VolumeBindingMode = &m
	}
}

// ValidateStorageClass checks the provisioner and the policies.
func ValidateStorageClass(sc *StorageClass) v.ErrorList {
	errs := v.ValidateObjectMeta(&sc.ObjectMeta, false, v.IsDNS1123Subdomain, v.NewPath("metadata"))
	if sc.Provisioner == "" {
		errs = append(errs, v.NewRequired(v.NewPath("provisioner"), ""))
	} else if msg := v.IsDNS1123Subdomain(sc.Provisioner); msg != "" && sc.Provisioner != "kubernetes.io/no-provisioner" {
		errs = append(errs, v.NewInvalid(v.NewPath("provisioner"), sc.Provisioner, msg))
	}
	if p := sc.ReclaimPolicy; p != nil && *p != core.ReclaimDelete && *p != core.ReclaimRetain {
		errs = append(errs, v.NewNotSupported(v.NewPath("reclaimPolicy"), string(*p), []string{string(core.ReclaimDelete), string(core.ReclaimRetain)}))
	}
	if m := sc.VolumeBindingMode; m != nil && *m != Immediate && *m != WaitForFirstConsumer {
		errs = append(errs, v.NewNotSupported(v.NewPath("volumeBindingMode"), string(*m), []string{string(Immediate), string(WaitForFirstConsumer)}))
	}
	return errs
}

// ValidateStorageClassUpdate: provisioner, parameters, reclaimPolicy and
// volumeBindingMode are immutable, as in Kubernetes.
func ValidateStorageClassUpdate(n, o *StorageClass) v.ErrorList {
	var errs v.ErrorList
	if n.Provisioner != o.Provisioner {
		errs = append(errs, v.NewForbidden(v.NewPath("provisioner"), "updates to provisioner are forbidden"))
	}
	if len(n.Parameters) != len(o.Parameters) {
		errs = append(errs, v.NewForbidden(v.NewPath("parameters"), "updates to parameters are forbidden"))
	} else {
		for k, val := range n.Parameters {
			if o.Parameters[k] != val {
				errs = append(errs, v.NewForbidden(v.NewPath("parameters"), "updates to parameters are forbidden"))
				break
			}
		}
	}
	if *n.ReclaimPolicy != *o.ReclaimPolicy {
		errs = append(errs, v.NewForbidden(v.NewPath("reclaimPolicy"), "updates to reclaimPolicy are forbidden"))
	}
	if *n.VolumeBindingMode != *o.VolumeBindingMode {
		errs = append(errs, v.NewForbidden(v.NewPath("volumeBindingMode"), "updates to volumeBindingMode are forbidden"))
	}
	return errs
}
