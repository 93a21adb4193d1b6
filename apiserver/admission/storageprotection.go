package admission

import (
	"context"
	"slices"

	"github.com/kobune/kobune/api/core"
)

// StorageObjectInUseProtection puts the protection finalizer on every new
// PersistentVolumeClaim (kubernetes.io/pvc-protection) and
// PersistentVolume (kubernetes.io/pv-protection), as the Kubernetes
// admission plugin of that name does: a claim a pod uses, or a volume
// bound to a claim, stays (Terminating) after a delete until
// kobune-controller's protection controller sees it unused and removes
// the finalizer.
type StorageObjectInUseProtection struct{}

// Name implements Mutator.
func (StorageObjectInUseProtection) Name() string { return "StorageObjectInUseProtection" }

// Admit implements Mutator.
func (StorageObjectInUseProtection) Admit(_ context.Context, a *Attributes) error {
	if a.Operation != Create {
		return nil
	}
	m := a.Object.GetObjectMeta()
	switch a.Object.(type) {
	case *core.PersistentVolumeClaim:
		if !slices.Contains(m.Finalizers, core.PVCProtectionFinalizer) {
			m.Finalizers = append(m.Finalizers, core.PVCProtectionFinalizer)
		}
	case *core.PersistentVolume:
		if !slices.Contains(m.Finalizers, core.PVProtectionFinalizer) {
			m.Finalizers = append(m.Finalizers, core.PVProtectionFinalizer)
		}
	}
	return nil
}
