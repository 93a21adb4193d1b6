// Package stats is the shape of a node's resource usage as its agent
// reports it: Kubernetes' kubelet Summary API (/stats/summary,
// k8s.io/kubelet/pkg/apis/stats/v1alpha1), with the same JSON field
// names, so what a student reads here is what a kubelet serves. The
// agent (agent/stats) fills it from the kernel's cgroups and /proc; the
// API server turns it into metrics.k8s.io NodeMetrics and PodMetrics;
// kobectl top prints those.
//
// Kobune adds one thing the kubelet keeps for its Prometheus endpoint
// only: each container's CFS throttling (cpu.throttling), so that
// "limited to 200m and throttled" is visible in one read.
package stats

import "time"

// Summary is one node's usage.
type Summary struct {
	Node NodeStats  `json:"node"`
	Pods []PodStats `json:"pods"`
}

// NodeStats is the node as a whole. Kobune's node figures are the sums
// of its pods' cgroups (the kubelet's "pods" system container), not the
// machine's: several lab nodes share one machine (docs/metrics.md).
type NodeStats struct {
	NodeName  string        `json:"nodeName"`
	StartTime time.Time     `json:"startTime"`
	CPU       *CPUStats     `json:"cpu,omitempty"`
	Memory    *MemoryStats  `json:"memory,omitempty"`
	Network   *NetworkStats `json:"network,omitempty"`
	Fs        *FsStats      `json:"fs,omitempty"`
	Rlimit    *RlimitStats  `json:"rlimit,omitempty"`
}

// PodReference names a pod.
type PodReference struct {
	Name      string `json:"name"`
	Namespace string `json:"namespace"`
	UID       string `json:"uid"`
}

// PodStats is one pod: its containers, and the pod's own cgroup (which
// holds them all), network and volumes.
type PodStats struct {
	PodRef           PodReference     `json:"podRef"`
	StartTime        time.Time        `json:"startTime"`
	Containers       []ContainerStats `json:"containers"`
	CPU              *CPUStats        `json:"cpu,omitempty"`
	Memory           *MemoryStats     `json:"memory,omitempty"`
	Network          *NetworkStats    `json:"network,omitempty"`
	VolumeStats      []VolumeStats    `json:"volume,omitempty"`
	EphemeralStorage *FsStats         `json:"ephemeral-storage,omitempty"`
}

// ContainerStats is one running container.
type ContainerStats struct {
	Name      string       `json:"name"`
	StartTime time.Time    `json:"startTime"`
	CPU       *CPUStats    `json:"cpu,omitempty"`
	Memory    *MemoryStats `json:"memory,omitempty"`
	Rootfs    *FsStats     `json:"rootfs,omitempty"`
	Logs      *FsStats     `json:"logs,omitempty"`
}

// CPUStats: usageCoreNanoSeconds is the cgroup's cumulative CPU time;
// usageNanoCores its rate over the last sampling window (5 s).
type CPUStats struct {
	Time                 time.Time        `json:"time"`
	UsageNanoCores       *uint64          `json:"usageNanoCores,omitempty"`
	UsageCoreNanoSeconds *uint64          `json:"usageCoreNanoSeconds,omitempty"`
	Throttling           *ThrottlingStats `json:"throttling,omitempty"`
}

// ThrottlingStats is the CFS quota's effect (cpu.stat): periods with
// runnable tasks, periods in which the quota ran out, and the time the
// cgroup's tasks waited for the next period.
type ThrottlingStats struct {
	Periods          uint64 `json:"periods"`
	ThrottledPeriods uint64 `json:"throttledPeriods"`
	ThrottledTimeNs  uint64 `json:"throttledTimeNanoSeconds"`
}

// MemoryStats: workingSetBytes (usage minus inactive file cache) is what
// the kubelet evicts on and what the OOM killer is near; rssBytes the
// anonymous memory; oomKills the kernel's count of OOM kills in the cgroup
// (a Kobune addition, from memory.oom_control or memory.events).
type MemoryStats struct {
	Time            time.Time `json:"time"`
	AvailableBytes  *uint64   `json:"availableBytes,omitempty"`
	UsageBytes      *uint64   `json:"usageBytes,omitempty"`
	WorkingSetBytes *uint64   `json:"workingSetBytes,omitempty"`
	RSSBytes        *uint64   `json:"rssBytes,omitempty"`
	PageFaults      *uint64   `json:"pageFaults,omitempty"`
	MajorPageFaults *uint64   `json:"majorPageFaults,omitempty"`
	OOMKills        *uint64   `json:"oomKills,omitempty"`
}

// NetworkStats is a pod's interfaces (all but lo), from its network
// namespace's /proc/net/dev.
type NetworkStats struct {
	Time           time.Time `json:"time"`
	InterfaceStats `json:",inline"`
	Interfaces     []InterfaceStats `json:"interfaces,omitempty"`
}

// InterfaceStats is one interface's counters.
type InterfaceStats struct {
	Name     string  `json:"name"`
	RxBytes  *uint64 `json:"rxBytes,omitempty"`
	RxErrors *uint64 `json:"rxErrors,omitempty"`
	TxBytes  *uint64 `json:"txBytes,omitempty"`
	TxErrors *uint64 `json:"txErrors,omitempty"`
}

// FsStats is a filesystem or directory: bytes and inodes used (and, for
// a filesystem, its capacity and what is free).
type FsStats struct {
	Time           time.Time `json:"time"`
	AvailableBytes *uint64   `json:"availableBytes,omitempty"`
	CapacityBytes  *uint64   `json:"capacityBytes,omitempty"`
	UsedBytes      *uint64   `json:"usedBytes,omitempty"`
	InodesFree     *uint64   `json:"inodesFree,omitempty"`
	Inodes         *uint64   `json:"inodes,omitempty"`
	InodesUsed     *uint64   `json:"inodesUsed,omitempty"`
}

// VolumeStats is one of a pod's volumes (emptyDir and others the agent
// owns a directory for).
type VolumeStats struct {
	FsStats `json:",inline"`
	Name    string `json:"name"`
}

// RlimitStats is the node's process ids: how many may exist and how many
// do (pid.available).
type RlimitStats struct {
	Time                  time.Time `json:"time"`
	MaxPID                *int64    `json:"maxpid,omitempty"`
	NumOfRunningProcesses *int64    `json:"curproc,omitempty"`
}
