package core

import "github.com/kobune/kobune/api/resource"

// PodQOSClass computes a pod's QoS class by Kubernetes' rules: Guaranteed
// when every container has cpu and memory limits equal to its requests,
// BestEffort when no container has any request or limit, Burstable otherwise.
func PodQOSClass(spec *PodSpec) QOSClass {
	any, guaranteed := false, true
	for _, list := range [2][]Container{spec.InitContainers, spec.Containers} {
		for i := range list {
			r := &list[i].Resources
			if len(r.Requests) > 0 || len(r.Limits) > 0 {
				any = true
			}
			for _, name := range [2]resource.Name{resource.CPU, resource.Memory} {
				limit, hasLimit := r.Limits[name]
				req, hasReq := r.Requests[name]
				if !hasLimit || (hasReq && !req.Equal(limit)) {
					guaranteed = false
				}
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
