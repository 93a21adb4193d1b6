package scheduler

import (
	"context"
	"fmt"
	"maps"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/storage"
	"github.com/kobune/kobune/client"
)

// volumes is the scheduler's view of claims, volumes and classes, for the
// VolumeBinding plugin (framework.VolumeLister).
type volumes struct {
	claims  *client.Informer[*core.PersistentVolumeClaim]
	volumes *client.Informer[*core.PersistentVolume]
	classes *client.Informer[*storage.StorageClass]
	drivers *client.Informer[*storage.CSIDriver]
	// capacities, of every namespace (a driver publishes them in its own).
	capacities *client.Informer[*storage.CSIStorageCapacity]
}

func newVolumes(c *client.Client, changed func()) *volumes {
	v := &volumes{
		claims:     client.NewInformer(client.For[*core.PersistentVolumeClaim](c), "", client.ListOptions{}),
		volumes:    client.NewInformer(client.For[*core.PersistentVolume](c), "", client.ListOptions{}),
		classes:    client.NewInformer(client.For[*storage.StorageClass](c), "", client.ListOptions{}),
		drivers:    client.NewInformer(client.For[*storage.CSIDriver](c), "", client.ListOptions{}),
		capacities: client.NewInformer(client.For[*storage.CSIStorageCapacity](c), "", client.ListOptions{}),
	}
	// A claim bound, a volume made or freed, a class made: pods that
	// waited for one may fit now.
	v.claims.AddHandler(client.Handler[*core.PersistentVolumeClaim]{OnAdd: func(*core.PersistentVolumeClaim) { changed() },
		OnUpdate: func(_, _ *core.PersistentVolumeClaim) { changed() }})
	v.volumes.AddHandler(client.Handler[*core.PersistentVolume]{OnAdd: func(*core.PersistentVolume) { changed() },
		OnUpdate: func(_, _ *core.PersistentVolume) { changed() }})
	v.classes.AddHandler(client.Handler[*storage.StorageClass]{OnAdd: func(*storage.StorageClass) { changed() }})
	// More capacity published, or a driver that stopped asking for it.
	v.drivers.AddHandler(client.Handler[*storage.CSIDriver]{OnAdd: func(*storage.CSIDriver) { changed() },
		OnUpdate: func(_, _ *storage.CSIDriver) { changed() }, OnDelete: func(*storage.CSIDriver) { changed() }})
	v.capacities.AddHandler(client.Handler[*storage.CSIStorageCapacity]{OnAdd: func(*storage.CSIStorageCapacity) { changed() },
		OnUpdate: func(_, _ *storage.CSIStorageCapacity) { changed() }})
	return v
}

func (v *volumes) run(ctx context.Context) {
	go v.claims.Run(ctx)
	go v.volumes.Run(ctx)
	go v.classes.Run(ctx)
	go v.drivers.Run(ctx)
	go v.capacities.Run(ctx)
}

func (v *volumes) synced() []func() bool {
	return []func() bool{v.claims.HasSynced, v.volumes.HasSynced, v.classes.HasSynced, v.drivers.HasSynced, v.capacities.HasSynced}
}

func (v *volumes) Claim(namespace, name string) (*core.PersistentVolumeClaim, bool) {
	return v.claims.Get(namespace, name)
}
func (v *volumes) Volume(name string) (*core.PersistentVolume, bool) { return v.volumes.Get("", name) }
func (v *volumes) Volumes() []*core.PersistentVolume                 { return v.volumes.List() }
func (v *volumes) Claims() []*core.PersistentVolumeClaim             { return v.claims.List() }
func (v *volumes) Class(name string) (*storage.StorageClass, bool)   { return v.classes.Get("", name) }
func (v *volumes) Driver(name string) (*storage.CSIDriver, bool)     { return v.drivers.Get("", name) }
func (v *volumes) Capacities() []*storage.CSIStorageCapacity         { return v.capacities.List() }

// selectNode names the chosen node on the pod's unbound claims of a
// WaitForFirstConsumer class (volume.kubernetes.io/selected-node), before
// the pod is bound: the binder then binds them to a volume that node
// reaches (or a provisioner makes one there).
func (v *volumes) selectNode(ctx context.Context, c *client.Client, pod *core.Pod, node string) error {
	for _, vol := range pod.Spec.Volumes {
		if vol.PersistentVolumeClaim == nil {
			continue
		}
		claim, ok := v.claims.Get(pod.Namespace, vol.PersistentVolumeClaim.ClaimName)
		if !ok || claim.Spec.VolumeName != "" || claim.Annotations[core.AnnSelectedNode] == node {
			continue
		}
		class, ok := v.classes.Get("", core.ClaimClass(claim))
		if !ok || class.VolumeBindingMode == nil || *class.VolumeBindingMode != storage.WaitForFirstConsumer {
			continue
		}
		updated := *claim
		updated.Annotations = maps.Clone(claim.Annotations)
		if updated.Annotations == nil {
			updated.Annotations = map[string]string{}
		}
		updated.Annotations[core.AnnSelectedNode] = node
		if _, err := client.For[*core.PersistentVolumeClaim](c).Update(ctx, &updated); err != nil {
			return fmt.Errorf("select node %s for claim %s: %w", node, claim.Name, err)
		}
	}
	return nil
}
