package node_test

import (
	"context"
	"testing"
	"time"

	"github.com/kobune/kobune/agent/node"
	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/apiserver/testserver"
	"github.com/kobune/kobune/client"
)

// TestAwaitPodCIDR: an agent without --pod-cidr registers its node and
// takes the block node IPAM writes into spec.podCIDR; with no IPAM it gets
// "" after the wait.
func TestAwaitPodCIDR(t *testing.T) {
	s := testserver.New(t)
	ctx := context.Background()
	nodes := client.For[*core.Node](s.Client)
	go func() { // the controller's part
		for {
			n, err := nodes.Get(ctx, "", "n1")
			if err == nil {
				n.Spec.PodCIDR = "10.244.7.0/24"
				if _, err := nodes.Update(ctx, n); err == nil {
					return
				}
			}
			time.Sleep(50 * time.Millisecond)
		}
	}()
	if got := node.AwaitPodCIDR(ctx, s.Client, node.Config{Name: "n1"}, 10*time.Second); got != "10.244.7.0/24" {
		t.Errorf("got %q, want the allocated 10.244.7.0/24", got)
	}
	if got := node.AwaitPodCIDR(ctx, s.Client, node.Config{Name: "n2"}, 300*time.Millisecond); got != "" {
		t.Errorf("without IPAM: got %q, want none", got)
	}
}
