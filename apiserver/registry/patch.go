package registry

import (
	"bytes"
	"context"
	"errors"
	"strconv"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kobune/kobune/api/k8sapi"
	"github.com/kobune/kobune/api/patch"
	"github.com/kobune/kobune/api/scheme"
	"github.com/kobune/kobune/apiserver/admission"
	"github.com/kobune/kobune/apiserver/apierrors"
	"github.com/kobune/kobune/apiserver/storage"
	"github.com/kobune/kobune/proto/apipb"
)

// maxPatchAttempts bounds the retries of a patch that met a concurrent
// write (Kubernetes retries the same way).
const maxPatchAttempts = 10

// Patch implements the Patch RPC: the patch is applied to the stored
// object, and the result goes the way of an update — decoding with field
// validation, admission, validation — written only if the object is
// still the one the patch was applied to. A patch that does not name a
// resourceVersion is applied again to the new object after a conflict.
func (s *Registry) Patch(ctx context.Context, req *apipb.PatchRequest) (*apipb.ObjectResponse, error) {
	k, ok := s.cfg.Kinds.ByResource(req.Resource)
	if !ok {
		return nil, apierrors.Invalid("unknown resource %q (see kobectl api-resources)", req.Resource)
	}
	statusOnly := false
	switch req.Subresource {
	case "":
	case "scale":
		if !Scalable(k) {
			return nil, apierrors.Invalid("%s has no scale subresource", k.Kind)
		}
	case "status":
		if !k.HasStatus {
			return nil, apierrors.Invalid("%s has no status subresource", k.Kind)
		}
		statusOnly = true
	case EphemeralContainersSubresource, ResizeSubresource, ApprovalSubresource:
		if !IsPart(k.Resource, req.Subresource) || k.Custom != nil || req.PatchType == patch.ApplyPatchType {
			return nil, apierrors.Invalid("%s has no %s subresource to patch this way", k.Kind, req.Subresource)
		}
		ctx = withPart(ctx, req.Subresource)
	default:
		return nil, apierrors.Invalid("subresource %q cannot be patched", req.Subresource)
	}
	if len(req.Patch) > MaxObjectBytes {
		return nil, TooLarge(len(req.Patch))
	}
	ns := req.Namespace
	if !k.Namespaced {
		ns = ""
	} else if ns == "" {
		ns = "default"
	}
	if req.PatchType == patch.ApplyPatchType {
		return s.apply(ctx, k, ns, req)
	}
	if k.Custom != nil && req.PatchType == patch.StrategicMergePatchType {
		// As in Kubernetes: a schema has no merge keys to merge lists by.
		return nil, apierrors.WithReason(codes.InvalidArgument, apierrors.ReasonUnsupportedMediaType,
			"the body of the request was in an unknown format - accepted media types include: %s, %s, %s", patch.JSONPatchType, patch.MergePatchType, patch.ApplyPatchType)
	}
	ctx = withFieldManager(ctx, req.FieldManager, false)
	kt, _ := k8sapi.ForKind(k.APIVersion, k.Kind)
	namesRevision := bytes.Contains(req.Patch, []byte(`"resourceVersion"`))
	for attempt := 1; ; attempt++ {
		kv, err := s.store.Get(ctx, storage.Key(k.Resource, ns, req.Name))
		if err != nil {
			return nil, apierrors.FromStorage(err, k, req.Name)
		}
		current, err := answered(ctx, k, kv.Value, kv.Revision)
		if err != nil {
			return nil, err
		}
		var patched []byte
		if req.Subresource == "scale" {
			patched, err = patchScale(k, current, req, kv.Revision)
		} else {
			patched, err = patch.Apply(req.PatchType, current, req.Patch, kt)
		}
		var tooLarge *patch.TooLargeError
		switch {
		case errors.As(err, &tooLarge):
			return nil, apierrors.WithReason(codes.ResourceExhausted, apierrors.ReasonRequestEntityTooLarge, "%s %q: %v", k.Kind, req.Name, err)
		case err != nil:
			if _, ok := status.FromError(err); ok {
				return nil, err
			}
			return nil, status.Errorf(codes.InvalidArgument, "%s %q: the patch cannot be applied: %v", k.Kind, req.Name, err)
		}
		_, o, warnings, err := decodeRequest(ctx, s.cfg.Kinds, req.Resource, ns, patched, req.FieldValidation)
		if err != nil {
			return nil, err
		}
		if m := o.GetObjectMeta(); m.Name != req.Name {
			return nil, apierrors.Invalid("metadata.name: Invalid value: %q: a patch cannot change the name (%q)", m.Name, req.Name)
		}
		actx, admitted := admission.WithWarnings(ctx)
		out, err := s.update(actx, k, o, statusOnly, req.DryRun)
		if err == nil && req.Subresource == "scale" {
			out, err = scaleOf(k, out)
		}
		if status.Code(err) == codes.Aborted && !namesRevision && attempt < maxPatchAttempts {
			continue // written in between: apply the patch to what is there now
		}
		if errors.Is(err, context.Canceled) {
			return nil, status.Error(codes.Canceled, err.Error())
		}
		if err != nil {
			return nil, err
		}
		return &apipb.ObjectResponse{Object: out, Warnings: append(warnings, *admitted...)}, nil
	}
}

// patchScale applies a patch to the Scale of current and returns current
// with the Scale's replicas; a Scale that names another resourceVersion
// is a conflict.
func patchScale(k *scheme.Kind, current []byte, req *apipb.PatchRequest, rev int64) ([]byte, error) {
	sc, err := scaleOf(k, current)
	if err != nil {
		return nil, err
	}
	st, _ := k8sapi.ForKind("autoscaling/v1", "Scale")
	if sc, err = patch.Apply(req.PatchType, sc, req.Patch, st); err != nil {
		return nil, err
	}
	rp, rv, err := replicasPatch(k, sc)
	if err != nil {
		return nil, apierrors.Invalid("%v", err)
	}
	if rv != "" && rv != strconv.FormatInt(rev, 10) {
		return nil, apierrors.FromStorage(storage.ErrConflict, k, req.Name)
	}
	return patch.Apply(patch.MergePatchType, current, rp, nil)
}
