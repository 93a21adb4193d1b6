package admission

import (
	"context"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/resource"
)

// PersistentVolumeClaimResize lets a claim's spec.resources.requests.storage
// grow only where a volume can follow, as Kubernetes' admission plugin of
// that name: the claim is bound and its StorageClass has
// allowVolumeExpansion: true. The class's provisioner (its resizer) then
// expands the volume.
type PersistentVolumeClaimResize struct {
	Classes StorageClassLister
}

// Name implements Validator.
func (PersistentVolumeClaimResize) Name() string { return "PersistentVolumeClaimResize" }

// Validate implements Validator.
func (r PersistentVolumeClaimResize) Validate(ctx context.Context, a *Attributes) error {
	claim, ok := a.Object.(*core.PersistentVolumeClaim)
	if !ok || a.Operation != Update {
		return nil
	}
	old := a.OldObject.(*core.PersistentVolumeClaim)
	n, o := claim.Spec.Resources.Requests[resource.Name("storage")], old.Spec.Resources.Requests[resource.Name("storage")]
	if n.Cmp(o) <= 0 {
		return nil // shrinking is refused by validation
	}
	if old.Spec.VolumeName == "" {
		return status.Errorf(codes.PermissionDenied, "persistentvolumeclaims %q is forbidden: spec.resources.requests.storage: an unbound claim cannot be resized (spec is immutable after creation except resources.requests of a bound claim)", claim.Name)
	}
	refuse := status.Errorf(codes.PermissionDenied, "persistentvolumeclaims %q is forbidden: only dynamically provisioned pvc can be resized and the storageclass that provisions the pvc must support resize (allowVolumeExpansion: true)", claim.Name)
	if r.Classes == nil || core.ClaimClass(claim) == "" {
		return refuse
	}
	classes, err := r.Classes.StorageClasses(ctx)
	if err != nil {
		return status.Errorf(codes.Unavailable, "look up storage class %q: %v", core.ClaimClass(claim), err)
	}
	for _, c := range classes {
		if c.Name == core.ClaimClass(claim) && c.AllowVolumeExpansion != nil && *c.AllowVolumeExpansion {
			return nil
		}
	}
	return refuse
}
