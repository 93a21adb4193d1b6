package plugins

import (
	"context"
	"strconv"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/scheduler/framework"
)

// NodeAffinity enforces the pod's nodeSelector and its required node
// affinity (terms ORed, expressions ANDed; In, NotIn, Exists,
// DoesNotExist, Gt, Lt).
type NodeAffinity struct{}

var _ framework.FilterPlugin = NodeAffinity{}

// Name implements framework.Plugin.
func (NodeAffinity) Name() string { return "NodeAffinity" }

// Filter implements framework.FilterPlugin.
func (NodeAffinity) Filter(_ context.Context, _ *framework.CycleState, pod *core.Pod, n *framework.NodeInfo) *framework.Status {
	if !nodeMatchesPod(pod, n.Node) {
		return framework.NewStatus(framework.UnschedulableAndUnresolvable, "node(s) didn't match Pod's node affinity/selector")
	}
	return nil
}

// nodeMatchesPod reports whether the node satisfies the pod's nodeSelector
// and required node affinity.
func nodeMatchesPod(pod *core.Pod, node *core.Node) bool {
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
		if termMatches(term, labels, node.Name) {
			return true
		}
	}
	return false
}

// termMatches reports whether every expression of a term holds.
func termMatches(t core.NodeSelectorTerm, labels map[string]string, nodeName string) bool {
	if len(t.MatchExpressions) == 0 && len(t.MatchFields) == 0 {
		return false // an empty term matches nothing, as in Kubernetes
	}
	for _, r := range t.MatchExpressions {
		if !requirementMatches(r, labels) {
			return false
		}
	}
	for _, r := range t.MatchFields {
		if r.Key != "metadata.name" || !requirementMatches(core.NodeSelectorRequirement{Key: "n", Operator: r.Operator, Values: r.Values}, map[string]string{"n": nodeName}) {
			return false
		}
	}
	return true
}

func requirementMatches(r core.NodeSelectorRequirement, labels map[string]string) bool {
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
