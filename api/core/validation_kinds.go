package core

import (
	"fmt"
	"net"
	"regexp"
	"slices"

	v "github.com/kobune/kobune/api/validation"
)

var configKeyRe = regexp.MustCompile(`^[-._a-zA-Z0-9]+$`)

// ValidateNamespace checks a namespace: its name is a DNS-1123 label.
func ValidateNamespace(n *Namespace) v.ErrorList {
	return v.ValidateObjectMeta(&n.ObjectMeta, false, v.IsDNS1123Label, v.NewPath("metadata"))
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

// ValidateService checks a service's ports, type and cluster IP.
func ValidateService(s *Service) v.ErrorList {
	errs := v.ValidateObjectMeta(&s.ObjectMeta, true, v.IsDNS1123Label, v.NewPath("metadata"))
	sp := v.NewPath("spec")
	types := []string{ServiceTypeClusterIP, ServiceTypeNodePort}
	if !in(s.Spec.Type, types) {
		errs = append(errs, v.NewNotSupported(sp.Child("type"), s.Spec.Type, types))
	}
	if ip := s.Spec.ClusterIP; ip != "" && ip != ClusterIPNone && net.ParseIP(ip) == nil {
		errs = append(errs, v.NewInvalid(sp.Child("clusterIP"), ip, "must be empty, 'None', or a valid IP address"))
	}
	if len(s.Spec.Ports) == 0 && s.Spec.ClusterIP != ClusterIPNone {
		errs = append(errs, v.NewRequired(sp.Child("ports"), ""))
	}
	names := map[string]bool{}
	for i, port := range s.Spec.Ports {
		pp := sp.Child("ports").Index(i)
		if len(s.Spec.Ports) > 1 && port.Name == "" {
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
		errs = append(errs, validateProbePort(port.TargetPort.IsString, port.TargetPort.IntVal, port.TargetPort.StrVal, pp.Child("targetPort"))...)
		if port.NodePort != 0 && (port.NodePort < 30000 || port.NodePort > 32767) {
			errs = append(errs, v.NewInvalid(pp.Child("nodePort"), port.NodePort, "must be in the range 30000-32767"))
		}
	}
	errs = append(errs, v.ValidateLabels(s.Spec.Selector, sp.Child("selector"))...)
	return errs
}

// ValidateServiceUpdate forbids changing the cluster IP once assigned.
func ValidateServiceUpdate(newSvc, oldSvc *Service) v.ErrorList {
	var errs v.ErrorList
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
func ValidateImmutableData(newData, oldData any, oldImmutable *bool) v.ErrorList {
	if oldImmutable != nil && *oldImmutable && !jsonEqual(newData, oldData) {
		return v.ErrorList{v.NewForbidden(v.NewPath("data"), "field is immutable when `immutable` is set")}
	}
	return nil
}

func validateConfigKey(k string, p *Path) v.ErrorList {
	if len(k) > 253 || !configKeyRe.MatchString(k) {
		return v.ErrorList{v.NewInvalid(p, k, "a valid config key must consist of alphanumeric characters, '-', '_' or '.'")}
	}
	return nil
}

// ValidateEvent checks an event names what it is about.
func ValidateEvent(e *Event) v.ErrorList {
	errs := v.ValidateObjectMeta(&e.ObjectMeta, true, v.IsDNS1123Subdomain, v.NewPath("metadata"))
	if e.InvolvedObject.Kind == "" || e.InvolvedObject.Name == "" {
		errs = append(errs, v.NewRequired(v.NewPath("involvedObject"), "kind and name are required"))
	}
	if e.Type != "" && e.Type != EventTypeNormal && e.Type != EventTypeWarning {
		errs = append(errs, v.NewNotSupported(v.NewPath("type"), e.Type, []string{EventTypeNormal, EventTypeWarning}))
	}
	return errs
}
