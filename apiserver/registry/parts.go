package registry

import (
	"context"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kobune/kobune/api/certificates"
	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/api/scheme"
	"github.com/kobune/kobune/client"
)

// The subresources that write one part of an object, as kube-apiserver's
// strategies for them do: read, each is the object; written (an update,
// or a patch of the object), only its part of the written object is taken
// into the stored one, and the admission validators that judge such a
// write (admission.SubresourceValidator) judge it instead of the kind's
// update rules. The write goes the way of every update (update.go):
// preconditions, retries on conflict, the generation raised when the spec
// changed, quota charged in the same transaction, managed fields.
const (
	// EphemeralContainersSubresource is pods/NAME/ephemeralcontainers:
	// spec.ephemeralContainers (kubectl debug adds one).
	EphemeralContainersSubresource = "ephemeralcontainers"
	// ResizeSubresource is pods/NAME/resize: the containers' resources
	// and resize policies (an in-place resize, which the node carries out
	// on the running containers).
	ResizeSubresource = "resize"
	// ApprovalSubresource is certificatesigningrequests/NAME/approval:
	// status.conditions (Approved, Denied, and others), with the labels
	// and annotations (kubectl certificate approve writes it).
	ApprovalSubresource = "approval"
)

// parts take each subresource's part of the written object (in) into a
// copy of the stored one (out), by resource and subresource.
var parts = map[string]map[string]func(out, in meta.Object){
	"pods": {
		EphemeralContainersSubresource: func(out, in meta.Object) {
			out.(*core.Pod).Spec.EphemeralContainers = in.(*core.Pod).Spec.EphemeralContainers
		},
		ResizeSubresource: func(out, in meta.Object) {
			// Containers added, removed, renamed or reordered are taken as
			// written, for validation to refuse (kube-apiserver's
			// dropNonResizeUpdates).
			o, n := out.(*core.Pod), in.(*core.Pod)
			o.Spec.InitContainers = takeResources(o.Spec.InitContainers, n.Spec.InitContainers)
			o.Spec.Containers = takeResources(o.Spec.Containers, n.Spec.Containers)
		},
	},
	"certificatesigningrequests": {
		ApprovalSubresource: func(out, in meta.Object) {
			o, n := out.(*certificates.CertificateSigningRequest), in.(*certificates.CertificateSigningRequest)
			o.Status.Conditions = n.Status.Conditions
			o.Labels, o.Annotations = n.Labels, n.Annotations
		},
	},
}

// IsPart says whether resource/sub is one of these subresources.
func IsPart(resource, sub string) bool {
	_, ok := parts[resource][sub]
	return ok
}

func takeResources(stored, written []core.Container) []core.Container {
	if len(stored) != len(written) {
		return written
	}
	out := make([]core.Container, len(stored))
	for i := range stored {
		if stored[i].Name != written[i].Name {
			return written
		}
		out[i] = stored[i]
		out[i].Resources, out[i].ResizePolicy = written[i].Resources, written[i].ResizePolicy
	}
	return out
}

// partResources are how writes of the subresources travel in an Update
// request (the gRPC API has no subresource field).
var partResources = map[string]string{
	client.PodEphemeralContainersSubresource: EphemeralContainersSubresource,
	client.PodResizeSubresource:              ResizeSubresource,
	client.CSRApprovalSubresource:            ApprovalSubresource,
}

type partKey struct{}

// withPart marks ctx as a write of one of these subresources.
func withPart(ctx context.Context, sub string) context.Context {
	return context.WithValue(ctx, partKey{}, sub)
}

// partOf is the subresource ctx writes, or "".
func partOf(ctx context.Context) string {
	sub, _ := ctx.Value(partKey{}).(string)
	return sub
}

// mergePart is mergeUpdate for such a subresource: the stored object with
// the written object's part; in's uid, if any, is a precondition.
func mergePart(k *scheme.Kind, sub string, in, old meta.Object) (meta.Object, error) {
	im, om := in.GetObjectMeta(), old.GetObjectMeta()
	if im.UID != "" && im.UID != om.UID {
		return nil, status.Errorf(codes.Aborted, "Precondition failed: UID in precondition: %s, UID in object meta: %s", im.UID, om.UID)
	}
	out := copyObject(k, old)
	parts[k.Resource][sub](out, in)
	return out, nil
}
