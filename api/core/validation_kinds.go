package core

import (
	"fmt"
	"net"
	"regexp"
	"slices"
	"strings"

	"github.com/kobune/kobune/api/selector"
	v "github.com/kobune/kobune/api/validation"
)

var configKeyRe = regexp.MustCompile(`^[-._a-zA-Z0-9]+$`)

// ValidateNamespace checks a namespace: its name is a DNS-1123 label.
func ValidateNamespace(n *Namespace) v.ErrorList {
	errs := v.ValidateObjectMeta(&n.ObjectMeta, false, v.IsDNS1123Label, v.NewPath("metadata"))
	for i, f := range n.Spec.Finalizers {
		// As Kubernetes: "kubernetes", or a qualified name with a prefix
		// (example.com/name).
		if f == FinalizerKubernetes {
			continue
		}
		p := v.NewPath("spec", "finalizers").Index(i)
		if !strings.Contains(f, "/") {
			errs = append(errs, v.NewInvalid(p, f, "name is neither a standard finalizer name nor is it fully qualified"))
		} else if err := selector.ValidLabelKey(f); err != nil {
			errs = append(errs, v.NewInvalid(p, f, err.Error()))
		}
	}
	return errs
}

// ValidateNode checks a node's name, pod CIDR and taints.
func ValidateNode(n *Node) v.ErrorList {
	errs := v.ValidateObjectMeta(&n.ObjectMeta, false, v.IsDNS1123Subdomain, v.NewPath("metadata"))
	if n.Spec.PodCIDR != "" {
		if _, _, err := net.ParseCIDR(n.Spec.PodCIDR); err != nil {
			errs = append(errs, v.NewInvalid(v.NewPath("spec", "podCIDR"), n.Spec.PodCIDR, "must be a CIDR such as 10.244.1.0/24"))
		}
	}
	seen := map[string]bool{}
	for i, t := range n.Spec.Taints {
		tp := v.NewPath("spec", "taints").Index(i)
		if err := v.ValidateLabels(map[string]string{t.Key: t.Value}, tp); len(err) > 0 {
			errs = append(errs, err...)
		}
		if !in(string(t.Effect), taintEffects) {
			errs = append(errs, v.NewNotSupported(tp.Child("effect"), string(t.Effect), taintEffects))
		}
		key := t.Key + ":" + string(t.Effect)
		if seen[key] {
			errs = append(errs, v.NewDuplicate(tp, key))
		}
		seen[key] = true
	}
	return errs
}

// ValidateNodeUpdate keeps a node's pod CIDR once it is set, as Kubernetes
// does: node IPAM and every agent's routes depend on it, and an apply of a
// partial Node manifest once erased it, so that IPAM gave the node another
// block and cross-node traffic broke.
func ValidateNodeUpdate(n, old *Node) v.ErrorList {
	var errs v.ErrorList
	if old.Spec.PodCIDR != "" && n.Spec.PodCIDR != old.Spec.PodCIDR {
		errs = append(errs, v.NewForbidden(v.NewPath("spec", "podCIDR"), fmt.Sprintf("node updates may not change podCIDR except from \"\" to valid (it is %s)", old.Spec.PodCIDR)))
	}
	if len(old.Spec.PodCIDRs) > 0 && !slices.Equal(n.Spec.PodCIDRs, old.Spec.PodCIDRs) {
		errs = append(errs, v.NewForbidden(v.NewPath("spec", "podCIDRs"), fmt.Sprintf("node updates may only change podCIDRs from \"\" to valid (they are %v)", old.Spec.PodCIDRs)))
	}
	return errs
}

