// Package metrics is metrics.k8s.io/v1beta1, the resource metrics API
// that kubectl top and the HorizontalPodAutoscaler read: NodeMetrics and
// PodMetrics, each a usage (cpu, memory) measured over a window. In
// Kubernetes metrics-server serves it by scraping every kubelet every 15 s;
// Kobune's API server serves it itself, asking the agents for their latest
// samples (5 s windows) when it is read.
package metrics

import (
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/api/resource"
	"github.com/kobune/kobune/api/stats"
)

// GroupVersion is the API's group and version.
const GroupVersion = "metrics.k8s.io/v1beta1"

// NodeMetrics is one node's usage.
type NodeMetrics struct {
	meta.TypeMeta   `json:",inline"`
	meta.ObjectMeta `json:"metadata"`
	Timestamp       meta.Time     `json:"timestamp"`
	Window          string        `json:"window"`
	Usage           resource.List `json:"usage"`
}

// NodeMetricsList is a list of NodeMetrics.
type NodeMetricsList struct {
	meta.TypeMeta `json:",inline"`
	Metadata      meta.ListMeta `json:"metadata"`
	Items         []NodeMetrics `json:"items"`
}

// PodMetrics is one pod's usage, per container.
type PodMetrics struct {
	meta.TypeMeta   `json:",inline"`
	meta.ObjectMeta `json:"metadata"`
	Timestamp       meta.Time          `json:"timestamp"`
	Window          string             `json:"window"`
	Containers      []ContainerMetrics `json:"containers"`
}

// ContainerMetrics is one container's usage. Throttling is a Kobune
// addition (metrics-server has no such field; kubectl ignores it): the
// container's CFS counters, which kobectl top --containers shows.
type ContainerMetrics struct {
	Name       string                 `json:"name"`
	Usage      resource.List          `json:"usage"`
	Throttling *stats.ThrottlingStats `json:"throttling,omitempty"`
}

// PodMetricsList is a list of PodMetrics.
type PodMetricsList struct {
	meta.TypeMeta `json:",inline"`
	Metadata      meta.ListMeta `json:"metadata"`
	Items         []PodMetrics  `json:"items"`
}
