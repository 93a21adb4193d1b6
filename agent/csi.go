package agent

import (
	"context"
	"maps"
	"slices"
	"time"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/api/storage"
	"github.com/kobune/kobune/client"
)

// csiLoop looks for CSI drivers that came or went and publishes them in
// the node's CSINode; it also unstages volumes no pod uses any more and
// retries the removal of gone pods' volumes that failed (a driver that was
// not back yet).
func (a *Agent) csiLoop(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(a.cfg.CSIInterval):
		}
		a.discoverCSI(ctx)
		if a.orphansLeft.Swap(false) {
			a.orphanVolumes(a.knownPods())
		}
		if err := a.volumes.UnstageUnused(ctx); err != nil && ctx.Err() == nil {
			a.cfg.Logf("unstage volumes: %v", err)
		}
	}
}

// discoverCSI registers the drivers found: their topology as Node labels,
// and the CSINode (the kubelet's CSI plugin registration).
func (a *Agent) discoverCSI(ctx context.Context) {
	changed, err := a.volumes.CSI.Discover(ctx)
	if err != nil && ctx.Err() == nil {
		a.cfg.Logf("CSI drivers: %v", err)
	}
	if changed || !a.csiRegistered {
		if err := a.registerCSI(ctx); err != nil {
			a.csiRegistered = false
			if ctx.Err() == nil {
				a.cfg.Logf("register CSI drivers: %s", client.Message(err))
			}
			return
		}
		a.csiRegistered = true
	}
}

// registerCSI writes the node's topology labels and its CSINode.
func (a *Agent) registerCSI(ctx context.Context) error {
	drivers := a.volumes.CSI.Drivers()
	nodes := client.For[*core.Node](a.client)
	var node *core.Node
	for {
		n, err := nodes.Get(ctx, "", a.cfg.Node.Name)
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
	csiNodes := client.For[*storage.CSINode](a.client)
	owner := []meta.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: node.Name, UID: node.UID}}
	for {
		cur, err := csiNodes.Get(ctx, "", a.cfg.Node.Name)
		if client.IsNotFound(err) {
			_, err = csiNodes.Create(ctx, &storage.CSINode{ObjectMeta: meta.ObjectMeta{Name: a.cfg.Node.Name, OwnerReferences: owner}, Spec: want})
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
