package agent

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/kobune/kobune/agent/cadvisor"
	"github.com/kobune/kobune/agent/runtime"
	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
)

// setupVolumes registers what the pod names and makes its volumes; an
// error is the kubelet's FailedMount (the pod stays ContainerCreating).
func (w *podWorkers) setupVolumes(ctx context.Context, pod *core.Pod) error {
	w.sources.use(pod)
	if w.volumes == nil || len(pod.Spec.Volumes) == 0 {
		return nil
	}
	paths, err := w.volumes.Setup(ctx, pod)
	if err != nil {
		return err
	}
	w.records.setVolumes(pod.UID, paths)
	return nil
}

// teardownVolumes removes a stopped pod's volumes.
func (w *podWorkers) teardownVolumes(key, uid string) error {
	w.sources.release(key)
	w.sources.forgetTokens(uid)
	w.records.dropVolumes(uid)
	if w.volumes == nil {
		return nil
	}
	return w.volumes.Teardown(context.Background(), uid)
}

// containerConfig is the runtime's hook: a container's environment and
// mounts, resolved just before it is created.
func (w *podWorkers) containerConfig(ctx context.Context, pod *core.Pod, c *core.Container, podIP string) (runtime.ContainerConfig, error) {
	env, skipped, err := w.containerEnv(ctx, pod, c, podIP)
	if err != nil {
		return runtime.ContainerConfig{}, err
	}
	if len(skipped) > 0 {
		w.event(pod, core.EventTypeWarning, "InvalidEnvironmentVariableNames",
			fmt.Sprintf("Keys [%s] from the EnvFrom of container %s were skipped since they are considered invalid environment variable names.", strings.Join(skipped, ", "), c.Name))
	}
	// Command and args name the environment's variables as $(VAR).
	lookup := envLookup(env)
	cfg := runtime.ContainerConfig{Env: env, Command: expandAll(c.Command, lookup), Args: expandAll(c.Args, lookup)}
	if len(c.VolumeMounts) == 0 || w.volumes == nil {
		return cfg, nil // a simulated node (no PodDir) makes no volumes: it runs nothing
	}
	paths := w.records.volumes(pod.UID)
	for _, m := range c.VolumeMounts {
		vol := volumeNamed(pod, m.Name)
		root, ok := paths[m.Name]
		if vol == nil || !ok {
			return cfg, fmt.Errorf("volume %q of mount %s is not set up on this node", m.Name, m.MountPath)
		}
		if m.MountPropagation != nil && *m.MountPropagation != "None" {
			return cfg, fmt.Errorf("volumeMounts %s: mountPropagation %s is not supported (None only: every mount is private)", m.MountPath, *m.MountPropagation)
		}
		sub := m.SubPath
		if m.SubPathExpr != "" {
			// subPathExpr: the subPath, with the environment's $(VAR)s.
			sub = expand(m.SubPathExpr, lookup)
			if filepath.IsAbs(sub) || slices.Contains(strings.Split(sub, "/"), "..") {
				return cfg, fmt.Errorf("volumeMounts %s: subPathExpr %q expands to %q: must be a relative path without '..'", m.MountPath, m.SubPathExpr, sub)
			}
		}
		src, err := subPath(root, sub, vol)
		if err != nil {
			return cfg, fmt.Errorf("volumeMounts %s: %w", m.MountPath, err)
		}
		// ConfigMap, Secret, downward API and projected volumes are
		// always read-only, as in Kubernetes.
		ro := m.ReadOnly || vol.ConfigMap != nil || vol.Secret != nil || vol.DownwardAPI != nil || vol.Projected != nil ||
			(vol.PersistentVolumeClaim != nil && vol.PersistentVolumeClaim.ReadOnly) || (vol.CSI != nil && vol.CSI.ReadOnly != nil && *vol.CSI.ReadOnly)
		cfg.Mounts = append(cfg.Mounts, runtime.Mount{Source: src, Destination: m.MountPath, ReadOnly: ro})
	}
	return cfg, nil
}

func volumeNamed(pod *core.Pod, name string) *core.Volume {
	for i := range pod.Spec.Volumes {
		if pod.Spec.Volumes[i].Name == name {
			return &pod.Spec.Volumes[i]
		}
	}
	return nil
}

