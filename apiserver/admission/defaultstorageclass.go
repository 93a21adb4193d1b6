package admission

import (
	"context"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/storage"
)

// StorageClassLister lists the StorageClasses, for DefaultStorageClass.
type StorageClassLister interface {
	StorageClasses(ctx context.Context) ([]*storage.StorageClass, error)
}

// DefaultStorageClass gives a new claim that names no class
// (storageClassName not set at all) the default class — the one annotated
// storageclass.kubernetes.io/is-default-class: "true", the newest if
// several are — as Kubernetes' admission plugin of that name does. A
// claim with storageClassName "" keeps asking for volumes without a class.
type DefaultStorageClass struct {
	Classes StorageClassLister
}

// Name implements Mutator.
func (DefaultStorageClass) Name() string { return "DefaultStorageClass" }

// Admit implements Mutator.
func (d DefaultStorageClass) Admit(ctx context.Context, a *Attributes) error {
	claim, ok := a.Object.(*core.PersistentVolumeClaim)
	if !ok || a.Operation != Create || claim.Spec.StorageClassName != nil || d.Classes == nil {
		return nil
	}
	classes, err := d.Classes.StorageClasses(ctx)
	if err != nil {
		return status.Errorf(codes.Unavailable, "look up the default storage class: %v", err)
	}
	if def, ok := newestDefault(classes, core.AnnDefaultStorageClass); ok {
		name := def.Name
		claim.Spec.StorageClassName = &name
	}
	return nil
}
