package storage

import (
	"strings"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/api/selector"
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
	// ReclaimPolicy goes to the volumes a provisioner makes; Parameters go
	// to the driver's CreateVolume.
	ReclaimPolicy *core.PersistentVolumeReclaimPolicy `json:"reclaimPolicy,omitempty"`
	Parameters    map[string]string                   `json:"parameters,omitempty"`
	// AllowVolumeExpansion lets bound claims grow (the API server's
	// PersistentVolumeClaimResize admission; the provisioner's resizer
	// expands the volume).
	AllowVolumeExpansion *bool `json:"allowVolumeExpansion,omitempty"`
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
	errs = append(errs, validateProvisioner(sc.Provisioner, v.NewPath("provisioner"))...)
	if p := sc.ReclaimPolicy; p != nil && *p != core.ReclaimDelete && *p != core.ReclaimRetain {
		errs = append(errs, v.NewNotSupported(v.NewPath("reclaimPolicy"), string(*p), []string{string(core.ReclaimDelete), string(core.ReclaimRetain)}))
	}
	if m := sc.VolumeBindingMode; m != nil && *m != Immediate && *m != WaitForFirstConsumer {
		errs = append(errs, v.NewNotSupported(v.NewPath("volumeBindingMode"), string(*m), []string{string(Immediate), string(WaitForFirstConsumer)}))
	}
	return errs
}

// validateProvisioner checks a provisioner's or a driver's name: a
// qualified name, as Kubernetes checks it (csi.example.com or
// example.com/driver).
func validateProvisioner(name string, p *v.Path) v.ErrorList {
	if name == "" {
		return v.ErrorList{v.NewRequired(p, "")}
	}
	if err := selector.ValidLabelKey(strings.ToLower(name)); err != nil {
		return v.ErrorList{v.NewInvalid(p, name, err.Error())}
	}
	return nil
}

// driverAndParametersFixed forbids changing a class's driver (named by
// field) or its parameters: volumes made from the class keep what they
// were given (StorageClass, VolumeAttributesClass).
func driverAndParametersFixed(field, n, o string, nParams, oParams map[string]string) v.ErrorList {
	var errs v.ErrorList
	if n != o {
		errs = append(errs, v.NewForbidden(v.NewPath(field), "updates to "+field+" are forbidden"))
	}
	if !v.JSONEqual(nParams, oParams) {
		errs = append(errs, v.NewForbidden(v.NewPath("parameters"), "updates to parameters are forbidden"))
	}
	return errs
}

// ValidateStorageClassUpdate: provisioner, parameters, reclaimPolicy and
// volumeBindingMode are immutable, as in Kubernetes.
func ValidateStorageClassUpdate(n, o *StorageClass) v.ErrorList {
	errs := driverAndParametersFixed("provisioner", n.Provisioner, o.Provisioner, n.Parameters, o.Parameters)
	if *n.ReclaimPolicy != *o.ReclaimPolicy {
		errs = append(errs, v.NewForbidden(v.NewPath("reclaimPolicy"), "updates to reclaimPolicy are forbidden"))
	}
	if *n.VolumeBindingMode != *o.VolumeBindingMode {
		errs = append(errs, v.NewForbidden(v.NewPath("volumeBindingMode"), "updates to volumeBindingMode are forbidden"))
	}
	return errs
}

// CSINode is what CSI drivers a node has (storage.k8s.io/v1): kobune-agent
// writes it, named as its Node and owned by it, when it finds a driver's
// socket, from the driver's NodeGetInfo.
type CSINode struct {
	meta.TypeMeta   `json:",inline"`
	meta.ObjectMeta `json:"metadata"`
	Spec            CSINodeSpec `json:"spec"`
}

// CSINodeSpec lists the node's drivers.
type CSINodeSpec struct {
	Drivers []CSINodeDriver `json:"drivers"`
}

// CSINodeDriver is one driver on the node.
type CSINodeDriver struct {
	Name string `json:"name"`
	// NodeID is the node's name for the driver.
	NodeID string `json:"nodeID"`
	// TopologyKeys are the node labels the driver's topology sets (the
	// agent adds them to the Node, with the values NodeGetInfo gave).
	TopologyKeys []string `json:"topologyKeys"`
	// Allocatable is how many of the driver's volumes the node takes.
	Allocatable *VolumeNodeResources `json:"allocatable,omitempty"`
}

// VolumeNodeResources is a driver's volume limit on a node.
type VolumeNodeResources struct {
	Count *int32 `json:"count,omitempty"`
}

// ValidateCSINode checks the driver list: names and node ids set, each
// driver once.
func ValidateCSINode(n *CSINode) v.ErrorList {
	errs := v.ValidateObjectMeta(&n.ObjectMeta, false, v.IsDNS1123Subdomain, v.NewPath("metadata"))
	seen := map[string]bool{}
	for i, d := range n.Spec.Drivers {
		p := v.NewPath("spec", "drivers").Index(i)
		if d.Name == "" {
			errs = append(errs, v.NewRequired(p.Child("name"), ""))
		} else if msg := v.IsDNS1123Subdomain(d.Name); msg != "" {
			errs = append(errs, v.NewInvalid(p.Child("name"), d.Name, msg))
		} else if seen[d.Name] {
			errs = append(errs, v.NewDuplicate(p.Child("name"), d.Name))
		}
		seen[d.Name] = true
		if d.NodeID == "" {
			errs = append(errs, v.NewRequired(p.Child("nodeID"), ""))
		}
		if a := d.Allocatable; a != nil && a.Count != nil && *a.Count < 0 {
			errs = append(errs, v.NewInvalid(p.Child("allocatable", "count"), *a.Count, "must be greater than or equal to 0"))
		}
	}
	return errs
}
