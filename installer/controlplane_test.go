package installer

import (
	"context"
	"testing"
	"time"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/apiserver/testserver"
	"github.com/kobune/kobune/client"
)

// TestMarkControlPlane: the node is labelled and tainted once it
// registers, the taints others put there stay, and --untaint takes the
// control plane's taint off again.
func TestMarkControlPlane(t *testing.T) {
	srv := testserver.New(t)
	nodes := client.For[*core.Node](srv.Client)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	go func() { // the agent registers a moment later
		time.Sleep(500 * time.Millisecond)
		_, _ = nodes.Create(ctx, &core.Node{ObjectMeta: meta.ObjectMeta{Name: "cp1"},
			Spec: core.NodeSpec{Taints: []core.Taint{{Key: "example.com/gpu", Effect: core.TaintNoSchedule}}}})
	}()
	if tainted, err := MarkControlPlane(ctx, nodes, "cp1", true); err != nil || !tainted {
		t.Fatalf("mark: %v %v", tainted, err)
	}
	n, _ := nodes.Get(ctx, "", "cp1")
	if _, ok := n.Labels[LabelControlPlane]; !ok || len(n.Spec.Taints) != 2 || n.Spec.Taints[1].Key != TaintControlPlane || n.Spec.Taints[1].Effect != core.TaintNoSchedule {
		t.Errorf("after init: labels %v taints %+v", n.Labels, n.Spec.Taints)
	}
	if _, err := MarkControlPlane(ctx, nodes, "cp1", false); err != nil {
		t.Fatal(err)
	}
	n, _ = nodes.Get(ctx, "", "cp1")
	if len(n.Spec.Taints) != 1 || n.Spec.Taints[0].Key != "example.com/gpu" {
		t.Errorf("after --untaint: taints %+v; want only the other taint", n.Spec.Taints)
	}
}
