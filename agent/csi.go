package agent

import (
	"context"
	"maps"
	"slices"
	"time"

	"github.com/kobune/kobune/agent/volume"
	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/api/storage"
	"github.com/kobune/kobune/client"
)

// csiRegistrar publishes the node's CSI drivers (the kubelet's plugin
// watcher and CSI plugin registration): what it finds in
// Config.CSIPluginDir becomes the node's topology labels and its CSINode.
type csiRegistrar struct {
	cfg     Config
	client  *client.Client
	volumes *volume.Manager
	// workers hold the pods' volumes: the registrar retries the removal
	// of gone pods' volumes that failed.
	workers *podWorkers
	// registered: the CSINode says what drivers this node has.
	registered bool
}

// Run looks for CSI drivers that came or went and publishes them in
// the node's CSINode; it also unstages volumes no pod uses any more and
// retries the removal of gone pods' volumes that failed (a driver that was
// not back yet).
func (r *csiRegistrar) Run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(r.cfg.CSIInterval):
		}
		r.discover(ctx)
		if r.workers.orphansLeft.Swap(false) {
			r.workers.orphanVolumes(r.workers.knownPods())
		}
		if err := r.volumes.UnstageUnused(ctx); err != nil && ctx.Err() == nil {
			r.cfg.Logf("unstage volumes: %v", err)
		}
	}
}

// discover registers the drivers found: their topology as Node labels,
// and the CSINode (the kubelet's CSI plugin registration).
func (r *csiRegistrar) discover(ctx context.Context) {
	changed, err := r.volumes.CSI.Discover(ctx)
	if err != nil && ctx.Err() == nil {
		r.cfg.Logf("CSI drivers: %v", err)
	}
	if changed {
		r.workers.queueAll() // pods whose volumes waited on a driver that came
	}
	if changed || !r.registered {
		if err := r.register(ctx); err != nil {
			r.registered = false
			if ctx.Err() == nil {
				r.cfg.Logf("register CSI drivers: %s", client.Message(err))
			}
			return
		}
		r.registered = true
	}
}

// register writes the node's topology labels and its CSINode.
func (r *csiRegistrar) register(ctx context.Context) error {
	drivers := r.volumes.CSI.Drivers()
	nodes := client.For[*core.Node](r.client)
	var node *core.Node
	for {
		n, err := nodes.Get(ctx, "", r.cfg.Node.Name)
		if err != nil {
			return err
		}
		labels := maps.Clone(n.Labels)
		if labels == nil {
			labels = map[string]string{}
		}
		for _, d := range drivers {
			maps.Copy(labels, d.Topology)
		}
		if maps.Equal(labels, n.Labels) {
			node = n
			break
		}
		n.Labels = labels
		node, err = nodes.Update(ctx, n)
		if client.IsConflict(err) {
			continue
		}
		if err != nil {
			return err
		}
		break
	}
	want := storage.CSINodeSpec{Drivers: []storage.CSINodeDriver{}}
	for _, d := range drivers {
		cd := storage.CSINodeDriver{Name: d.Name, NodeID: d.NodeID, TopologyKeys: slices.Sorted(maps.Keys(d.Topology))}
		if d.MaxVolumes > 0 {
			count := int32(d.MaxVolumes)
			cd.Allocatable = &storage.VolumeNodeResources{Count: &count}
		}
		want.Drivers = append(want.Drivers, cd)
	}
	csiNodes := client.For[*storage.CSINode](r.client)
	owner := []meta.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: node.Name, UID: node.UID}}
	for {
		cur, err := csiNodes.Get(ctx, "", r.cfg.Node.Name)
		if client.IsNotFound(err) {
			_, err = csiNodes.Create(ctx, &storage.CSINode{ObjectMeta: meta.ObjectMeta{Name: r.cfg.Node.Name, OwnerReferences: owner}, Spec: want})
			if client.IsAlreadyExists(err) {
				continue
			}
			return err
		}
		if err != nil {
			return err
		}
		cur.Spec, cur.OwnerReferences = want, owner
		_, err = csiNodes.Update(ctx, cur)
		if client.IsConflict(err) {
			continue
		}
		return err
	}
}
