package storagemigration

import (
	"github.com/kobune/kobune/api/meta"
	v "github.com/kobune/kobune/api/validation"
)

// StorageVersionMigration asks for one resource's objects to be stored
// again.
type StorageVersionMigration struct {
	meta.TypeMeta   `json:",inline"`
	meta.ObjectMeta `json:"metadata"`
	Spec            StorageVersionMigrationSpec   `json:"spec"`
	Status          StorageVersionMigrationStatus `json:"status"` // always written, as Kubernetes writes it: a JSON patch adds to /status/conditions
}

// StorageVersionMigrationSpec names the resource (it may not change).
type StorageVersionMigrationSpec struct {
	Resource GroupResource `json:"resource"`
}

// GroupResource is a resource of a group ("" for the core group).
type GroupResource struct {
	Group    string `json:"group"`
	Resource string `json:"resource"`
}

// StorageVersionMigrationStatus is the migration's progress: Running,
// then Succeeded or Failed; resourceVersion is the revision the
// migration listed at.
type StorageVersionMigrationStatus struct {
	Conditions      []Condition `json:"conditions,omitempty"`
	ResourceVersion string      `json:"resourceVersion,omitempty"`
}

// Condition is a meta.k8s.io/v1 Condition.
type Condition = meta.Condition

// The conditions.
const (
	Running   = "Running"
	Succeeded = "Succeeded"
	Failed    = "Failed"
)

// Validate checks a StorageVersionMigration as kube-apiserver does.
func Validate(m *StorageVersionMigration) v.ErrorList {
	errs := v.ValidateObjectMeta(&m.ObjectMeta, false, v.IsDNS1123Subdomain, v.NewPath("metadata"))
	p := v.NewPath("spec", "resource")
	if m.Spec.Resource.Resource == "" {
		errs = append(errs, v.NewRequired(p.Child("resource"), "resource is required"))
	}
	return errs
}

// ValidateUpdate adds that the spec may not change.
func ValidateUpdate(n, o *StorageVersionMigration) v.ErrorList {
	if n.Spec != o.Spec {
		return v.ErrorList{v.NewInvalid(v.NewPath("spec"), n.Spec, "field is immutable")}
	}
	return nil
}

// ValidateStatus checks a status write: conditions are meta.k8s.io
// Conditions (a type, True/False/Unknown, a reason), and a migration that
// succeeded or failed does not run again.
func ValidateStatus(n, _ *StorageVersionMigration) v.ErrorList {
	return v.Conditions(n.Status.Conditions, v.NewPath("status", "conditions"))
}
