package registry

import (
	"context"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/api/scheme"
	"github.com/kobune/kobune/client"
)

// The subresources of pods that write one part of the pod, as
// kube-apiserver's pod strategies for them do: read, each is the pod;
// written (an update, or a patch of the pod), only its part of the
// written pod is taken into the stored one, and the admission validators
// that judge such a write (admission.PodSubresourceValidator) judge it
// instead of the pod's update rules. The write goes the way of every
// update (update.go): preconditions, retries on conflict, the generation
// raised when the spec changed, quota charged in the same transaction,
// managed fields.
const (
	// EphemeralContainersSubresource is pods/NAME/ephemeralcontainers:
	// spec.ephemeralContainers (kubectl debug adds one).
	EphemeralContainersSubresource = "ephemeralcontainers"
	// ResizeSubresource is pods/NAME/resize: the containers' resources
	// and resize policies (an in-place resize, which the node carries out
	// on the running containers).
	ResizeSubresource = "resize"
)

// podParts take each subresource's part of the written pod (in) into a
// copy of the stored one (out).
var podParts = map[string]func(out, in *core.Pod){
	EphemeralContainersSubresource: func(out, in *core.Pod) {
		out.Spec.EphemeralContainers = in.Spec.EphemeralContainers
	},
	ResizeSubresource: func(out, in *core.Pod) {
		// Containers added, removed, renamed or reordered are taken as
		// written, for validation to refuse (kube-apiserver's
		// dropNonResizeUpdates).
		out.Spec.InitContainers = takeResources(out.Spec.InitContainers, in.Spec.InitContainers)
		out.Spec.Containers = takeResources(out.Spec.Containers, in.Spec.Containers)
	},
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

// podPartResources are how writes of the subresources travel in an
// Update request (the gRPC API has no subresource field).
var podPartResources = map[string]string{
	client.PodEphemeralContainersSubresource: EphemeralContainersSubresource,
	client.PodResizeSubresource:              ResizeSubresource,
}

type podPartKey struct{}

// withPodPart marks ctx as a write of one of the pod subresources.
func withPodPart(ctx context.Context, sub string) context.Context {
	return context.WithValue(ctx, podPartKey{}, sub)
}

// podPartOf is the pod subresource ctx writes, or "".
func podPartOf(ctx context.Context) string {
	sub, _ := ctx.Value(podPartKey{}).(string)
	return sub
}

// mergePodPart is mergeUpdate for a pod subresource: the stored pod with
// the written pod's part; in's uid, if any, is a precondition.
func mergePodPart(k *scheme.Kind, sub string, in, old meta.Object) (meta.Object, error) {
	n, o := in.(*core.Pod), old.(*core.Pod)
	if n.UID != "" && n.UID != o.UID {
		return nil, status.Errorf(codes.Aborted, "Precondition failed: UID in precondition: %s, UID in object meta: %s", n.UID, o.UID)
	}
	out := copyObject(k, old).(*core.Pod)
	podParts[sub](out, n)
	return out, nil
}
