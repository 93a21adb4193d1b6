package controllermanager_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/client"
	testcluster "github.com/kobune/kobune/test/cluster"
)

// TestNodeIPAM: nodes without a pod CIDR get the lowest free /24 of
// 10.244.0.0/16, skipping blocks that nodes already have; no two nodes share
// one.
func TestNodeIPAM(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := testcluster.Start(t, ctx, testcluster.Options{AllocateNodeCIDRs: true}).Client
	nodes := client.For[*core.Node](c)
	own := &core.Node{ObjectMeta: meta.ObjectMeta{Name: "has-one"}}
	own.Spec.PodCIDR = "10.244.1.0/24"
	if _, err := nodes.Create(ctx, own); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if _, err := nodes.Create(ctx, &core.Node{ObjectMeta: meta.ObjectMeta{Name: fmt.Sprintf("n%d", i)}}); err != nil {
			t.Fatal(err)
		}
	}
	got := map[string]string{}
	for deadline := time.Now().Add(20 * time.Second); len(got) < 4; time.Sleep(100 * time.Millisecond) {
		list, _, err := nodes.List(ctx, "", client.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		got = map[string]string{}
		for _, n := range list {
			if n.Spec.PodCIDR != "" {
				got[n.Spec.PodCIDR] = n.Name
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("pod CIDRs after 20s: %v", got)
		}
	}
	for _, want := range []string{"10.244.0.0/24", "10.244.1.0/24", "10.244.2.0/24", "10.244.3.0/24"} {
		if _, ok := got[want]; !ok {
			t.Errorf("no node has %s: %v", want, got)
		}
	}
	if got["10.244.1.0/24"] != "has-one" {
		t.Errorf("the node that brought 10.244.1.0/24 lost it: %v", got)
	}
}
