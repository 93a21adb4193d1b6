// Package nodeipam is kube-controller-manager's node IPAM (the range
// allocator, with --allocate-node-cidrs): it gives every node without a
// spec.podCIDR the lowest free block of the cluster CIDR (a /24 of
// 10.244.0.0/16 by default), from which the node's agent hands out pod
// addresses (CNI host-local). A node that came with its own podCIDR (the
// agent's --pod-cidr) keeps it, and that block counts as taken.
package nodeipam

import (
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"sync"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/client"
	"github.com/kobune/kobune/client/reconcile"
	"github.com/kobune/kobune/controller"
)

// Name is the controller's name in logs and events.
const Name = "node-ipam-controller"

// Config is the cluster CIDR and the size of each node's block.
type Config struct {
	ClusterCIDR  string // "10.244.0.0/16"
	NodeMaskSize int    // 24
}

// Controller allocates pod CIDRs to nodes.
type Controller struct {
	client   *client.Client
	nodes    *client.Informer[*core.Node]
	recorder *client.AsyncRecorder
	cluster  *net.IPNet
	mask     int
	mu       sync.Mutex
	given    map[string]string // node → block this controller gave, until the cache shows it
	// Loop is the controller's queue (node names) and its one worker, so
	// that two nodes never get the same block.
	Loop *reconcile.Loop
}

// New returns the controller; the error names a bad CIDR or mask size.
func New(c *client.Client, inf *controller.Informers, recorder *client.AsyncRecorder, cfg Config) (*Controller, error) {
	if cfg.ClusterCIDR == "" {
		cfg.ClusterCIDR = "10.244.0.0/16"
	}
	if cfg.NodeMaskSize == 0 {
		cfg.NodeMaskSize = 24
	}
	_, cluster, err := net.ParseCIDR(cfg.ClusterCIDR)
	if err != nil || cluster.IP.To4() == nil {
		return nil, fmt.Errorf("--cluster-cidr %q: want an IPv4 CIDR such as 10.244.0.0/16", cfg.ClusterCIDR)
	}
	if ones, _ := cluster.Mask.Size(); cfg.NodeMaskSize < ones || cfg.NodeMaskSize > 30 {
		return nil, fmt.Errorf("--node-cidr-mask-size %d: must be between %d (the cluster CIDR's) and 30", cfg.NodeMaskSize, ones)
	}
	nc := &Controller{client: c, nodes: inf.Nodes, recorder: recorder, cluster: cluster, mask: cfg.NodeMaskSize, given: map[string]string{}}
	nc.Loop = reconcile.NewLoop(Name, nc, 1)
	inf.Nodes.AddHandler(client.Handler[*core.Node]{
		OnAdd:    func(n *core.Node) { nc.Loop.Queue.Add(n.Name) },
		OnUpdate: func(_, n *core.Node) { nc.Loop.Queue.Add(n.Name) },
		OnDelete: func(n *core.Node) { nc.mu.Lock(); delete(nc.given, n.Name); nc.mu.Unlock() },
	})
	return nc, nil
}

// Reconcile implements reconcile.Reconciler for a node name.
func (nc *Controller) Reconcile(ctx context.Context, name string) (reconcile.Result, error) {
	n, ok := nc.nodes.Get("", name)
	if !ok || n.Spec.PodCIDR != "" {
		nc.mu.Lock()
		delete(nc.given, name) // the cache has it now
		nc.mu.Unlock()
		return reconcile.Result{}, nil
	}
	block, err := nc.free(name)
	if err != nil {
		nc.recorder.Event(n, core.EventTypeWarning, "CIDRNotAvailable", fmt.Sprintf("Node %s status is now: CIDRNotAvailable (%v)", name, err))
		return reconcile.Result{}, reconcile.Terminal(err)
	}
	updated := *n
	updated.Spec.PodCIDR, updated.Spec.PodCIDRs = block, []string{block}
	if _, err := client.For[*core.Node](nc.client).Update(ctx, &updated); err != nil {
		return reconcile.Result{}, err // a conflict: look again
	}
	nc.mu.Lock()
	nc.given[name] = block
	nc.mu.Unlock()
	nc.recorder.Event(n, core.EventTypeNormal, "CIDRAssignmentSucceeded", fmt.Sprintf("Node %s was given pod CIDR %s", name, block))
	return reconcile.Result{}, nil
}

// free returns the lowest block no node has (or was just given).
func (nc *Controller) free(node string) (string, error) {
	used := map[string]bool{}
	nc.mu.Lock()
	for n, b := range nc.given {
		if n != node {
			used[b] = true
		}
	}
	nc.mu.Unlock()
	for _, n := range nc.nodes.List() {
		for _, c := range append([]string{n.Spec.PodCIDR}, n.Spec.PodCIDRs...) {
			if _, b, err := net.ParseCIDR(c); err == nil {
				used[b.String()] = true
			}
		}
	}
	ones, _ := nc.cluster.Mask.Size()
	base := binary.BigEndian.Uint32(nc.cluster.IP.To4())
	step := uint32(1) << (32 - nc.mask)
	for i := uint32(0); i < 1<<(nc.mask-ones); i++ {
		ip := make(net.IP, 4)
		binary.BigEndian.PutUint32(ip, base+i*step)
		block := (&net.IPNet{IP: ip, Mask: net.CIDRMask(nc.mask, 32)}).String()
		if !used[block] {
			return block, nil
		}
	}
	return "", fmt.Errorf("no free /%d left in %s", nc.mask, nc.cluster)
}
