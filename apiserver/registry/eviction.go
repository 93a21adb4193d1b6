package registry

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/api/policy"
	"github.com/kobune/kobune/api/scheme"
	"github.com/kobune/kobune/api/selector"
	"github.com/kobune/kobune/apiserver/apierrors"
	"github.com/kobune/kobune/apiserver/storage"
	"github.com/kobune/kobune/proto/apipb"
)

// The eviction subresource (POST pods/NAME/eviction, policy/v1
// Eviction): a pod is deleted only if the PodDisruptionBudget that
// selects it allows one more disruption; the budget's status is charged
// first (disruptionsAllowed − 1, the pod in disruptedPods, with a
// compare-and-swap), then the pod is deleted, as Kubernetes does. A pod
// that is not running yet or has finished, or that no budget selects,
// is simply deleted. Refusals are 429 TooManyRequests naming the budget;
// clients (kobectl drain) retry.

// errBudget is Kubernetes' refusal text; Kobune adds the budget's numbers.
const errBudget = "Cannot evict pod as it would violate the pod's disruption budget."

func (s *Registry) createEviction(ctx context.Context, req *apipb.CreateRequest) (*apipb.ObjectResponse, error) {
	var ev policy.Eviction
	if err := json.Unmarshal(req.Object, &ev); err != nil {
		return nil, apierrors.Invalid("Eviction: %v", err)
	}
	ns := req.Namespace
	if ns == "" {
		ns = ev.Namespace
	}
	if ns == "" {
		ns = "default"
	}
	if ev.Name == "" {
		return nil, apierrors.Invalid("Eviction: metadata.name (the pod's) is required")
	}
	podKind, pdbKind := kindOfResource("pods"), kindOfResource("poddisruptionbudgets")
	var grace *int64
	if ev.DeleteOptions != nil {
		grace = ev.DeleteOptions.GracePeriodSeconds
	}
	for attempt := 0; ; attempt++ {
		kv, err := s.store.Get(ctx, storage.Key("pods", ns, ev.Name))
		if err != nil {
			return nil, apierrors.FromStorage(err, podKind, ev.Name)
		}
		o, err := DecodeStored(podKind, kv.Value, kv.Revision)
		if err != nil {
			return nil, status.Errorf(codes.Internal, "decode pod: %v", err)
		}
		pod := o.(*core.Pod)
		evict := func() (*apipb.ObjectResponse, error) {
			if _, err := s.delete(ctx, podKind, ns, pod.Name, deleteOptions{uid: pod.UID, grace: grace}); err != nil {
				return nil, err
			}
			b, _ := json.Marshal(map[string]any{"kind": "Status", "apiVersion": "v1", "metadata": map[string]any{}, "status": "Success"})
			return &apipb.ObjectResponse{Object: b}, nil
		}
		if pod.DeletionTimestamp != nil || pod.Status.Phase == core.PodSucceeded || pod.Status.Phase == core.PodFailed || pod.Status.Phase == core.PodPending || pod.Status.Phase == "" {
			return evict() // no budget protects a pod that is not running
		}
		budgets, err := ListStoredIn[*policy.PodDisruptionBudget](ctx, s.store, "poddisruptionbudgets", ns)
		if err != nil {
			return nil, apierrors.FromStorage(err, pdbKind, "")
		}
		var matching []*policy.PodDisruptionBudget
		for _, b := range budgets {
			if b.Spec.Selector == nil {
				continue // a nil selector selects nothing in policy/v1
			}
			sel, err := selector.FromLabelSelector(b.Spec.Selector)
			if err == nil && sel.Matches(pod.Labels) {
				matching = append(matching, b)
			}
		}
		if len(matching) > 1 {
			return nil, status.Errorf(codes.Internal, "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.")
		}
		if len(matching) == 0 {
			return evict()
		}
		b := matching[0]
		if !podReady(pod) {
			policyName := policy.IfHealthyBudget
			if b.Spec.UnhealthyPodEvictionPolicy != nil {
				policyName = *b.Spec.UnhealthyPodEvictionPolicy
			}
			if policyName == policy.AlwaysAllow || (b.Status.CurrentHealthy >= b.Status.DesiredHealthy && b.Status.DesiredHealthy > 0) {
				return evict() // an unready pod adds nothing to the budget
			}
		}
		if b.Status.ObservedGeneration < b.Generation {
			return nil, apierrors.WithCause(codes.ResourceExhausted, policy.DisruptionBudgetCause, fmt.Sprintf("The disruption budget %s is still being processed by the server.", b.Name),
				"%s (the disruption budget %s is still being processed by the server)", errBudget, b.Name)
		}
		if b.Status.DisruptionsAllowed <= 0 {
			return nil, apierrors.WithCause(codes.ResourceExhausted, policy.DisruptionBudgetCause,
				fmt.Sprintf("The disruption budget %s needs %d healthy pods and has %d currently", b.Name, b.Status.DesiredHealthy, b.Status.CurrentHealthy),
				"%s (the disruption budget %s needs %d healthy pods and has %d currently)", errBudget, b.Name, b.Status.DesiredHealthy, b.Status.CurrentHealthy)
		}
		b.Status.DisruptionsAllowed--
		if b.Status.DisruptedPods == nil {
			b.Status.DisruptedPods = map[string]meta.Time{}
		}
		b.Status.DisruptedPods[pod.Name] = meta.Time{Time: time.Now().UTC().Truncate(time.Second)}
		if _, err := s.update(ctx, pdbKind, b, true, false); err != nil {
			if status.Code(err) == codes.Aborted && attempt < 10 {
				continue // the budget moved (another eviction, the controller): judge again
			}
			return nil, err
		}
		return evict()
	}
}

func podReady(p *core.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == core.PodReady {
			return c.Status == meta.ConditionTrue
		}
	}
	return false
}

func kindOfResource(resource string) *scheme.Kind { k, _ := scheme.ByResource(resource); return k }
