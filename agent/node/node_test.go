package node

import (
	"testing"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/resource"
)

func TestParseFlags(t *testing.T) {
	taints, err := ParseTaints("dedicated=gpu:NoSchedule, spot:PreferNoSchedule")
	if err != nil || len(taints) != 2 || taints[0].Value != "gpu" || taints[1].Key != "spot" || taints[1].Effect != core.TaintPreferNoSchedule {
		t.Errorf("ParseTaints: %+v %v", taints, err)
	}
	for _, bad := range []string{"novalue", "k=v:Sometimes"} {
		if _, err := ParseTaints(bad); err == nil {
			t.Errorf("ParseTaints(%q) accepted", bad)
		}
	}
	res, err := ParseResources("cpu=4,memory=8Gi,pods=110")
	if err != nil || res.Cpu().String() != "4" || res.Memory().String() != "8Gi" {
		t.Errorf("ParseResources: %v %v", res, err)
	}
	if _, err := ParseResources("cpu=lots"); err == nil {
		t.Error("bad quantity accepted")
	}
	if _, err := ParseLabels("a=b,c"); err == nil {
		t.Error("label without value accepted")
	}
}

func TestAllocatableNeverNegative(t *testing.T) {
	capacity, _ := ParseResources("cpu=1,memory=1Gi")
	reserved, _ := ParseResources("cpu=2,memory=256Mi")
	a := Allocatable(capacity, reserved)
	if a.Cpu().Sign() != 0 || a.Memory().String() != "768Mi" {
		t.Errorf("allocatable = cpu %s memory %s", a.Cpu().String(), a.Memory().String())
	}
}

// An extended resource someone else advertised in the node's status stays
// through the agent's status updates, in capacity and allocatable; the
// agent's own resources are its own.
func TestStatusKeepsExtendedResources(t *testing.T) {
	stored := resource.List{"example.com/dongle": resource.MustParse("4"), resource.CPU: resource.MustParse("64"), "kubernetes.io/other": resource.MustParse("1")}
	capacity := resource.List{resource.CPU: resource.MustParse("2")}
	allocatable := resource.List{resource.CPU: resource.MustParse("1500m")}
	c, a := keepExtended(stored, capacity, allocatable)
	if q := c["example.com/dongle"]; q.Value() != 4 {
		t.Errorf("capacity %v: the advertised dongles are gone", c)
	}
	if q := a["example.com/dongle"]; q.Value() != 4 {
		t.Errorf("allocatable %v: the advertised dongles are not allocatable", a)
	}
	if q := c[resource.CPU]; q.MilliValue() != 2000 || len(c) != 2 {
		t.Errorf("capacity %v: want the agent's cpu and the dongles only", c)
	}
	if _, ok := capacity["example.com/dongle"]; ok {
		t.Errorf("the agent's own list was changed: %v", capacity)
	}
}
