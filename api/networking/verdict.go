package networking

import (
	"fmt"
	"net/netip"
	"strings"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/api/selector"
)

// Endpoint is one end of a connection as NetworkPolicy sees it: a pod (its
// namespace, labels, address and named container ports) or an address
// outside the cluster's pods (Pod false: only IP counts).
type Endpoint struct {
	Pod       bool
	Namespace string
	Name      string
	Labels    map[string]string
	IP        netip.Addr
	// Ports are the pod's named container ports, which a policy's named
	// port resolves against (the destination's, in both directions).
	Ports []NamedPort
}

// NamedPort is a container port with a name.
type NamedPort struct {
	Name     string
	Protocol string
	Port     int32
}

// Connection is what is judged: from Src to Dst's Port over Protocol
// (TCP, UDP, SCTP), after any Service's DNAT (Dst is the chosen pod).
type Connection struct {
	Src, Dst Endpoint
	Protocol string
	Port     int32
}

// DirectionVerdict is one side's part: the policies that select the pod
// for this direction (none: the pod is not isolated, everything passes),
// and the policy and rule that allow the connection, if any.
type DirectionVerdict struct {
	Selected  []string // namespace/name of each selecting policy
	AllowedBy string   // "namespace/name ingress[i]" or "egress[i]"; "" if none
	Allowed   bool
}

// Verdict is the whole answer: the source's egress and the destination's
// ingress must both allow the connection.
type Verdict struct {
	Egress, Ingress DirectionVerdict
}

// Allowed reports whether the connection passes.
func (v Verdict) Allowed() bool { return v.Egress.Allowed && v.Ingress.Allowed }

// Decide judges a connection against every NetworkPolicy, as Kubernetes
// specifies them: a pod no policy selects for a direction is open in it;
// a selected one accepts only what a rule of some selecting policy
// allows; policies add up. namespaceLabels are the labels of each
// namespace (for namespaceSelector). Replies of an allowed connection
// are not judged (the datapath lets them through by connection tracking).
func Decide(policies []*NetworkPolicy, namespaceLabels map[string]map[string]string, c Connection) Verdict {
	var v Verdict
	if c.Src.Pod && c.Dst.Pod && c.Src.Namespace == c.Dst.Namespace && c.Src.Name == c.Dst.Name {
		// A pod reaching its own address never leaves it (loopback):
		// no policy can stop it, as Kubernetes' own reachability tests assume.
		self := DirectionVerdict{Allowed: true, AllowedBy: "loopback (the pod's own address)"}
		return Verdict{Egress: self, Ingress: self}
	}
	v.Egress = decideSide(policies, namespaceLabels, c, PolicyTypeEgress)
	v.Ingress = decideSide(policies, namespaceLabels, c, PolicyTypeIngress)
	return v
}

func decideSide(policies []*NetworkPolicy, nsLabels map[string]map[string]string, c Connection, dir string) DirectionVerdict {
	self, other := c.Dst, c.Src // ingress: the destination's policies, peers are sources
	if dir == PolicyTypeEgress {
		self, other = c.Src, c.Dst
	}
	if !self.Pod {
		return DirectionVerdict{Allowed: true} // policies select pods only
	}
	var d DirectionVerdict
	for _, np := range policies {
		if np.Namespace != self.Namespace || !HasType(np, dir) || !matches(&np.Spec.PodSelector, self.Labels) {
			continue
		}
		key := np.Namespace + "/" + np.Name
		d.Selected = append(d.Selected, key)
		if d.Allowed {
			continue
		}
		if dir == PolicyTypeIngress {
			for i, r := range np.Spec.Ingress {
				if portsMatch(r.Ports, c) && peersMatch(r.From, np.Namespace, other, nsLabels) {
					d.Allowed, d.AllowedBy = true, fmt.Sprintf("%s ingress[%d]", key, i)
					break
				}
			}
		} else {
			for i, r := range np.Spec.Egress {
				if portsMatch(r.Ports, c) && peersMatch(r.To, np.Namespace, other, nsLabels) {
					d.Allowed, d.AllowedBy = true, fmt.Sprintf("%s egress[%d]", key, i)
					break
				}
			}
		}
	}
	if len(d.Selected) == 0 {
		d.Allowed = true
	}
	return d
}

