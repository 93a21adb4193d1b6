package runtime

import (
	"context"
	"fmt"
	"time"

	"github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/core/images"
)

// MeasuredContainer is a running container of a pod, where the kernel
// measures it: its cgroup and its main process (whose network namespace
// is the pod's).
type MeasuredContainer struct {
	PodUID    string
	Name      string
	ID        string
	Cgroup    string
	PID       uint32
	StartedAt time.Time
}

// StatsSource is a runtime whose containers run in the node's cgroups
// (containerd; the simulated runtime measures nothing).
type StatsSource interface {
	// Measured lists the running containers.
	Measured(ctx context.Context) ([]MeasuredContainer, error)
	// RootfsUsage is the bytes and inodes of a container's writable layer.
	RootfsUsage(ctx context.Context, id string) (bytes, inodes int64, err error)
}

// Measured implements StatsSource.
func (r *Containerd) Measured(ctx context.Context) ([]MeasuredContainer, error) {
	ctx = r.ctx(ctx)
	ctrs, err := r.client.Containers(ctx, fmt.Sprintf("labels.%q", LabelPodUID))
	if err != nil {
		return nil, fmt.Errorf("list containers: %w", err)
	}
	var out []MeasuredContainer
	for _, ctr := range ctrs {
		info := listed(ctx, ctr)
		l := info.Labels
		if l[LabelCgroup] == "" {
			continue
		}
		task, err := ctr.Task(ctx, nil)
		if err != nil {
			continue
		}
		st, err := task.Status(ctx)
		if err != nil || st.Status != client.Running {
			continue
		}
		out = append(out, MeasuredContainer{PodUID: l[LabelPodUID], Name: l[LabelContainer], ID: ctr.ID(), Cgroup: l[LabelCgroup], PID: task.Pid(), StartedAt: info.CreatedAt})
	}
	return out, nil
}

// RootfsUsage implements StatsSource: containerd's usage of the
// container's active snapshot (its upper directory, walked).
func (r *Containerd) RootfsUsage(ctx context.Context, id string) (int64, int64, error) {
	u, err := r.client.SnapshotService(r.snapshotter).Usage(r.ctx(ctx), id)
	if err != nil {
		return 0, 0, err
	}
	return u.Size, u.Inodes, nil
}

// ImageCollector is a runtime that can delete the images no container
// uses (the kubelet's image garbage collection, run under disk pressure).
type ImageCollector interface {
	// RemoveUnusedImages deletes the images no container was made from,
	// except those named in keep (the images the node's pods name).
	RemoveUnusedImages(ctx context.Context, keep map[string]bool) ([]string, error)
}

// RemoveUnusedImages implements ImageCollector: every image of the
// agent's containerd namespace that no container (running or not) was
// made from and no pod of the node names is deleted, with its content and unpacked layers (containerd's
// garbage collection, synchronously). An image loaded from a tarball is
// gone until the agent loads it again (--load-images at its start), as a
// collected image on a kubelet is until it is pulled again.
func (r *Containerd) RemoveUnusedImages(ctx context.Context, keep map[string]bool) ([]string, error) {
	ctx = r.ctx(ctx)
	ctrs, err := r.client.Containers(ctx)
	if err != nil {
		return nil, fmt.Errorf("list containers: %w", err)
	}
	used := map[string]bool{}
	for _, c := range ctrs {
		used[listed(ctx, c).Image] = true
	}
	for name := range keep { // as pods name them: nginx is docker.io/library/nginx:latest here
		if n, err := NormalizeImage(name); err == nil {
			used[n] = true
		}
	}
	imgs, err := r.client.ImageService().List(ctx)
	if err != nil {
		return nil, fmt.Errorf("list images: %w", err)
	}
	var removed []string
	for _, img := range imgs {
		if used[img.Name] || keep[img.Name] {
			continue
		}
		if err := r.client.ImageService().Delete(ctx, img.Name, images.SynchronousDelete()); err != nil {
			return removed, fmt.Errorf("delete image %s: %w", img.Name, err)
		}
		removed = append(removed, img.Name)
	}
	return removed, nil
}
