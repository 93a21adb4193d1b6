package core

import "github.com/kobune/kobune/api/resource"

// PodQOSClass computes a pod's QoS class by Kubernetes' rules: Guaranteed
// when every container has cpu and memory limits equal to its requests,
// BestEffort when no container has any request or limit, Burstable otherwise.
func PodQOSClass(spec *PodSpec) QOSClass {
	any, guaranteed := false, true
	all := append(append([]Container(nil), spec.InitContainers...), spec.Containers...)
	for _, c := range all {
		if len(c.Resources.Requests) > 0 || len(c.Resources.Limits) > 0 {
			any = true
		}
		for _, name := range []resource.Name{resource.CPU, resource.Memory} {
			limit, hasLimit := c.Resources.Limits[name]
			req, hasReq := c.Resources.Requests[name]
			if !hasLimit || (hasReq && !req.Equal(limit)) {
				guaranteed = false
			}
		}
	}
	switch {
	case !any:
		return QOSBestEffort
	case guaranteed:
		return QOSGuaranteed
	}
	return QOSBurstable
}
