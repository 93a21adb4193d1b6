package agent

import (
	"context"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
)

// The kubelet's admission of a pod it has not started yet (its
// predicateAdmitHandler): a pod bound to this node directly (spec.nodeName,
// no scheduler) can ask for what the node cannot give. Here, a host port
// that a pod already running on the node holds: the pod is rejected —
// Failed, with the predicate's name as its reason and a Warning event —
// and its controller (a StatefulSet's, a ReplicaSet's) makes another.
// Sysctls are admitted in syncPod (unsafeSysctl).

// rejection is why the node refuses to start a pod, as the kubelet says it.
type rejection struct{ reason, message string }

// admit checks a pod before its first start here; nil admits it.
func (w *podWorkers) admit(pod *core.Pod) *rejection {
	if !core.HasHostPorts(pod) {
		return nil
	}
	for _, other := range w.pods.List() {
		if other.UID == pod.UID || other.Spec.NodeName != w.cfg.Node.Name || finished(other) ||
			w.records.runningUID(meta.Key(other)) != other.UID {
			continue // only pods this node runs hold their ports
		}
		if core.HostPortsConflict(pod, other) {
			return &rejection{reason: "NodePorts", message: "Predicate NodePorts failed: node(s) didn't have free ports for the requested pod ports"}
		}
	}
	return nil
}

// reject fails a pod the node did not admit, as the kubelet's rejectPod.
func (w *podWorkers) reject(ctx context.Context, pod *core.Pod, r *rejection) error {
	w.event(pod, core.EventTypeWarning, r.reason, r.message)
	status := core.PodStatus{Phase: core.PodFailed, Reason: r.reason, Message: "Pod was rejected: " + r.message,
		QOSClass: pod.Status.QOSClass, ObservedGeneration: pod.Generation}
	return w.writeStatus(ctx, pod, status)
}
