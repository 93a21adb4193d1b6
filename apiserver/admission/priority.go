package admission

import (
	"context"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/scheduling"
)

// PriorityClassGetter reads one PriorityClass.
type PriorityClassGetter interface {
	PriorityClass(ctx context.Context, name string) (*scheduling.PriorityClass, bool, error)
}

// Priority resolves a new pod's priorityClassName into spec.priority and
// spec.preemptionPolicy, as Kubernetes' Priority admission plugin does; a
// pod may not set spec.priority itself to anything else. (Kubernetes also
// applies a globalDefault class to pods that name none; Kobune gives them
// priority 0 — see docs/differences.md.)
type Priority struct {
	Classes PriorityClassGetter
}

// Name implements Mutator.
func (Priority) Name() string { return "Priority" }

// Admit implements Mutator.
func (p Priority) Admit(ctx context.Context, a *Attributes) error {
	pod, ok := a.Object.(*core.Pod)
	if !ok || a.Operation != Create {
		return nil
	}
	value := int32(0)
	if name := pod.Spec.PriorityClassName; name != "" {
		pc, found, err := p.Classes.PriorityClass(ctx, name)
		if err != nil {
			return status.Errorf(codes.Unavailable, "look up PriorityClass %q: %v", name, err)
		}
		if !found {
			return status.Errorf(codes.FailedPrecondition, "pods %q is forbidden: no PriorityClass with name %s was found", pod.Name, name)
		}
		value = pc.Value
		if pod.Spec.PreemptionPolicy == nil && pc.PreemptionPolicy != nil {
			policy := *pc.PreemptionPolicy
			pod.Spec.PreemptionPolicy = &policy
		}
	}
	if pod.Spec.Priority != nil && *pod.Spec.Priority != value {
		return status.Errorf(codes.FailedPrecondition, "pods %q is forbidden: the integer value of priority (%d) must not be provided in pod spec; priority admission controller computed %d from the given PriorityClass name", pod.Name, *pod.Spec.Priority, value)
	}
	pod.Spec.Priority = &value
	return nil
}