// ValidateService checks a service as Kubernetes does, for an IPv4
// single-stack cluster without load balancers. The ranges of cluster IPs
// and node ports are the API server's settings: it checks those when it
// allocates.
func ValidateService(s *Service) v.ErrorList {
	errs := v.ValidateObjectMeta(&s.ObjectMeta, true, v.IsDNS1123Label, v.NewPath("metadata"))
	sp := v.NewPath("spec")
	spec := &s.Spec
	types := []string{ServiceTypeClusterIP, ServiceTypeNodePort, ServiceTypeLoadBalancer, ServiceTypeExternalName}
	if !in(spec.Type, types) {
		errs = append(errs, v.NewNotSupported(sp.Child("type"), spec.Type, types))
	}
	if c := spec.LoadBalancerClass; c != nil {
		if spec.Type != ServiceTypeLoadBalancer {
			errs = append(errs, v.NewForbidden(sp.Child("loadBalancerClass"), "may only be used when `type` is 'LoadBalancer'"))
		} else if err := selector.ValidLabelKey(*c); err != nil {
			errs = append(errs, v.NewInvalid(sp.Child("loadBalancerClass"), *c, err.Error()))
		}
	}
	if spec.AllocateLoadBalancerNodePorts != nil && spec.Type != ServiceTypeLoadBalancer {
		errs = append(errs, v.NewForbidden(sp.Child("allocateLoadBalancerNodePorts"), "may only be used when `type` is 'LoadBalancer'"))
	}
	external := spec.Type == ServiceTypeExternalName
	if external {
		if spec.ExternalName == "" {
			errs = append(errs, v.NewRequired(sp.Child("externalName"), "an ExternalName service names the DNS name it stands for"))
		} else if msg := v.IsDNS1123Subdomain(strings.TrimSuffix(spec.ExternalName, ".")); msg != "" {
			errs = append(errs, v.NewInvalid(sp.Child("externalName"), spec.ExternalName, msg))
		}
		if spec.ClusterIP != "" || len(spec.ClusterIPs) > 0 {
			errs = append(errs, v.NewForbidden(sp.Child("clusterIP"), "may not be set for ExternalName services"))
		}
	} else if spec.ExternalName != "" {
		errs = append(errs, v.NewForbidden(sp.Child("externalName"), "may only be set for services of type ExternalName"))
	}
	if ip := spec.ClusterIP; ip != "" && ip != ClusterIPNone {
		if parsed := net.ParseIP(ip); parsed == nil {
			errs = append(errs, v.NewInvalid(sp.Child("clusterIP"), ip, "must be empty, 'None', or a valid IP address"))
		} else if parsed.To4() == nil {
			errs = append(errs, v.NewInvalid(sp.Child("clusterIP"), ip, "Kobune clusters are IPv4 single-stack: must be an IPv4 address"))
		}
	}
	switch {
	case len(spec.ClusterIPs) > 1:
		errs = append(errs, v.NewInvalid(sp.Child("clusterIPs"), spec.ClusterIPs, "Kobune clusters are IPv4 single-stack: at most one cluster IP"))
	case len(spec.ClusterIPs) == 1 && spec.ClusterIP != "" && spec.ClusterIPs[0] != spec.ClusterIP:
		errs = append(errs, v.NewInvalid(sp.Child("clusterIPs").Index(0), spec.ClusterIPs[0], "must match `clusterIP`"))
	}
	headless := spec.ClusterIP == ClusterIPNone
	if headless && spec.Type != ServiceTypeClusterIP {
		errs = append(errs, v.NewInvalid(sp.Child("clusterIP"), spec.ClusterIP, "may only be 'None' for services of type ClusterIP"))
	}
	for i, f := range spec.IPFamilies {
		if f != IPv4Protocol {
			errs = append(errs, v.NewNotSupported(sp.Child("ipFamilies").Index(i), f, []string{IPv4Protocol}))
		}
	}
	if p := spec.IPFamilyPolicy; p != nil && *p != IPFamilySingle && *p != IPFamilyPrefer {
		errs = append(errs, v.NewInvalid(sp.Child("ipFamilyPolicy"), *p, "this cluster is IPv4 single-stack: SingleStack or PreferDualStack"))
	}
	affinities := []string{ServiceAffinityNone, ServiceAffinityClientIP}
	if !in(spec.SessionAffinity, affinities) {
		errs = append(errs, v.NewNotSupported(sp.Child("sessionAffinity"), spec.SessionAffinity, affinities))
	}
	if c := spec.SessionAffinityConfig; c != nil && c.ClientIP != nil && c.ClientIP.TimeoutSeconds != nil {
		if t := *c.ClientIP.TimeoutSeconds; t < 1 || t > 86400 {
			errs = append(errs, v.NewInvalid(sp.Child("sessionAffinityConfig", "clientIP", "timeoutSeconds"), t, "must be between 1 and 86400, inclusive"))
		}
	}
	policies := []string{TrafficCluster, TrafficLocal}
	if p := spec.InternalTrafficPolicy; p != nil && !in(*p, policies) {
		errs = append(errs, v.NewNotSupported(sp.Child("internalTrafficPolicy"), *p, policies))
	}
	switch p := spec.ExternalTrafficPolicy; {
	case p == "":
	case !spec.ReachableFromOutside():
		errs = append(errs, v.NewInvalid(sp.Child("externalTrafficPolicy"), p, "may only be set when `type` is 'NodePort' or 'LoadBalancer'"))
	case !in(p, policies):
		errs = append(errs, v.NewNotSupported(sp.Child("externalTrafficPolicy"), p, policies))
	}
	if len(spec.Ports) == 0 && !headless && !external {
		errs = append(errs, v.NewRequired(sp.Child("ports"), ""))
	}
	names := map[string]bool{}
	ports := map[string]bool{}
	nodePorts := map[string]bool{}
	for i, port := range spec.Ports {
		pp := sp.Child("ports").Index(i)
		if len(spec.Ports) > 1 && port.Name == "" {
			errs = append(errs, v.NewRequired(pp.Child("name"), "a name is required when a service has more than one port"))
		}
		if port.Name != "" {
			if msg := v.IsDNS1123Label(port.Name); msg != "" {
				errs = append(errs, v.NewInvalid(pp.Child("name"), port.Name, msg))
			} else if names[port.Name] {
				errs = append(errs, v.NewDuplicate(pp.Child("name"), port.Name))
			}
			names[port.Name] = true
		}
		if port.Port < 1 || port.Port > 65535 {
			errs = append(errs, v.NewInvalid(pp.Child("port"), port.Port, "must be between 1 and 65535, inclusive"))
		}
		if !in(string(port.Protocol), protocols) {
			errs = append(errs, v.NewNotSupported(pp.Child("protocol"), string(port.Protocol), protocols))
		}
		if key := fmt.Sprintf("%d/%s", port.Port, port.Protocol); ports[key] {
			errs = append(errs, v.NewDuplicate(pp, key))
		} else {
			ports[key] = true
		}
		errs = append(errs, validateProbePort(port.TargetPort.IsString, port.TargetPort.IntVal, port.TargetPort.StrVal, pp.Child("targetPort"))...)
		switch {
		case port.NodePort == 0:
		case !spec.ReachableFromOutside():
			errs = append(errs, v.NewForbidden(pp.Child("nodePort"), fmt.Sprintf("may not be used when `type` is '%s'", spec.Type)))
		case port.NodePort < 1 || port.NodePort > 65535:
			errs = append(errs, v.NewInvalid(pp.Child("nodePort"), port.NodePort, "must be between 1 and 65535, inclusive"))
		default:
			if key := fmt.Sprintf("%d/%s", port.NodePort, port.Protocol); nodePorts[key] {
				errs = append(errs, v.NewDuplicate(pp.Child("nodePort"), port.NodePort))
			} else {
				nodePorts[key] = true
			}
		}
	}
	errs = append(errs, v.ValidateLabels(spec.Selector, sp.Child("selector"))...)
	return errs
}

