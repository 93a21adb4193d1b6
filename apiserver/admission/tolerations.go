package admission

import (
	"context"

	"github.com/kobune/kobune/api/core"
)

// The taints the node lifecycle controller puts on unhealthy nodes.
const (
	taintNotReady    = "node.kubernetes.io/not-ready"
	taintUnreachable = "node.kubernetes.io/unreachable"
)

// DefaultTolerationSeconds gives every new pod a bounded toleration of the
// not-ready and unreachable NoExecute taints, unless it has its own, as
// Kubernetes' admission plugin of the same name does: a pod stays Seconds
// on a node that went dark (kube-apiserver's --default-toleration-seconds,
// 300) before it is evicted and replaced elsewhere.
type DefaultTolerationSeconds struct {
	Seconds int64
}

// Name implements Mutator.
func (DefaultTolerationSeconds) Name() string { return "DefaultTolerationSeconds" }

// Admit implements Mutator.
func (d DefaultTolerationSeconds) Admit(_ context.Context, a *Attributes) error {
	pod, ok := a.Object.(*core.Pod)
	if !ok || a.Operation != Create {
		return nil
	}
	for _, key := range []string{taintNotReady, taintUnreachable} {
		taint := core.Taint{Key: key, Effect: core.TaintNoExecute}
		covered := false
		for i := range pod.Spec.Tolerations {
			t := &pod.Spec.Tolerations[i]
			if (t.Effect == "" || t.Effect == core.TaintNoExecute) && t.ToleratesTaint(&taint) {
				covered = true
			}
		}
		if !covered {
			secs := d.Seconds
			pod.Spec.Tolerations = append(pod.Spec.Tolerations, core.Toleration{Key: key, Operator: "Exists", Effect: core.TaintNoExecute, TolerationSeconds: &secs})
		}
	}
	return nil
}
