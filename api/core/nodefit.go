package core

import "strconv"

// The node-fit rules that both the scheduler's plugins and the DaemonSet
// controller apply (Kubernetes keeps them in component-helpers): a pod's
// nodeSelector and required node affinity, and its tolerations.

// PodMatchesNodeSelectorAndAffinity reports whether the node satisfies the pod's nodeSelector
// and required node affinity.
func PodMatchesNodeSelectorAndAffinity(pod *Pod, node *Node) bool {
	labels := node.Labels
	for k, v := range pod.Spec.NodeSelector {
		if labels[k] != v {
			return false
		}
	}
	a := pod.Spec.Affinity
	if a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return true
	}
	for _, term := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		if NodeSelectorTermMatches(term, labels, node.Name) {
			return true
		}
	}
	return false
}

// NodeSelectorTermMatches reports whether every expression of a term holds
// for a node with these labels and name.
func NodeSelectorTermMatches(t NodeSelectorTerm, labels map[string]string, nodeName string) bool {
	if len(t.MatchExpressions) == 0 && len(t.MatchFields) == 0 {
		return false // an empty term matches nothing, as in Kubernetes
	}
	for _, r := range t.MatchExpressions {
		if !requirementMatches(r, labels) {
			return false
		}
	}
	for _, r := range t.MatchFields {
		if r.Key != "metadata.name" || !requirementMatches(NodeSelectorRequirement{Key: "n", Operator: r.Operator, Values: r.Values}, map[string]string{"n": nodeName}) {
			return false
		}
	}
	return true
}

func requirementMatches(r NodeSelectorRequirement, labels map[string]string) bool {
	v, has := labels[r.Key]
	in := func() bool {
		for _, x := range r.Values {
			if x == v {
				return true
			}
		}
		return false
	}
	switch r.Operator {
	case "In":
		return has && in()
	case "NotIn":
		return !has || !in()
	case "Exists":
		return has
	case "DoesNotExist":
		return !has
	case "Gt", "Lt":
		if !has || len(r.Values) != 1 {
			return false
		}
		got, err1 := strconv.ParseInt(v, 10, 64)
		want, err2 := strconv.ParseInt(r.Values[0], 10, 64)
		if err1 != nil || err2 != nil {
			return false
		}
		if r.Operator == "Gt" {
			return got > want
		}
		return got < want
	}
	return false
}

// ToleratesTaint reports whether any of the pod's tolerations matches the taint.
func (p *Pod) ToleratesTaint(taint *Taint) bool {
	for i := range p.Spec.Tolerations {
		if p.Spec.Tolerations[i].ToleratesTaint(taint) {
			return true
		}
	}
	return false
}

// UntoleratedTaint returns the first NoSchedule or NoExecute taint of the
// node that the pod does not tolerate, or nil.
func UntoleratedTaint(pod *Pod, node *Node) *Taint {
	for i := range node.Spec.Taints {
		t := &node.Spec.Taints[i]
		if t.Effect != TaintPreferNoSchedule && !pod.ToleratesTaint(t) {
			return t
		}
	}
	return nil
}

// HostPortsConflict reports whether two pods ask for the same host port:
// the same port and protocol (TCP by default) on overlapping host IPs
// (none, or 0.0.0.0, overlaps every address). The scheduler's NodePorts
// filter and the agent's admission (the kubelet's) both ask it.
func HostPortsConflict(a, b *Pod) bool {
	mine := hostPorts(a)
	if len(mine) == 0 {
		return false
	}
	for _, used := range hostPorts(b) {
		for _, w := range mine {
			if w.port == used.port && w.protocol == used.protocol && (w.ip == used.ip || w.ip == "0.0.0.0" || used.ip == "0.0.0.0") {
				return true
			}
		}
	}
	return false
}

// HasHostPorts reports whether a container of the pod asks for a host port.
func HasHostPorts(p *Pod) bool { return len(hostPorts(p)) > 0 }

type hostPort struct {
	ip, protocol string
	port         int32
}

func hostPorts(p *Pod) []hostPort {
	var out []hostPort
	for _, c := range p.Spec.Containers {
		for _, cp := range c.Ports {
			if cp.HostPort == 0 {
				continue
			}
			ip, proto := cp.HostIP, string(cp.Protocol)
			if ip == "" {
				ip = "0.0.0.0"
			}
			if proto == "" {
				proto = "TCP"
			}
			out = append(out, hostPort{ip: ip, protocol: proto, port: cp.HostPort})
		}
	}
	return out
}