// DropServiceTypeDependentFields wipes, on an update that changes a
// Service's type, what the new type has no use for and the writer left as
// it was (kube-apiserver's service strategy): externalTrafficPolicy when
// the Service stops being reachable from outside (a NodePort becoming a
// ClusterIP or ExternalName Service), externalName when it stops being an
// ExternalName Service. The cluster IP and node ports are
// released by the allocation step of admission.
func DropServiceTypeDependentFields(newSvc, oldSvc *Service) {
	if oldSvc.Spec.ReachableFromOutside() && !newSvc.Spec.ReachableFromOutside() &&
		newSvc.Spec.ExternalTrafficPolicy == oldSvc.Spec.ExternalTrafficPolicy {
		newSvc.Spec.ExternalTrafficPolicy = ""
	}
	if oldSvc.Spec.Type == ServiceTypeLoadBalancer && newSvc.Spec.Type != ServiceTypeLoadBalancer {
		if newSvc.Spec.AllocateLoadBalancerNodePorts != nil && oldSvc.Spec.AllocateLoadBalancerNodePorts != nil &&
			*newSvc.Spec.AllocateLoadBalancerNodePorts == *oldSvc.Spec.AllocateLoadBalancerNodePorts {
			newSvc.Spec.AllocateLoadBalancerNodePorts = nil
		}
		if newSvc.Spec.LoadBalancerClass != nil && oldSvc.Spec.LoadBalancerClass != nil && *newSvc.Spec.LoadBalancerClass == *oldSvc.Spec.LoadBalancerClass {
			newSvc.Spec.LoadBalancerClass = nil
		}
	}
	// An ExternalName Service turned into another type: the name it
	// pointed at goes (Kubernetes keeps it, unused; Kobune stores no
	// field it ignores).
	if oldSvc.Spec.Type == ServiceTypeExternalName && newSvc.Spec.Type != ServiceTypeExternalName &&
		newSvc.Spec.ExternalName == oldSvc.Spec.ExternalName {
		newSvc.Spec.ExternalName = ""
	}
}

