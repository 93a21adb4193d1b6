package networking

import (
	"net/netip"

	"github.com/kobune/kobune/api/meta"
	v "github.com/kobune/kobune/api/validation"
)

// ServiceCIDR is a range Services' cluster IPs may come from. The API
// server makes the default one, DefaultServiceCIDRName, from its
// --service-cluster-ip-range; more can be added, and the allocator uses
// them too (the default first). Deleting one waits (its finalizer) until
// no Service IP or IPAddress in it is left uncovered by another.
type ServiceCIDR struct {
	meta.TypeMeta   `json:",inline"`
	meta.ObjectMeta `json:"metadata"`
	Spec            ServiceCIDRSpec   `json:"spec"`
	Status          ServiceCIDRStatus `json:"status"`
}

// ServiceCIDRSpec holds the range: one CIDR per IP family, at most two.
// Kobune's Services are IPv4 only, so an IPv6 range is refused.
type ServiceCIDRSpec struct {
	CIDRs []string `json:"cidrs,omitempty"`
}

// ServiceCIDRStatus says whether the range is Ready for allocation.
type ServiceCIDRStatus struct {
	Conditions []meta.Condition `json:"conditions,omitempty"`
}

const (
	// DefaultServiceCIDRName is the ServiceCIDR the API server keeps for
	// its --service-cluster-ip-range.
	DefaultServiceCIDRName = "kubernetes"
	// ServiceCIDRReady is the condition that says a range hands out IPs.
	ServiceCIDRReady = "Ready"
	// ServiceCIDRTerminating is the Ready=False reason of a range being
	// deleted.
	ServiceCIDRTerminating = "Terminating"
	// ServiceCIDRFinalizer holds a range's deletion while IPs in it are in
	// use.
	ServiceCIDRFinalizer = "networking.k8s.io/service-cidr-finalizer"
)

// IPAddress reserves one IP for the object its parentRef names: no Service
// can be given an address an IPAddress holds, and an IPAddress cannot be
// made for an address a Service holds. (Kubernetes also keeps every
// Service's own cluster IP as an IPAddress object; Kobune keeps those as
// storage claims, so `kobectl get ipaddresses` lists only the ones made as
// objects — docs/differences.md.) Its name is the IP, in canonical form.
type IPAddress struct {
	meta.TypeMeta   `json:",inline"`
	meta.ObjectMeta `json:"metadata"`
	Spec            IPAddressSpec `json:"spec"`
}

// IPAddressSpec names the address's holder.
type IPAddressSpec struct {
	ParentRef *ParentReference `json:"parentRef,omitempty"`
}

// ParentReference names an object by group, resource, namespace and name.
type ParentReference struct {
	Group     string `json:"group,omitempty"`
	Resource  string `json:"resource,omitempty"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name,omitempty"`
}

// ValidateServiceCIDR checks a ServiceCIDR as kube-apiserver does: one or
// two CIDRs in canonical form, one per family; Kobune takes IPv4 only.
func ValidateServiceCIDR(c *ServiceCIDR) v.ErrorList {
	errs := v.ValidateObjectMeta(&c.ObjectMeta, false, v.IsDNS1123Subdomain, v.NewPath("metadata"))
	p := v.NewPath("spec", "cidrs")
	switch n := len(c.Spec.CIDRs); {
	case n == 0:
		return append(errs, v.NewRequired(p, "at least one CIDR required"))
	case n > 2:
		return append(errs, v.NewInvalid(p, c.Spec.CIDRs, "may only hold up to 2 values"))
	}
	v4 := 0
	for i, s := range c.Spec.CIDRs {
		pfx, err := netip.ParsePrefix(s)
		if err == nil && pfx.Addr().Is4() {
			v4++
		}
		switch {
		case err != nil:
			errs = append(errs, v.NewInvalid(p.Index(i), s, "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)"))
		case pfx.Masked() != pfx || pfx.String() != s:
			errs = append(errs, v.NewInvalid(p.Index(i), s, "must be in canonical form (\""+pfx.Masked().String()+"\")"))
		case !pfx.Addr().Is4():
			errs = append(errs, v.NewInvalid(p.Index(i), s, "Kobune's Services are IPv4 only: an IPv6 range is not supported"))
		case pfx.Bits() > 30 || pfx.Bits() < 8:
			errs = append(errs, v.NewInvalid(p.Index(i), s, "the prefix must be between /8 and /30 (as --service-cluster-ip-range)"))
		}
	}
	if v4 == 2 {
		errs = append(errs, v.NewInvalid(p, c.Spec.CIDRs, "may specify no more than one IP for each IP family, i.e 192.168.0.0/24 and 2001:db8::/64"))
	}
	return errs
}