// HasType reports whether the policy restricts this direction: its
// policyTypes, or, when it has none (not defaulted), Ingress always and
// Egress when it has egress rules.
func HasType(np *NetworkPolicy, dir string) bool {
	types := np.Spec.PolicyTypes
	if len(types) == 0 {
		types = []string{PolicyTypeIngress}
		if len(np.Spec.Egress) > 0 {
			types = append(types, PolicyTypeEgress)
		}
	}
	for _, t := range types {
		if t == dir {
			return true
		}
	}
	return false
}

func matches(ls *meta.LabelSelector, labels map[string]string) bool {
	s, err := selector.FromLabelSelector(ls)
	return err == nil && s.Matches(labels)
}

// portsMatch: no ports allow every port; a numeric port (with endPort, a
// range) and protocol, or a named port resolved against the destination
// pod's container ports.
func portsMatch(ports []NetworkPolicyPort, c Connection) bool {
	if len(ports) == 0 {
		return true
	}
	for _, p := range ports {
		proto := "TCP"
		if p.Protocol != nil {
			proto = *p.Protocol
		}
		if !strings.EqualFold(proto, c.Protocol) {
			continue
		}
		switch {
		case p.Port == nil:
			return true
		case p.Port.IsString:
			for _, np := range c.Dst.Ports {
				if np.Name == p.Port.StrVal && strings.EqualFold(cmpOr(np.Protocol, "TCP"), c.Protocol) && np.Port == c.Port {
					return true
				}
			}
		case p.EndPort != nil:
			if c.Port >= p.Port.IntVal && c.Port <= *p.EndPort {
				return true
			}
		case p.Port.IntVal == c.Port:
			return true
		}
	}
	return false
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// peersMatch: no peers allow everyone; a podSelector alone means pods of
// the policy's namespace, a namespaceSelector alone every pod of the
// namespaces it selects, both together the selected pods of the selected
// namespaces; an ipBlock matches addresses in its CIDR and outside its
// exceptions.
func peersMatch(peers []NetworkPolicyPeer, policyNS string, e Endpoint, nsLabels map[string]map[string]string) bool {
	if len(peers) == 0 {
		return true
	}
	for _, p := range peers {
		if p.IPBlock != nil {
			if ipBlockContains(p.IPBlock, e.IP) {
				return true
			}
			continue
		}
		if PeerSelectsPod(p, policyNS, e, nsLabels) {
			return true
		}
	}
	return false
}

// PeerSelectsPod reports whether a pod peer (podSelector and/or
// namespaceSelector; not an ipBlock) of a policy in policyNS selects e.
func PeerSelectsPod(p NetworkPolicyPeer, policyNS string, e Endpoint, nsLabels map[string]map[string]string) bool {
	if !e.Pod || p.IPBlock != nil {
		return false
	}
	if p.NamespaceSelector != nil {
		if !matches(p.NamespaceSelector, nsLabels[e.Namespace]) {
			return false
		}
	} else if e.Namespace != policyNS {
		return false
	}
	return p.PodSelector == nil || matches(p.PodSelector, e.Labels)
}

// SelectsPod reports whether the policy applies to pod e (of its
// namespace, matching its podSelector), in whichever direction.
func SelectsPod(np *NetworkPolicy, e Endpoint) bool {
	return e.Pod && np.Namespace == e.Namespace && matches(&np.Spec.PodSelector, e.Labels)
}

// PodEndpoint is a pod as NetworkPolicy sees it: namespace, labels, its
// address (invalid while it has none) and named container ports.
func PodEndpoint(p *core.Pod) Endpoint {
	e := Endpoint{Pod: true, Namespace: p.Namespace, Name: p.Name, Labels: p.Labels}
	if ip, err := netip.ParseAddr(p.Status.PodIP); err == nil {
		e.IP = ip
	}
	for _, ct := range p.Spec.Containers {
		for _, cp := range ct.Ports {
			if cp.Name != "" {
				e.Ports = append(e.Ports, NamedPort{Name: cp.Name, Protocol: cmpOr(string(cp.Protocol), "TCP"), Port: cp.ContainerPort})
			}
		}
	}
	return e
}

// ipBlockContains reports whether ip is in the block's CIDR and in none of
// its exceptions.
func ipBlockContains(b *IPBlock, ip netip.Addr) bool {
	cidr, err := netip.ParsePrefix(b.CIDR)
	if err != nil || !ip.IsValid() || !cidr.Contains(ip) {
		return false
	}
	for _, e := range b.Except {
		if ex, err := netip.ParsePrefix(e); err == nil && ex.Contains(ip) {
			return false
		}
	}
	return true
}