// ValidateServiceUpdate: a cluster IP may not change once set (except by
// turning the service into an ExternalName one, or back).
func ValidateServiceUpdate(newSvc, oldSvc *Service) v.ErrorList {
	var errs v.ErrorList
	if newSvc.Spec.Type == ServiceTypeExternalName || oldSvc.Spec.Type == ServiceTypeExternalName {
		return nil
	}
	if oldSvc.Spec.ClusterIP != "" && newSvc.Spec.ClusterIP != oldSvc.Spec.ClusterIP {
		errs = append(errs, v.NewInvalid(v.NewPath("spec", "clusterIP"), newSvc.Spec.ClusterIP, "field is immutable"))
	}
	return errs
}

// ValidateEndpoints checks endpoint addresses and ports.
func ValidateEndpoints(e *Endpoints) v.ErrorList {
	errs := v.ValidateObjectMeta(&e.ObjectMeta, true, v.IsDNS1123Subdomain, v.NewPath("metadata"))
	for i, s := range e.Subsets {
		sp := v.NewPath("subsets").Index(i)
		for j, a := range append(append([]EndpointAddress(nil), s.Addresses...), s.NotReadyAddresses...) {
			if net.ParseIP(a.IP) == nil {
				errs = append(errs, v.NewInvalid(sp.Child("addresses").Index(j).Child("ip"), a.IP, "must be a valid IP address"))
			}
		}
		for j, p := range s.Ports {
			if p.Port < 1 || p.Port > 65535 {
				errs = append(errs, v.NewInvalid(sp.Child("ports").Index(j).Child("port"), p.Port, "must be between 1 and 65535, inclusive"))
			}
		}
	}
	return errs
}

// ValidateConfigMap checks the data keys.
func ValidateConfigMap(c *ConfigMap) v.ErrorList {
	errs := v.ValidateObjectMeta(&c.ObjectMeta, true, v.IsDNS1123Subdomain, v.NewPath("metadata"))
	for k := range c.Data {
		errs = append(errs, validateConfigKey(k, v.NewPath("data"))...)
	}
	for k := range c.BinaryData {
		errs = append(errs, validateConfigKey(k, v.NewPath("binaryData"))...)
		if _, dup := c.Data[k]; dup {
			errs = append(errs, v.NewInvalid(v.NewPath("binaryData"), k, "duplicate of key present in data"))
		}
	}
	return errs
}

