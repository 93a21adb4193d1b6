package registry

import (
	"context"
	"errors"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/api/scheme"
	"github.com/kobune/kobune/api/validation"
	"github.com/kobune/kobune/apiserver/apierrors"
	"github.com/kobune/kobune/apiserver/storage"
	"github.com/kobune/kobune/proto/apipb"
)

// Bind implements the pods/binding subresource: it sets spec.nodeName once,
// copies the binding's annotations onto the pod (as kube-apiserver does) and
// marks the pod PodScheduled, retrying internally on write conflicts
// (the pod's status may change while the scheduler decides).
func (s *Registry) Bind(ctx context.Context, req *apipb.BindRequest) (*apipb.ObjectResponse, error) {
	k, _ := scheme.ByResource("pods")
	if req.NodeName == "" {
		return nil, apierrors.Invalid("target.name: Required value: the node to bind to")
	}
	// A node name must be one a Node can have: "A B/C" would leave a pod
	// that no later update could pass validation with.
	if msg := validation.IsDNS1123Subdomain(req.NodeName); msg != "" {
		return nil, apierrors.Invalid("target.name: Invalid value: %q: %s", req.NodeName, msg)
	}
	ns := req.Namespace
	if ns == "" {
		ns = "default"
	}
	if errs := validation.ValidateObjectMeta(&meta.ObjectMeta{Name: req.Name, Namespace: ns, Annotations: req.Annotations}, true,
		validation.IsDNS1123Subdomain, validation.NewPath("metadata")); len(errs) > 0 {
		return nil, apierrors.Invalid("Binding %q is invalid: %v", req.Name, errs.ToError())
	}
	key := storage.Key("pods", ns, req.Name)
	for {
		kv, err := s.store.Get(ctx, key)
		if err != nil {
			return nil, apierrors.FromStorage(err, k, req.Name)
		}
		o, err := DecodeStored(k, kv.Value, kv.Revision)
		if err != nil {
			return nil, status.Errorf(codes.Internal, "decode pod: %v", err)
		}
		pod := o.(*core.Pod)
		if req.Uid != "" && pod.UID != req.Uid {
			return nil, status.Errorf(codes.Aborted, "Precondition failed: UID in precondition: %s, UID in object meta: %s", req.Uid, pod.UID)
		}
		if pod.DeletionTimestamp != nil {
			return nil, status.Errorf(codes.Aborted, "pod %s/%s is being deleted, cannot be assigned to a host", ns, req.Name)
		}
		if pod.Spec.NodeName != "" {
			return nil, status.Errorf(codes.Aborted, "pod %s/%s is already assigned to node %q", ns, req.Name, pod.Spec.NodeName)
		}
		if len(pod.Spec.SchedulingGates) > 0 {
			return nil, status.Errorf(codes.FailedPrecondition, "pod %s/%s has non-empty .spec.schedulingGates: it is not to be bound until they are all removed", ns, req.Name)
		}
		pod.Spec.NodeName = req.NodeName
		for k, v := range req.Annotations {
			if pod.Annotations == nil {
				pod.Annotations = map[string]string{}
			}
			pod.Annotations[k] = v
		}
		setPodScheduled(pod)
		b, err := encodeForStorage(pod)
		if err != nil {
			return nil, status.Errorf(codes.Internal, "encode pod: %v", err)
		}
		rev, err := s.store.Update(ctx, key, b, kv.Revision)
		if errors.Is(err, storage.ErrConflict) {
			continue
		}
		if err != nil {
			return nil, apierrors.FromStorage(err, k, req.Name)
		}
		out, err := encodeWithRevision(pod, rev)
		if err != nil {
			return nil, err
		}
		return &apipb.ObjectResponse{Object: out}, nil
	}
}

func setPodScheduled(p *core.Pod) {
	now := meta.Now()
	for i, c := range p.Status.Conditions {
		if c.Type == core.PodScheduled {
			p.Status.Conditions[i].Status = meta.ConditionTrue
			p.Status.Conditions[i].LastTransitionTime = now
			p.Status.Conditions[i].Reason, p.Status.Conditions[i].Message = "", ""
			return
		}
	}
	p.Status.Conditions = append(p.Status.Conditions, core.PodCondition{Type: core.PodScheduled, Status: meta.ConditionTrue, LastTransitionTime: now})
}