// ValidateServiceCIDRUpdate refuses a change of the ranges.
func ValidateServiceCIDRUpdate(n, o *ServiceCIDR) v.ErrorList {
	if len(n.Spec.CIDRs) != len(o.Spec.CIDRs) {
		return v.ErrorList{v.NewInvalid(v.NewPath("spec", "cidrs"), n.Spec.CIDRs, "field is immutable")}
	}
	for i := range n.Spec.CIDRs {
		if n.Spec.CIDRs[i] != o.Spec.CIDRs[i] {
			return v.ErrorList{v.NewInvalid(v.NewPath("spec", "cidrs").Index(i), n.Spec.CIDRs[i], "field is immutable")}
		}
	}
	return nil
}

// ValidateServiceCIDRStatus checks a status write: conditions are
// meta.k8s.io Conditions.
func ValidateServiceCIDRStatus(n, _ *ServiceCIDR) v.ErrorList {
	p := v.NewPath("status", "conditions")
	errs := v.Conditions(n.Status.Conditions, p)
	for i, c := range n.Status.Conditions {
		if c.LastTransitionTime.IsZero() {
			errs = append(errs, v.NewRequired(p.Index(i).Child("lastTransitionTime"), "must be set"))
		}
	}
	return errs
}

// ValidateIPAddress checks an IPAddress as kube-apiserver does: the name
// an IP in canonical form, a parentRef with a resource and a name.
func ValidateIPAddress(a *IPAddress) v.ErrorList {
	errs := v.ValidateObjectMeta(&a.ObjectMeta, false, isCanonicalIP, v.NewPath("metadata"))
	p := v.NewPath("spec", "parentRef")
	ref := a.Spec.ParentRef
	if ref == nil {
		return append(errs, v.NewRequired(p, ""))
	}
	if ref.Group != "" {
		if msg := v.IsDNS1123Subdomain(ref.Group); msg != "" {
			errs = append(errs, v.NewInvalid(p.Child("group"), ref.Group, msg))
		}
	}
	if ref.Resource == "" {
		errs = append(errs, v.NewRequired(p.Child("resource"), ""))
	} else if msg := v.IsPathSegmentName(ref.Resource); msg != "" {
		errs = append(errs, v.NewInvalid(p.Child("resource"), ref.Resource, msg))
	}
	if ref.Namespace != "" {
		if msg := v.IsDNS1123Label(ref.Namespace); msg != "" {
			errs = append(errs, v.NewInvalid(p.Child("namespace"), ref.Namespace, msg))
		}
	}
	if ref.Name == "" {
		errs = append(errs, v.NewRequired(p.Child("name"), ""))
	} else if msg := v.IsPathSegmentName(ref.Name); msg != "" {
		errs = append(errs, v.NewInvalid(p.Child("name"), ref.Name, msg))
	}
	return errs
}

// ValidateIPAddressUpdate refuses a change of the parent.
func ValidateIPAddressUpdate(n, o *IPAddress) v.ErrorList {
	if n.Spec.ParentRef == nil || o.Spec.ParentRef == nil || *n.Spec.ParentRef != *o.Spec.ParentRef {
		return v.ErrorList{v.NewInvalid(v.NewPath("spec", "parentRef"), n.Spec.ParentRef, "field is immutable")}
	}
	return nil
}

func isCanonicalIP(s string) string {
	ip, err := netip.ParseAddr(s)
	switch {
	case err != nil || ip.Zone() != "":
		return "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"
	case ip.Is4In6():
		return "must not be an IPv4-mapped IPv6 address"
	case ip.String() != s:
		return "must be in canonical form (\"" + ip.String() + "\")"
	}
	return ""
}
