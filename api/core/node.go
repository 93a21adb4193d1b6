package core

import (
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/api/resource"
)

// Node is a machine that runs pods; its agent registers and updates it.
type Node struct {
	meta.TypeMeta   `json:",inline"`
	meta.ObjectMeta `json:"metadata"`
	Spec            NodeSpec   `json:"spec,omitzero"`
	Status          NodeStatus `json:"status,omitzero"`
}

// NodeSpec is the desired state of a node.
type NodeSpec struct {
	PodCIDR       string   `json:"podCIDR,omitempty"`
	PodCIDRs      []string `json:"podCIDRs,omitempty"`
	Unschedulable bool     `json:"unschedulable,omitempty"`
	Taints        []Taint  `json:"taints,omitempty"`
}

// TaintEffect is NoSchedule, PreferNoSchedule or NoExecute.
type TaintEffect string

// Taint effects.
const (
	TaintNoSchedule       TaintEffect = "NoSchedule"
	TaintPreferNoSchedule TaintEffect = "PreferNoSchedule"
	TaintNoExecute        TaintEffect = "NoExecute"
)

// Taint repels pods that do not tolerate it.
type Taint struct {
	Key       string      `json:"key"`
	Value     string      `json:"value,omitempty"`
	Effect    TaintEffect `json:"effect"`
	TimeAdded *meta.Time  `json:"timeAdded,omitempty"`
}

// NodeStatus is the observed state of a node, reported by its agent.
type NodeStatus struct {
	Capacity    resource.List    `json:"capacity,omitempty"`
	Allocatable resource.List    `json:"allocatable,omitempty"`
	Conditions  []NodeCondition  `json:"conditions,omitempty"`
	Addresses   []NodeAddress    `json:"addresses,omitempty"`
	NodeInfo    NodeSystemInfo   `json:"nodeInfo,omitzero"`
	Images      []ContainerImage `json:"images,omitempty" kobune:"unsupported"`
	// DaemonEndpoints says where the node's agent serves logs and exec.
	DaemonEndpoints NodeDaemonEndpoints `json:"daemonEndpoints,omitzero"`
}

// NodeDaemonEndpoints lists the ports of the node's daemons.
type NodeDaemonEndpoints struct {
	KubeletEndpoint DaemonEndpoint `json:"kubeletEndpoint,omitzero"`
}

// DaemonEndpoint is a port.
type DaemonEndpoint struct {
	Port int32 `json:"Port"`
}

// NodeConditionType names a node condition.
type NodeConditionType string

// Node conditions.
const (
	NodeReady          NodeConditionType = "Ready"
	NodeMemoryPressure NodeConditionType = "MemoryPressure"
	NodeDiskPressure   NodeConditionType = "DiskPressure"
	NodePIDPressure    NodeConditionType = "PIDPressure"
)

// NodeCondition is one condition of a node.
type NodeCondition struct {
	Type               NodeConditionType    `json:"type"`
	Status             meta.ConditionStatus `json:"status"`
	LastHeartbeatTime  meta.Time            `json:"lastHeartbeatTime,omitzero"`
	LastTransitionTime meta.Time            `json:"lastTransitionTime,omitzero"`
	Reason             string               `json:"reason,omitempty"`
	Message            string               `json:"message,omitempty"`
}

// NodeAddress is an address of a node (InternalIP, Hostname, ...).
type NodeAddress struct {
	Type    string `json:"type"`
	Address string `json:"address"`
}

// NodeSystemInfo describes the node's software.
type NodeSystemInfo struct {
	MachineID               string `json:"machineID,omitempty" kobune:"unsupported"`
	KernelVersion           string `json:"kernelVersion,omitempty"`
	OSImage                 string `json:"osImage,omitempty"`
	ContainerRuntimeVersion string `json:"containerRuntimeVersion,omitempty"`
	KubeletVersion          string `json:"kubeletVersion,omitempty"`
	OperatingSystem         string `json:"operatingSystem,omitempty"`
	Architecture            string `json:"architecture,omitempty"`
}

// ContainerImage is an image present on a node.
type ContainerImage struct {
	Names     []string `json:"names"`
	SizeBytes int64    `json:"sizeBytes,omitempty"`
}

// Namespace groups namespaced objects; deleting it deletes what it holds.
type Namespace struct {
	meta.TypeMeta   `json:",inline"`
	meta.ObjectMeta `json:"metadata"`
	Spec            NamespaceSpec   `json:"spec,omitzero"`
	Status          NamespaceStatus `json:"status,omitzero"`
}

// NamespaceSpec lists the finalizers that must finish before the namespace goes.
type NamespaceSpec struct {
	Finalizers []string `json:"finalizers,omitempty"`
}

// NamespaceStatus holds the phase (Active or Terminating) and, while the
// namespace is being deleted, conditions saying what holds it up.
type NamespaceStatus struct {
	Phase      string               `json:"phase,omitempty"`
	Conditions []NamespaceCondition `json:"conditions,omitempty"`
}

// NamespaceCondition is one fact about a namespace's deletion.
type NamespaceCondition struct {
	Type               string               `json:"type"`
	Status             meta.ConditionStatus `json:"status"`
	LastTransitionTime meta.Time            `json:"lastTransitionTime,omitzero"`
	Reason             string               `json:"reason,omitempty"`
	Message            string               `json:"message,omitempty"`
}

// FinalizerKubernetes is the spec finalizer every namespace gets when it
// is created: it is taken away once the namespace's content is gone, and
// the namespace goes when no finalizer is left.
const FinalizerKubernetes = "kubernetes"

// The conditions of a namespace being deleted, as Kubernetes' namespace
// controller writes them.
const (
	NamespaceDeletionDiscoveryFailure           = "NamespaceDeletionDiscoveryFailure"
	NamespaceDeletionGroupVersionParsingFailure = "NamespaceDeletionGroupVersionParsingFailure"
	NamespaceDeletionContentFailure             = "NamespaceDeletionContentFailure"
	NamespaceContentRemaining                   = "NamespaceContentRemaining"
	NamespaceFinalizersRemaining                = "NamespaceFinalizersRemaining"
)

// Namespace phases.
const (
	NamespaceActive      = "Active"
	NamespaceTerminating = "Terminating"
)

// IsNodeReady reports whether the node's Ready condition is True (its
// agent heartbeats and says it can run pods).
func IsNodeReady(n *Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == NodeReady {
			return c.Status == meta.ConditionTrue
		}
	}
	return false
}
