package core

import (
	"fmt"

	"github.com/kobune/kobune/api/meta"
)

// LabelTopologyZone is the well-known node label of its zone.
const LabelTopologyZone = "topology.kubernetes.io/zone"

// FindPort resolves a Service port's targetPort on one pod: a number is
// itself, a name is the number of the pod's container port of that name
// and the Service port's protocol (Kubernetes' podutil.FindPort). Pods of
// one Service may resolve a name to different numbers.
func FindPort(pod *Pod, sp *ServicePort) (int32, error) {
	if !sp.TargetPort.IsString {
		if sp.TargetPort.IntVal == 0 {
			return sp.Port, nil
		}
		return sp.TargetPort.IntVal, nil
	}
	for _, c := range pod.Spec.Containers {
		for _, p := range c.Ports {
			proto := p.Protocol
			if proto == "" {
				proto = ProtocolTCP
			}
			if p.Name == sp.TargetPort.StrVal && proto == sp.Protocol {
				return p.ContainerPort, nil
			}
		}
	}
	return 0, fmt.Errorf("no container port named %q (%s) in pod %s/%s", sp.TargetPort.StrVal, sp.Protocol, pod.Namespace, pod.Name)
}

// PodIsReady reports whether the pod's Ready condition is True.
func PodIsReady(p *Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == PodReady {
			return c.Status == meta.ConditionTrue
		}
	}
	return false
}
