package agent

import (
	"fmt"
	"sort"
	"strings"

	"github.com/kobune/kobune/api/core"
)

// Service links: the environment variables the kubelet gives every
// container for the Services of its pod's namespace (Docker's link
// variables, kept by Kubernetes for compatibility), and always for the
// kubernetes Service in default:
//
//	WEB_SERVICE_HOST=10.96.12.7      WEB_PORT=tcp://10.96.12.7:80
//	WEB_SERVICE_PORT=80              WEB_PORT_80_TCP=tcp://10.96.12.7:80
//	WEB_SERVICE_PORT_HTTP=80         WEB_PORT_80_TCP_PROTO=tcp
//	                                 WEB_PORT_80_TCP_PORT=80
//	                                 WEB_PORT_80_TCP_ADDR=10.96.12.7
//
// Only Services with a cluster IP count (not headless, not ExternalName).
// A container's own env wins over a link variable of the same name, and a
// Service created after the pod started is not seen (as in Kubernetes:
// that is what cluster DNS is for).

// serviceEnv is the link variables for pod, from the Services known.
func serviceEnv(pod *core.Pod, services []*core.Service) []core.EnvVar {
	links := pod.Spec.EnableServiceLinks == nil || *pod.Spec.EnableServiceLinks
	var use []*core.Service
	for _, s := range services {
		if s.Spec.ClusterIP == "" || s.Spec.ClusterIP == core.ClusterIPNone {
			continue
		}
		master := s.Namespace == "default" && s.Name == "kubernetes"
		if master || (links && s.Namespace == pod.Namespace) {
			use = append(use, s)
		}
	}
	sort.Slice(use, func(i, j int) bool { return use[i].Namespace+"/"+use[i].Name < use[j].Namespace+"/"+use[j].Name })
	var out []core.EnvVar
	add := func(name, value string) { out = append(out, core.EnvVar{Name: name, Value: value}) }
	for _, s := range use {
		if s.Namespace != pod.Namespace && s.Name == "kubernetes" && hasService(use, pod.Namespace, "kubernetes") {
			continue // the pod's namespace has a Service of that name: it wins
		}
		prefix := strings.ToUpper(strings.ReplaceAll(s.Name, "-", "_"))
		ip := s.Spec.ClusterIP
		add(prefix+"_SERVICE_HOST", ip)
		if len(s.Spec.Ports) == 0 {
			continue
		}
		add(prefix+"_SERVICE_PORT", fmt.Sprint(s.Spec.Ports[0].Port))
		for _, p := range s.Spec.Ports {
			if p.Name != "" {
				add(prefix+"_SERVICE_PORT_"+strings.ToUpper(strings.ReplaceAll(p.Name, "-", "_")), fmt.Sprint(p.Port))
			}
		}
		first := s.Spec.Ports[0]
		add(prefix+"_PORT", fmt.Sprintf("%s://%s:%d", strings.ToLower(string(first.Protocol)), ip, first.Port))
		for _, p := range s.Spec.Ports {
			proto := strings.ToLower(string(p.Protocol))
			pp := fmt.Sprintf("%s_PORT_%d_%s", prefix, p.Port, strings.ToUpper(proto))
			add(pp, fmt.Sprintf("%s://%s:%d", proto, ip, p.Port))
			add(pp+"_PROTO", proto)
			add(pp+"_PORT", fmt.Sprint(p.Port))
			add(pp+"_ADDR", ip)
		}
	}
	return out
}

func hasService(list []*core.Service, ns, name string) bool {
	for _, s := range list {
		if s.Namespace == ns && s.Name == name {
			return true
		}
	}
	return false
}
