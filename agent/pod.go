package agent

import (
	"context"
	"time"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/client"
)

// syncPod brings one pod to its desired state: gone pods are stopped,
// pods being deleted are stopped and then confirmed deleted, others run
// and get their status reported. It is level-based: it looks at the cache
// and the runtime, never at the event that woke it.
func (a *Agent) syncPod(ctx context.Context, key string) error {
	pod, ok := a.pods.GetByKey(key)
	a.mu.Lock()
	runningUID := a.running[key]
	a.mu.Unlock()
	if runningUID != "" && (!ok || pod.UID != runningUID) {
		// The pod is gone from the API, or replaced by a new one of the same name.
		if err := a.stop(ctx, key, runningUID, 0); err != nil {
			return err
		}
	}
	if !ok {
		return nil
	}
	if pod.DeletionTimestamp != nil {
		return a.terminate(ctx, key, pod)
	}
	if pod.Status.Phase == core.PodSucceeded || pod.Status.Phase == core.PodFailed {
		return nil
	}
	state, err := a.runtime.RunPod(ctx, pod)
	if err != nil {
		return err
	}
	a.mu.Lock()
	a.running[key] = pod.UID
	a.mu.Unlock()
	status := podStatus(pod, state, a.nodeIP)
	if statusEqual(status, pod.Status) {
		return nil
	}
	updated := *pod // the cached pod is shared: write a copy
	updated.Status = status
	_, err = client.For[*core.Pod](a.client).UpdateStatus(ctx, &updated)
	if client.IsNotFound(err) {
		return nil // deleted meanwhile; the delete event brings us back
	}
	return err
}

// terminate stops a pod being deleted, within its grace period, then tells
// the API server its containers are gone (a delete with grace 0 and the
// pod's uid as precondition, as the kubelet does).
func (a *Agent) terminate(ctx context.Context, key string, pod *core.Pod) error {
	grace := time.Duration(0)
	if g := pod.DeletionGracePeriodSeconds; g != nil {
		grace = time.Duration(*g) * time.Second
	}
	if err := a.stop(ctx, key, pod.UID, grace); err != nil {
		return err
	}
	zero := int64(0)
	err := client.For[*core.Pod](a.client).Delete(ctx, pod.Namespace, pod.Name, client.DeleteOptions{GracePeriodSeconds: &zero, UID: pod.UID})
	if client.IsNotFound(err) {
		return nil
	}
	return err
}

func (a *Agent) stop(ctx context.Context, key, uid string, grace time.Duration) error {
	if err := a.runtime.StopPod(ctx, uid, grace); err != nil {
		return err
	}
	a.mu.Lock()
	if a.running[key] == uid {
		delete(a.running, key)
	}
	a.mu.Unlock()
	return nil
}
