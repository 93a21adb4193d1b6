package networking

import (
	"net/netip"

	"github.com/kobune/kobune/api/meta"
	v "github.com/kobune/kobune/api/validation"
)

// NetworkPolicy says which connections the pods it selects may receive
// (Ingress) and make (Egress). A pod no policy selects for a direction is
// open in it; once selected, only what some selecting policy allows
// passes. Policies add up; none denies.
type NetworkPolicy struct {
	meta.TypeMeta   `json:",inline"`
	meta.ObjectMeta `json:"metadata"`
	Spec            NetworkPolicySpec `json:"spec"`
}

// NetworkPolicySpec is the policy.
type NetworkPolicySpec struct {
	// PodSelector chooses the pods of the policy's namespace it applies
	// to; empty: all of them.
	PodSelector meta.LabelSelector         `json:"podSelector"`
	Ingress     []NetworkPolicyIngressRule `json:"ingress,omitempty"`
	Egress      []NetworkPolicyEgressRule  `json:"egress,omitempty"`
	// PolicyTypes are the directions the policy restricts: Ingress, Egress.
	PolicyTypes []string `json:"policyTypes,omitempty"`
}

// NetworkPolicyIngressRule allows connections from the peers (any, if
// none) to the ports (any, if none).
type NetworkPolicyIngressRule struct {
	Ports []NetworkPolicyPort `json:"ports,omitempty"`
	From  []NetworkPolicyPeer `json:"from,omitempty"`
}

// NetworkPolicyEgressRule allows connections to the peers (any, if none)
// on the ports (any, if none).
type NetworkPolicyEgressRule struct {
	Ports []NetworkPolicyPort `json:"ports,omitempty"`
	To    []NetworkPolicyPeer `json:"to,omitempty"`
}

// NetworkPolicyPeer is pods (podSelector, in the policy's namespace or in
// the namespaces namespaceSelector chooses; both: those pods in those
// namespaces) or addresses (ipBlock).
type NetworkPolicyPeer struct {
	PodSelector       *meta.LabelSelector `json:"podSelector,omitempty"`
	NamespaceSelector *meta.LabelSelector `json:"namespaceSelector,omitempty"`
	IPBlock           *IPBlock            `json:"ipBlock,omitempty"`
}

// IPBlock is a CIDR without the CIDRs in Except.
type IPBlock struct {
	CIDR   string   `json:"cidr"`
	Except []string `json:"except,omitempty"`
}

// NetworkPolicyPort is a protocol (TCP by default) and a port — a number,
// a named container port, or a range Port..EndPort; no port: every port.
type NetworkPolicyPort struct {
	Protocol *string           `json:"protocol,omitempty"`
	Port     *meta.IntOrString `json:"port,omitempty"`
	EndPort  *int32            `json:"endPort,omitempty"`
}

// Policy types.
const (
	PolicyTypeIngress = "Ingress"
	PolicyTypeEgress  = "Egress"
)

// SetDefaultsNetworkPolicy defaults each port's protocol to TCP and
// policyTypes to Ingress, plus Egress when there are egress rules, as
// Kubernetes does.
func SetDefaultsNetworkPolicy(np *NetworkPolicy) {
	tcp := func(ports []NetworkPolicyPort) {
		for i := range ports {
			if ports[i].Protocol == nil {
				p := "TCP"
				ports[i].Protocol = &p
			}
		}
	}
	for i := range np.Spec.Ingress {
		tcp(np.Spec.Ingress[i].Ports)
	}
	for i := range np.Spec.Egress {
		tcp(np.Spec.Egress[i].Ports)
	}
	if len(np.Spec.PolicyTypes) == 0 {
		np.Spec.PolicyTypes = []string{PolicyTypeIngress}
		if len(np.Spec.Egress) > 0 {
			np.Spec.PolicyTypes = append(np.Spec.PolicyTypes, PolicyTypeEgress)
		}
	}
}