// ValidateSecret checks the data keys.
func ValidateSecret(s *Secret) v.ErrorList {
	errs := v.ValidateObjectMeta(&s.ObjectMeta, true, v.IsDNS1123Subdomain, v.NewPath("metadata"))
	for k := range s.Data {
		errs = append(errs, validateConfigKey(k, v.NewPath("data"))...)
	}
	return errs
}

// ValidateImmutableData forbids changing data of an immutable ConfigMap or Secret.
// Once immutable, neither the data nor `immutable` itself may change.
func ValidateImmutableData(newData, oldData any, newImmutable, oldImmutable *bool) v.ErrorList {
	if oldImmutable == nil || !*oldImmutable {
		return nil
	}
	var errs v.ErrorList
	if newImmutable == nil || !*newImmutable {
		errs = append(errs, v.NewForbidden(v.NewPath("immutable"), "field is immutable when `immutable` is set"))
	}
	if !jsonEqual(newData, oldData) {
		errs = append(errs, v.NewForbidden(v.NewPath("data"), "field is immutable when `immutable` is set"))
	}
	return errs
}

func validateConfigKey(k string, p *Path) v.ErrorList {
	if len(k) > 253 || !configKeyRe.MatchString(k) {
		return v.ErrorList{v.NewInvalid(p, k, "a valid config key must consist of alphanumeric characters, '-', '_' or '.'")}
	}
	return nil
}

// ValidateEvent checks an event names what it is about.
// Kubernetes' rules for every event (its legacy validation): the
// namespace agrees with the involved object's; an event with an
// eventTime (a new-style one) names its reporting controller and
// instance, its action and reason, within Kubernetes' lengths.
func ValidateEvent(e *Event) v.ErrorList {
	errs := v.ValidateObjectMeta(&e.ObjectMeta, true, v.IsDNS1123Subdomain, v.NewPath("metadata"))
	nsPath := v.NewPath("involvedObject", "namespace")
	switch ins := e.InvolvedObject.Namespace; {
	case e.EventTime.IsZero() && ins == "" && e.Namespace != "" && e.Namespace != "default":
		errs = append(errs, v.NewInvalid(nsPath, ins, "does not match event.namespace"))
	case e.EventTime.IsZero() && ins != "" && ins != e.Namespace:
		errs = append(errs, v.NewInvalid(nsPath, ins, "does not match event.namespace"))
	case !e.EventTime.IsZero() && ins == "" && e.Namespace != "default" && e.Namespace != "kube-system":
		errs = append(errs, v.NewInvalid(nsPath, ins, "does not match event.namespace"))
	}
	if !e.EventTime.IsZero() {
		for _, f := range []struct {
			name, value string
			max         int
		}{{"reportingComponent", e.ReportingController, 0}, {"reportingInstance", e.ReportingInstance, 128}, {"action", e.Action, 128}, {"reason", e.Reason, 128}} {
			switch {
			case f.value == "":
				errs = append(errs, v.NewRequired(v.NewPath(f.name), ""))
			case f.max > 0 && len(f.value) > f.max:
				errs = append(errs, v.NewInvalid(v.NewPath(f.name), "", fmt.Sprintf("can have at most %d characters", f.max)))
			}
		}
		if len(e.Message) > 4096 {
			errs = append(errs, v.NewInvalid(v.NewPath("message"), "", "can have at most 4096 characters"))
		}
	}
	if e.Type != "" && e.Type != EventTypeNormal && e.Type != EventTypeWarning {
		errs = append(errs, v.NewNotSupported(v.NewPath("type"), e.Type, []string{EventTypeNormal, EventTypeWarning}))
	}
	return errs
}
