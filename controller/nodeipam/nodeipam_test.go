package nodeipam

import (
	"context"
	"strings"
	"testing"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/client"
	"github.com/kobune/kobune/controller"
	"github.com/kobune/kobune/controller/controllertest"
)

func node(name, cidr string) *core.Node {
	n := &core.Node{ObjectMeta: meta.ObjectMeta{Name: name}}
	n.Spec.PodCIDR = cidr
	return n
}

func TestAllocatesTheLowestFreeBlock(t *testing.T) {
	c, api := controllertest.NewClient()
	inf := controller.NewInformers(c)
	inf.Nodes.Seed(node("a", "10.244.0.0/24"), node("b", "10.244.2.0/24"), node("new", ""), node("other", ""))
	nc, err := New(c, inf, client.NewAsyncRecorder(&client.Recorder{Client: c, Component: Name}, 100), Config{})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"new", "other", "a"} {
		if _, err := nc.Reconcile(context.Background(), name); err != nil {
			t.Fatal(err)
		}
	}
	got := map[string]string{}
	for _, a := range api.Filter("update", "nodes") {
		n := controllertest.Decode[core.Node](a)
		got[n.Name] = n.Spec.PodCIDR
	}
	if got["new"] != "10.244.1.0/24" || got["other"] != "10.244.3.0/24" || len(got) != 2 {
		t.Errorf("allocated %v, want new 10.244.1.0/24 (the hole), other 10.244.3.0/24, a untouched", got)
	}
}

func TestFullRangeAndBadConfig(t *testing.T) {
	c, _ := controllertest.NewClient()
	inf := controller.NewInformers(c)
	inf.Nodes.Seed(node("a", "10.9.0.0/25"), node("b", "10.9.0.128/25"), node("c", ""))
	nc, err := New(c, inf, client.NewAsyncRecorder(&client.Recorder{Client: c, Component: Name}, 100), Config{ClusterCIDR: "10.9.0.0/24", NodeMaskSize: 25})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := nc.Reconcile(context.Background(), "c"); err == nil || !strings.Contains(err.Error(), "no free /25 left in 10.9.0.0/24") {
		t.Errorf("full range: %v", err)
	}
	for _, cfg := range []Config{{ClusterCIDR: "10.9.0.0"}, {ClusterCIDR: "10.9.0.0/24", NodeMaskSize: 16}} {
		if _, err := New(c, inf, nil, cfg); err == nil {
			t.Errorf("config %+v accepted", cfg)
		}
	}
}