// ValidateNetworkPolicy checks a NetworkPolicy with Kubernetes' rules and
// messages.
func ValidateNetworkPolicy(np *NetworkPolicy) v.ErrorList {
	errs := v.ValidateObjectMeta(&np.ObjectMeta, true, v.IsDNS1123Subdomain, v.NewPath("metadata"))
	sp := v.NewPath("spec")
	errs = append(errs, v.ValidateLabelSelector(&np.Spec.PodSelector, sp.Child("podSelector"))...)
	for i, r := range np.Spec.Ingress {
		p := sp.Child("ingress").Index(i)
		errs = append(errs, validatePorts(r.Ports, p.Child("ports"))...)
		errs = append(errs, validatePeers(r.From, p.Child("from"))...)
	}
	for i, r := range np.Spec.Egress {
		p := sp.Child("egress").Index(i)
		errs = append(errs, validatePorts(r.Ports, p.Child("ports"))...)
		errs = append(errs, validatePeers(r.To, p.Child("to"))...)
	}
	allowed := []string{PolicyTypeIngress, PolicyTypeEgress}
	if len(np.Spec.PolicyTypes) > len(allowed) {
		errs = append(errs, v.NewInvalid(sp.Child("policyTypes"), np.Spec.PolicyTypes, "may not have more than 2 items"))
	}
	for i, t := range np.Spec.PolicyTypes {
		if t != PolicyTypeIngress && t != PolicyTypeEgress {
			errs = append(errs, v.NewNotSupported(sp.Child("policyTypes").Index(i), t, allowed))
		}
	}
	return errs
}

func validatePorts(ports []NetworkPolicyPort, p *v.Path) v.ErrorList {
	var errs v.ErrorList
	for i, port := range ports {
		pp := p.Index(i)
		if port.Protocol != nil {
			switch *port.Protocol {
			case "TCP", "UDP", "SCTP":
			default:
				errs = append(errs, v.NewNotSupported(pp.Child("protocol"), *port.Protocol, []string{"SCTP", "TCP", "UDP"}))
			}
		}
		if port.Port == nil {
			if port.EndPort != nil {
				errs = append(errs, v.NewRequired(pp.Child("port"), "must be specified when `endPort` is specified"))
			}
			continue
		}
		if port.Port.IsString {
			if why := v.IsPortName(port.Port.StrVal); why != "" {
				errs = append(errs, v.NewInvalid(pp.Child("port"), port.Port.StrVal, why))
			}
			if port.EndPort != nil {
				errs = append(errs, v.NewInvalid(pp.Child("endPort"), *port.EndPort, "may not be specified when `port` is non-numeric"))
			}
			continue
		}
		if n := port.Port.IntVal; n < 1 || n > 65535 {
			errs = append(errs, v.NewInvalid(pp.Child("port"), n, "must be between 1 and 65535, inclusive"))
		}
		if e := port.EndPort; e != nil {
			if *e < port.Port.IntVal {
				errs = append(errs, v.NewInvalid(pp.Child("endPort"), *e, "must be greater than or equal to `port`"))
			}
			if *e < 1 || *e > 65535 {
				errs = append(errs, v.NewInvalid(pp.Child("endPort"), *e, "must be between 1 and 65535, inclusive"))
			}
		}
	}
	return errs
}

func validatePeers(peers []NetworkPolicyPeer, p *v.Path) v.ErrorList {
	var errs v.ErrorList
	for i, peer := range peers {
		pp := p.Index(i)
		n := 0
		if peer.PodSelector != nil {
			n++
			errs = append(errs, v.ValidateLabelSelector(peer.PodSelector, pp.Child("podSelector"))...)
		}
		if peer.NamespaceSelector != nil {
			n++
			errs = append(errs, v.ValidateLabelSelector(peer.NamespaceSelector, pp.Child("namespaceSelector"))...)
		}
		if peer.IPBlock != nil {
			n++
			errs = append(errs, validateIPBlock(peer.IPBlock, pp.Child("ipBlock"))...)
		}
		switch {
		case n == 0:
			errs = append(errs, v.NewRequired(pp, "must specify a peer"))
		case peer.IPBlock != nil && n > 1:
			errs = append(errs, v.NewForbidden(pp, "may not specify both ipBlock and another peer"))
		}
	}
	return errs
}

func validateIPBlock(b *IPBlock, p *v.Path) v.ErrorList {
	if b.CIDR == "" {
		return v.ErrorList{v.NewRequired(p.Child("cidr"), "")}
	}
	cidr, err := netip.ParsePrefix(b.CIDR)
	if err != nil {
		return v.ErrorList{v.NewInvalid(p.Child("cidr"), b.CIDR, "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)")}
	}
	var errs v.ErrorList
	for i, e := range b.Except {
		ex, err := netip.ParsePrefix(e)
		switch {
		case err != nil:
			errs = append(errs, v.NewInvalid(p.Child("except").Index(i), e, "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)"))
		case ex.Addr().Is4() != cidr.Addr().Is4() || ex.Bits() <= cidr.Bits() || !cidr.Contains(ex.Addr()):
			errs = append(errs, v.NewInvalid(p.Child("except").Index(i), e, "must be a strict subset of `cidr`"))
		}
	}
	return errs
}
