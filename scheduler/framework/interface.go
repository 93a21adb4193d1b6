package framework

import (
	"context"
	"strings"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/resource"
)

// MaxNodeScore is the best score a plugin gives.
const MaxNodeScore = 100

// Code says how a plugin's check ended.
type Code int

// Codes: a nil *Status means Success.
const (
	Success Code = iota
	// Unschedulable: the pod does not fit this node (reasons say why).
	Unschedulable
	// Error: the plugin could not decide (an internal problem, not a verdict).
	Error
)

// Status is a plugin's verdict; nil is success.
type Status struct {
	Code    Code
	Reasons []string
}

// NewStatus returns a status with reasons.
func NewStatus(code Code, reasons ...string) *Status { return &Status{Code: code, Reasons: reasons} }

// IsSuccess reports whether s is nil or Success.
func (s *Status) IsSuccess() bool { return s == nil || s.Code == Success }

// Message joins the reasons.
func (s *Status) Message() string {
	if s == nil {
		return ""
	}
	return strings.Join(s.Reasons, ", ")
}

// Plugin is any scheduler plugin.
type Plugin interface{ Name() string }

// FilterPlugin decides whether a pod can run on a node.
type FilterPlugin interface {
	Plugin
	Filter(ctx context.Context, pod *core.Pod, node *NodeInfo) *Status
}

// ScorePlugin ranks a node that passed every filter, 0–MaxNodeScore.
type ScorePlugin interface {
	Plugin
	Score(ctx context.Context, pod *core.Pod, node *NodeInfo) (int64, *Status)
}

// ScoreNormalizer is implemented by score plugins whose raw scores are
// only meaningful relative to other nodes: it rescales them, in place, to
// 0–MaxNodeScore across the feasible nodes.
type ScoreNormalizer interface {
	Normalize(scores map[string]int64)
}

// Resources are summed requests in the units the scheduler compares.
type Resources struct {
	MilliCPU int64
	Memory   int64
	Pods     int64
}

// PodRequests sums a pod's container requests; init containers run one at
// a time, so each counts only if it asks for more than the sum (as in
// Kubernetes).
func PodRequests(p *core.Pod) Resources {
	var r Resources
	for _, c := range p.Spec.Containers {
		r.MilliCPU += c.Resources.Requests.Cpu().MilliValue()
		r.Memory += c.Resources.Requests.Memory().Value()
	}
	for _, c := range p.Spec.InitContainers {
		r.MilliCPU = max(r.MilliCPU, c.Resources.Requests.Cpu().MilliValue())
		r.Memory = max(r.Memory, c.Resources.Requests.Memory().Value())
	}
	r.Pods = 1
	return r
}

// NodeInfo is a node and what is already placed on it.
type NodeInfo struct {
	Node        *core.Node
	Pods        []*core.Pod
	Requested   Resources
	Allocatable Resources
}

// NewNodeInfo builds a NodeInfo from a node and its pods.
func NewNodeInfo(n *core.Node, pods ...*core.Pod) *NodeInfo {
	a := n.Status.Allocatable
	ni := &NodeInfo{Node: n, Allocatable: Resources{
		MilliCPU: a.Cpu().MilliValue(), Memory: a.Memory().Value(), Pods: quantity(a, resource.Pods),
	}}
	for _, p := range pods {
		ni.AddPod(p)
	}
	return ni
}

func quantity(l resource.List, name resource.Name) int64 {
	q, ok := l[name]
	if !ok {
		return 0
	}
	return q.Value()
}

// AddPod places a pod on the node (also an assumed one).
func (n *NodeInfo) AddPod(p *core.Pod) {
	n.Pods = append(n.Pods, p)
	r := PodRequests(p)
	n.Requested.MilliCPU += r.MilliCPU
	n.Requested.Memory += r.Memory
	n.Requested.Pods += r.Pods
}
