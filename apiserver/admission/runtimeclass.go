package admission

import (
	"context"
	"fmt"
	"slices"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/node"
	"github.com/kobune/kobune/api/resource"
)

// RuntimeClassGetter reads a RuntimeClass by name.
type RuntimeClassGetter interface {
	RuntimeClass(ctx context.Context, name string) (*node.RuntimeClass, bool, error)
}

// RuntimeClass is Kubernetes' RuntimeClass admission plugin: a new pod
// that names a RuntimeClass must name one that exists; the class's
// overhead becomes the pod's spec.overhead (a pod may state it only as
// the class does), and the class's scheduling is merged into the pod's
// node selector (a conflicting value is refused) and tolerations. A pod
// naming no class may not state an overhead. Refusals are Forbidden, as
// in Kubernetes.
type RuntimeClass struct {
	Classes RuntimeClassGetter
}

// Name implements Mutator.
func (RuntimeClass) Name() string { return "RuntimeClass" }

// Admit implements Mutator.
func (r RuntimeClass) Admit(ctx context.Context, a *Attributes) error {
	pod, ok := a.Object.(*core.Pod)
	if !ok || a.Operation != Create || r.Classes == nil {
		return nil
	}
	forbidden := func(format string, args ...any) error {
		return status.Errorf(codes.PermissionDenied, "pods %q is forbidden: pod rejected: %s", pod.Name, fmt.Sprintf(format, args...))
	}
	if pod.Spec.RuntimeClassName == nil {
		if len(pod.Spec.Overhead) > 0 {
			return forbidden("Pod Overhead set without corresponding RuntimeClass")
		}
		return nil
	}
	name := *pod.Spec.RuntimeClassName
	rc, found, err := r.Classes.RuntimeClass(ctx, name)
	if err != nil {
		return status.Errorf(codes.Unavailable, "look up RuntimeClass %q: %v", name, err)
	}
	if !found {
		return forbidden("RuntimeClass %q not found", name)
	}
	if rc.Overhead != nil && len(rc.Overhead.PodFixed) > 0 {
		switch {
		case len(pod.Spec.Overhead) == 0:
			pod.Spec.Overhead = resource.List{}
			for n, q := range rc.Overhead.PodFixed {
				pod.Spec.Overhead[n] = q.Copy()
			}
		case !sameList(pod.Spec.Overhead, rc.Overhead.PodFixed):
			return forbidden("Pod's Overhead doesn't match RuntimeClass's defined Overhead")
		}
	} else if len(pod.Spec.Overhead) > 0 {
		return forbidden("Pod Overhead set without corresponding RuntimeClass defined Overhead")
	}
	if s := rc.Scheduling; s != nil {
		for k, v := range s.NodeSelector {
			if have, ok := pod.Spec.NodeSelector[k]; ok && have != v {
				return forbidden("conflict: runtimeClass.scheduling.nodeSelector[%s] = %s; pod.spec.nodeSelector[%s] = %s", k, v, k, have)
			}
			if pod.Spec.NodeSelector == nil {
				pod.Spec.NodeSelector = map[string]string{}
			}
			pod.Spec.NodeSelector[k] = v
		}
		for _, t := range s.Tolerations {
			if !slices.ContainsFunc(pod.Spec.Tolerations, func(o core.Toleration) bool { return sameToleration(o, t) }) {
				pod.Spec.Tolerations = append(pod.Spec.Tolerations, t)
			}
		}
	}
	return nil
}

func sameList(a, b resource.List) bool {
	if len(a) != len(b) {
		return false
	}
	for n, q := range a {
		if o, ok := b[n]; !ok || o.Cmp(q) != 0 {
			return false
		}
	}
	return true
}

func sameToleration(a, b core.Toleration) bool {
	seconds := func(t core.Toleration) int64 {
		if t.TolerationSeconds == nil {
			return -1
		}
		return *t.TolerationSeconds
	}
	return a.Key == b.Key && a.Operator == b.Operator && a.Value == b.Value && a.Effect == b.Effect && seconds(a) == seconds(b)
}