// subPath is the path a mount binds: the volume's root, or sub in it. A
// subPath of a writable volume that does not exist is made (a directory,
// as the kubelet does); one that leads out of the volume through a
// symlink is refused.
func subPath(root, sub string, vol *core.Volume) (string, error) {
	if sub == "" {
		return root, nil
	}
	p := filepath.Join(root, sub)
	projected := vol.ConfigMap != nil || vol.Secret != nil || vol.DownwardAPI != nil || vol.Projected != nil
	if _, err := os.Lstat(p); os.IsNotExist(err) && !projected {
		if err := os.MkdirAll(p, 0o755); err != nil {
			return "", err
		}
	}
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		return "", fmt.Errorf("subPath %q: %w", sub, err)
	}
	realRoot, err := filepath.EvalSymlinks(root)
	if err != nil {
		return "", err
	}
	if real != realRoot && !strings.HasPrefix(real, realRoot+"/") {
		return "", fmt.Errorf("subPath %q leads out of the volume (to %s)", sub, real)
	}
	return real, nil
}

// orphanVolumes removes the volumes of pods the agent does not know
// (deleted while it was down). One that fails (its CSI driver not back
// yet) is tried again by the CSI registrar (csi.go).
func (w *podWorkers) orphanVolumes(keep map[string]bool) {
	if w.volumes == nil {
		return
	}
	for _, uid := range w.volumes.Pods() {
		if keep[uid] {
			continue
		}
		if err := w.volumes.Teardown(context.Background(), uid); err != nil {
			w.orphansLeft.Store(true)
			w.cfg.Logf("remove volumes of gone pod %s: %v", uid, err)
		} else {
			w.cfg.Logf("removed the volumes of pod %s (no longer on this node)", uid)
		}
	}
}

// localStorageLoop measures each running pod's emptyDir volumes on disk
// and evicts a pod whose emptyDir grows past its sizeLimit (the kubelet's
// local storage capacity isolation; a Memory emptyDir is bounded by its
// tmpfs instead).
func (w *podWorkers) localStorageLoop(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(w.cfg.LocalStorageInterval):
		}
		running, paths := w.records.snapshot()
		for key, uid := range running {
			pod, ok := w.pods.GetByKey(key)
			if !ok || pod.UID != uid {
				continue
			}
			for _, v := range pod.Spec.Volumes {
				if v.EmptyDir == nil || v.EmptyDir.Medium != core.StorageMediumDefault || v.EmptyDir.SizeLimit == nil || paths[uid][v.Name] == "" {
					continue
				}
				used := dirSize(paths[uid][v.Name])
				if limit := v.EmptyDir.SizeLimit.Value(); used > limit {
					w.records.orderEviction(uid, evictionOrder{message: fmt.Sprintf("Usage of EmptyDir volume %q exceeds the limit %q.", v.Name, v.EmptyDir.SizeLimit.String()), grace: gracePeriod(pod)})
					w.loop.Queue.Add(key)
					break
				}
			}
		}
	}
}

// dirSize is the bytes the files under dir use.
func dirSize(dir string) int64 {
	b, _ := cadvisor.DirUsage(dir)
	return int64(b)
}

// evictionOrder is why a pod must go, and the grace it gets (0 for a
// hard eviction threshold, as the kubelet kills at once).
type evictionOrder struct {
	message string
	grace   time.Duration
}

// evict stops a pod the node cannot keep and marks it Failed with reason
// Evicted, as the kubelet's eviction manager does; its controller makes a
// replacement.
func (w *podWorkers) evict(ctx context.Context, key string, pod *core.Pod, order evictionOrder) error {
	w.event(pod, core.EventTypeWarning, "Evicted", order.message)
	if err := w.kill(ctx, key, pod, order.grace, "Evicted", order.message); err != nil {
		return err
	}
	w.records.evicted(pod.UID)
	w.eviction.evicted()
	return nil
}

// kill stops a pod's containers (grace, then SIGKILL) and records the pod
// Failed with reason and message, its running containers shown ended
// (137), as the kubelet reports a pod it killed: evicted, or past its
// activeDeadlineSeconds.
func (w *podWorkers) kill(ctx context.Context, key string, pod *core.Pod, grace time.Duration, reason, message string) error {
	if err := w.stop(ctx, key, pod.UID, grace); err != nil {
		return err
	}
	status := pod.Status
	status.Phase, status.Reason, status.Message = core.PodFailed, reason, message
	status.ContainerStatuses = nil
	for _, cs := range pod.Status.ContainerStatuses {
		cs.Ready = false
		if cs.State.Running != nil {
			cs.State = core.ContainerState{Terminated: &core.ContainerStateTerminated{ExitCode: 137, Reason: "Error",
				StartedAt: cs.State.Running.StartedAt, FinishedAt: meta.Now()}}
		}
		status.ContainerStatuses = append(status.ContainerStatuses, cs)
	}
	return w.writeStatus(ctx, pod, status)
}
