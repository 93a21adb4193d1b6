package framework

import (
	"context"
	"strings"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/policy"
	"github.com/kobune/kobune/api/resource"
	"github.com/kobune/kobune/api/storage"
)

// MaxNodeScore is the best score a plugin gives.
const MaxNodeScore = 100

// Code says how a plugin's check ended.
type Code int

// Codes: a nil *Status means Success.
const (
	Success Code = iota
	// Unschedulable: the pod does not fit this node (reasons say why);
	// deleting pods of lower priority might make it fit.
	Unschedulable
	// UnschedulableAndUnresolvable: the pod does not fit and no
	// preemption would change that (a taint, a node selector, a cordon).
	UnschedulableAndUnresolvable
	// Error: the plugin could not decide (an internal problem, not a verdict).
	Error
	// Skip: the plugin does not apply to this pod (a PostFilter for a pod
	// that may not preempt).
	Skip
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

// CycleState carries what was computed once per scheduling attempt to the
// per-node calls of the same attempt (kube-scheduler's CycleState). The
// framework fills Requests before any plugin runs; PreFilter and PreScore
// plugins may Write their own entries, which Filter and Score (called in
// parallel across nodes) only Read.
type CycleState struct {
	// Requests are the pod's summed requests (PodRequests), and
	// NonZero the same with the scoring defaults (NonZeroRequests).
	Requests, NonZero Resources
	// AllNodes is every node of the snapshot, for plugins that look at
	// other nodes than the one they judge (spread, inter-pod affinity).
	AllNodes []*NodeInfo
	// Index, when set, answers cluster-wide counting questions faster
	// than walking AllNodes (the scheduler sets it; tests may not).
	Index ClusterIndex
	// Volumes, when set, reads the claims, volumes and classes that
	// VolumeBinding judges by (the scheduler sets it).
	Volumes VolumeLister
	// Budgets, when set, lists the PodDisruptionBudgets, which preemption
	// tries not to break (the scheduler sets it).
	Budgets func() []*policy.PodDisruptionBudget
	data    map[string]any
}

// VolumeLister reads claims, volumes and storage classes from the
// scheduler's caches.
type VolumeLister interface {
	Claim(namespace, name string) (*core.PersistentVolumeClaim, bool)
	Volume(name string) (*core.PersistentVolume, bool)
	Volumes() []*core.PersistentVolume
	Class(name string) (*storage.StorageClass, bool)
	// Claims is every claim (VolumeBinding counts the ones a node was
	// selected for that are not bound yet).
	Claims() []*core.PersistentVolumeClaim
	// Driver is a CSI driver's CSIDriver object; Capacities are the
	// CSIStorageCapacity objects of every namespace (VolumeBinding's
	// capacity check for drivers that ask for it).
	Driver(name string) (*storage.CSIDriver, bool)
	Capacities() []*storage.CSIStorageCapacity
}

// NewCycleState returns the state for one attempt at scheduling pod.
func NewCycleState(pod *core.Pod, nodes []*NodeInfo) *CycleState {
	return &CycleState{Requests: PodRequests(pod), NonZero: NonZeroRequests(pod), AllNodes: nodes}
}

// Write stores a plugin's entry (PreFilter and PreScore only).
func (c *CycleState) Write(key string, v any) {
	if c.data == nil {
		c.data = map[string]any{}
	}
	c.data[key] = v
}

// Read returns a plugin's entry, or nil.
func (c *CycleState) Read(key string) any { return c.data[key] }

// PreFilterPlugin runs once per attempt before any Filter, to compute what
// the filters need from the whole cluster (for example the pods that match a
// spread constraint, per topology domain). An Unschedulable status ends the
// attempt: no node can fit.
type PreFilterPlugin interface {
	Plugin
	PreFilter(ctx context.Context, state *CycleState, pod *core.Pod) *Status
}

// FilterPlugin decides whether a pod can run on a node. Filter is called
// for many nodes at once, from several goroutines.
type FilterPlugin interface {
	Plugin
	Filter(ctx context.Context, state *CycleState, pod *core.Pod, node *NodeInfo) *Status
}

// PreScorePlugin runs once per attempt before any Score, with the nodes
// that passed every filter.
type PreScorePlugin interface {
	Plugin
	PreScore(ctx context.Context, state *CycleState, pod *core.Pod, feasible []*NodeInfo) *Status
}

// ScorePlugin ranks a node that passed every filter, 0–MaxNodeScore
// (plugins with a ScoreNormalizer may return raw scores).
type ScorePlugin interface {
	Plugin
	Score(ctx context.Context, state *CycleState, pod *core.Pod, node *NodeInfo) (int64, *Status)
}

// ScoreNormalizer is implemented by score plugins whose raw scores are
// only meaningful relative to other nodes: it rescales them, in place, to
// 0–MaxNodeScore across the feasible nodes (scores[i] is the i-th feasible
// node's).
type ScoreNormalizer interface {
	Normalize(scores []int64)
}

// Requests Kubernetes assumes, for scoring only, for a container that
// states none: without them, pods without requests would all look free and
// pile onto the first node (kube-scheduler's DefaultMilliCPURequest and
// DefaultMemoryRequest).
const (
	DefaultMilliCPURequest = 100
	DefaultMemoryRequest   = 200 << 20
)

// NonZeroRequests sums a pod's requests with the defaults for containers
// that state no cpu or memory request; the resource score plugins use it.
func NonZeroRequests(p *core.Pod) Resources {
	requests := requestsOf(p)
	r := core.PodAggregate(&p.Spec, func(c *core.Container) Resources {
		req := requests(c)
		cpu, mem := req.Cpu().MilliValue(), req.Memory().Value()
		if _, ok := req[resource.CPU]; !ok {
			cpu = DefaultMilliCPURequest
		}
		if _, ok := req[resource.Memory]; !ok {
			mem = DefaultMemoryRequest
		}
		return Resources{MilliCPU: cpu, Memory: mem}
	}, addResources, largerResources)
	r = addResources(r, overheadOf(p))
	r.Pods = 1
	return r
}

// requestsOf is what each of the pod's containers holds on its node, as
// kube-scheduler counts it with in-place resize: the larger of the spec's
// requests and the node's actual ones (status resources) while a resize
// is on its way — a pod shrunk in its spec still holds the old amount
// until the node applies it — and the actual ones alone when the node
// called the resize Infeasible (it will never apply it).
func requestsOf(p *core.Pod) func(*core.Container) resource.List {
	actual := map[string]resource.List{}
	for _, list := range [][]core.ContainerStatus{p.Status.ContainerStatuses, p.Status.InitContainerStatuses} {
		for _, cs := range list {
			if cs.Resources != nil && cs.Resources.Requests != nil {
				actual[cs.Name] = cs.Resources.Requests
			}
		}
	}
	if len(actual) == 0 {
		return func(c *core.Container) resource.List { return c.Resources.Requests }
	}
	infeasible := false
	for _, cond := range p.Status.Conditions {
		infeasible = infeasible || (cond.Type == core.PodResizePending && cond.Reason == "Infeasible")
	}
	return func(c *core.Container) resource.List {
		have, ok := actual[c.Name]
		switch {
		case !ok:
			return c.Resources.Requests
		case infeasible:
			return have
		}
		out := resource.List{}
		for name, q := range c.Resources.Requests {
			out[name] = q
		}
		for name, q := range have {
			if cur, ok := out[name]; !ok || q.Cmp(cur) > 0 {
				out[name] = q
			}
		}
		return out
	}
}

// overheadOf is the pod's overhead (from its RuntimeClass) as Resources:
// Kubernetes adds it to what the pod requests.
func overheadOf(p *core.Pod) Resources {
	o := p.Spec.Overhead
	if len(o) == 0 {
		return Resources{}
	}
	r := Resources{MilliCPU: o.Cpu().MilliValue(), Memory: o.Memory().Value()}
	r.addExtended(o)
	return r
}

// Resources are summed requests in the units the scheduler compares.
type Resources struct {
	MilliCPU int64
	Memory   int64
	Pods     int64
	// Extended are extended resources (example.com/dongle) in whole
	// units, as kube-scheduler's ScalarResources; nil when none.
	Extended map[resource.Name]int64
}

// addExtended adds each extended resource of l to r.
func (r *Resources) addExtended(l resource.List) {
	for name, q := range l {
		if core.IsExtendedResourceName(name) {
			r.setExtended(name, r.Extended[name]+q.Value())
		}
	}
}

func (r *Resources) setExtended(name resource.Name, v int64) {
	if r.Extended == nil {
		r.Extended = map[resource.Name]int64{}
	}
	r.Extended[name] = v
}

// PodRequests sums a pod's container requests; init containers run one at
// a time (beside the sidecars started before them), so each counts only
// if it asks for more than the sum (as in Kubernetes: core.PodAggregate);
// the pod's overhead is added.
func PodRequests(p *core.Pod) Resources {
	requests := requestsOf(p)
	r := core.PodAggregate(&p.Spec, func(c *core.Container) Resources {
		req := requests(c)
		r := Resources{MilliCPU: req.Cpu().MilliValue(), Memory: req.Memory().Value()}
		r.addExtended(req)
		return r
	}, addResources, largerResources)
	r = addResources(r, overheadOf(p))
	r.Pods = 1
	return r
}

// addResources and largerResources combine two containers' amounts
// (Pods is the caller's).
func addResources(a, b Resources) Resources {
	out := Resources{MilliCPU: a.MilliCPU + b.MilliCPU, Memory: a.Memory + b.Memory}
	for _, x := range [2]Resources{a, b} {
		for name, v := range x.Extended {
			out.setExtended(name, out.Extended[name]+v)
		}
	}
	return out
}

func largerResources(a, b Resources) Resources {
	out := Resources{MilliCPU: max(a.MilliCPU, b.MilliCPU), Memory: max(a.Memory, b.Memory)}
	for _, x := range [2]Resources{a, b} {
		for name, v := range x.Extended {
			out.setExtended(name, max(out.Extended[name], v))
		}
	}
	return out
}

// NodeInfo is a node and what is already placed on it: bound pods and
// pods the scheduler assumed there before their bind returned.
type NodeInfo struct {
	Node      *core.Node
	Pods      []*core.Pod
	Requested Resources
	// NonZeroRequested sums NonZeroRequests of the pods (for scoring).
	NonZeroRequested Resources
	Allocatable      Resources
	// PodsWithAffinity are the pods here that have pod affinity or
	// anti-affinity terms, parsed once when they were added.
	PodsWithAffinity []*PodAffinity
}

// NewNodeInfo builds a NodeInfo from a node and its pods.
func NewNodeInfo(n *core.Node, pods ...*core.Pod) *NodeInfo {
	ni := &NodeInfo{}
	ni.SetNode(n)
	for _, p := range pods {
		ni.AddPod(p)
	}
	return ni
}

// SetNode replaces the node (a change seen by the informer), keeping the pods.
func (n *NodeInfo) SetNode(node *core.Node) {
	n.Node = node
	if node == nil {
		n.Allocatable = Resources{}
		return
	}
	a := node.Status.Allocatable
	n.Allocatable = Resources{MilliCPU: a.Cpu().MilliValue(), Memory: a.Memory().Value(), Pods: quantity(a, resource.Pods)}
	n.Allocatable.addExtended(a)
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
	n.account(p, 1)
}

// RemovePod takes the pod with p's namespace and name off the node and
// returns the version that was there (nil if none).
func (n *NodeInfo) RemovePod(p *core.Pod) *core.Pod {
	for i, q := range n.Pods {
		if q.Name == p.Name && q.Namespace == p.Namespace {
			n.account(q, -1)
			last := len(n.Pods) - 1
			n.Pods[i] = n.Pods[last]
			n.Pods[last] = nil
			n.Pods = n.Pods[:last]
			return q
		}
	}
	return nil
}

func (n *NodeInfo) account(p *core.Pod, sign int64) {
	r := PodRequests(p)
	n.Requested.MilliCPU += sign * r.MilliCPU
	n.Requested.Memory += sign * r.Memory
	n.Requested.Pods += sign * r.Pods
	for name, q := range r.Extended {
		n.Requested.setExtended(name, n.Requested.Extended[name]+sign*q)
	}
	nz := NonZeroRequests(p)
	n.NonZeroRequested.MilliCPU += sign * nz.MilliCPU
	n.NonZeroRequested.Memory += sign * nz.Memory
	if sign > 0 {
		if pa := ParsePodAffinity(p); pa != nil {
			n.PodsWithAffinity = append(n.PodsWithAffinity, pa)
		}
		return
	}
	for i, pa := range n.PodsWithAffinity {
		if pa.Pod.Name == p.Name && pa.Pod.Namespace == p.Namespace {
			n.PodsWithAffinity = append(n.PodsWithAffinity[:i], n.PodsWithAffinity[i+1:]...)
			break
		}
	}
}
