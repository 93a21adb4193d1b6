package runtime

import (
	"testing"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/resource"
)

func TestPodCgroupResources(t *testing.T) {
	ctr := func(cpuReq, cpuLim, memLim string) core.Container {
		c := core.Container{Name: "c", Resources: core.ResourceRequirements{Requests: resource.List{}, Limits: resource.List{}}}
		if cpuReq != "" {
			c.Resources.Requests[resource.CPU] = resource.MustParse(cpuReq)
		}
		if cpuLim != "" {
			c.Resources.Limits[resource.CPU] = resource.MustParse(cpuLim)
		}
		if memLim != "" {
			c.Resources.Limits[resource.Memory] = resource.MustParse(memLim)
		}
		return c
	}
	tests := []struct {
		name       string
		containers []core.Container
		init       []core.Container
		want       podResources
	}{
		{"best effort", []core.Container{ctr("", "", "")}, nil, podResources{shares: 2}},
		{"sum of two with limits", []core.Container{ctr("250m", "500m", "64Mi"), ctr("250m", "1", "32Mi")}, nil,
			podResources{shares: 512, quota: 150000, memory: 96 << 20, hasQuota: true, hasMemory: true}},
		{"one without limits: none", []core.Container{ctr("500m", "500m", "64Mi"), ctr("", "", "")}, nil, podResources{shares: 512}},
		{"a larger init container counts", []core.Container{ctr("100m", "100m", "16Mi")}, []core.Container{ctr("1", "2", "1Gi")},
			podResources{shares: 1024, quota: 200000, memory: 1 << 30, hasQuota: true, hasMemory: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &core.Pod{Spec: core.PodSpec{Containers: tt.containers, InitContainers: tt.init}}
			if got := podCgroupResources(p); got != tt.want {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}
