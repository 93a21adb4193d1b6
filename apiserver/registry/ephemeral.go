package registry

import (
	"context"
	"errors"
	"strconv"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/scheme"
	"github.com/kobune/kobune/apiserver/admission"
	"github.com/kobune/kobune/apiserver/apierrors"
	"github.com/kobune/kobune/apiserver/storage"
	"github.com/kobune/kobune/proto/apipb"
)

// EphemeralContainersSubresource is pods/NAME/ephemeralcontainers: read,
// it is the pod; written (update, or a patch of the pod), only the pod's
// spec.ephemeralContainers are taken, as kube-apiserver's
// podEphemeralContainersStrategy does.
const EphemeralContainersSubresource = "ephemeralcontainers"

// updateEphemeralContainers writes in's ephemeral containers into the
// stored pod: judged by the admission validators that judge such writes
// (validation: only additions; Pod Security: the pod with them), the
// pod's generation raised, the rest of the pod as stored. in's
// resourceVersion, if any, is a precondition; without one a conflict is
// retried on the new state.
func (s *Registry) updateEphemeralContainers(ctx context.Context, in *core.Pod, warnings []string, dryRun bool) (*apipb.ObjectResponse, error) {
	k, _ := scheme.ByResource("pods")
	var expected int64
	if in.ResourceVersion != "" {
		var err error
		if expected, err = strconv.ParseInt(in.ResourceVersion, 10, 64); err != nil || expected <= 0 {
			return nil, apierrors.Invalid("metadata.resourceVersion: Invalid value: %q: must be a positive integer", in.ResourceVersion)
		}
	}
	ctx, admitted := admission.WithWarnings(ctx)
	for {
		kv, err := s.store.Get(ctx, objectKey(k, in))
		if err != nil {
			return nil, apierrors.FromStorage(err, k, in.Name)
		}
		if expected != 0 && kv.Revision != expected {
			return nil, apierrors.FromStorage(storage.ErrConflict, k, in.Name)
		}
		stored, err := DecodeStored(k, kv.Value, kv.Revision)
		if err != nil {
			return nil, status.Errorf(codes.Internal, "decode stored pod: %v", err)
		}
		old := stored.(*core.Pod)
		if in.UID != "" && in.UID != old.UID {
			return nil, status.Errorf(codes.Aborted, "Precondition failed: UID in precondition: %s, UID in object meta: %s", in.UID, old.UID)
		}
		out := copyObject(k, old).(*core.Pod)
		out.Spec.EphemeralContainers = in.Spec.EphemeralContainers
		if err := s.admission.AdmitEphemeralContainers(ctx, &admission.Attributes{Operation: admission.Update, Kind: k, Object: out, OldObject: old}); err != nil {
			return nil, err
		}
		if len(out.Spec.EphemeralContainers) != len(old.Spec.EphemeralContainers) {
			out.Generation = old.Generation + 1 // one added (validation refused any other change)
		}
		rev := kv.Revision
		if !dryRun {
			b, err := encodeForStorage(out)
			if err != nil {
				return nil, status.Errorf(codes.Internal, "encode pod: %v", err)
			}
			rev, err = s.store.Update(ctx, kv.Key, b, kv.Revision)
			if errors.Is(err, storage.ErrConflict) && expected == 0 {
				continue // written in between: add to the new state
			}
			if err != nil {
				return nil, apierrors.FromStorage(err, k, in.Name)
			}
		}
		b, err := encodeWithRevision(out, rev)
		if err != nil {
			return nil, status.Errorf(codes.Internal, "encode pod: %v", err)
		}
		return &apipb.ObjectResponse{Object: b, Warnings: append(warnings, *admitted...)}, nil
	}
}
