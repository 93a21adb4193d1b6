package runtime

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/containerd/containerd/v2/client"
	"github.com/containerd/errdefs"

	"github.com/kobune/kobune/agent/network"
	"github.com/kobune/kobune/api/core"
)

// A node that reboots keeps what is on disk (containerd's containers,
// their images and writable layers, CNI's address allocations, the
// agent's state directory) and loses what lived in memory or under /run:
// every process, every task, the pods' network namespaces
// (/run/netns/kobune-<id>) and cgroups. The kubelet finds such a pod's
// sandbox "not ready", makes a new one and starts the containers again in
// it, each as its next attempt. The runtime does the same here:
//
//   - sandboxLost notices it: the pod's network namespace is gone (a pod
//     of its own network), or a container started in an earlier boot of
//     the machine has no process any more (hostNetwork pods too);
//   - retire turns every container of the pod into an exited attempt —
//     exit code 255, reason Unknown, as containerd's CRI reports a
//     container whose task was lost — kills what still runs of it, and
//     releases the old sandbox's address;
//   - RunPod then makes a new sandbox, and the agent's restart policy
//     starts the containers again (without back-off: they did not crash),
//     init containers first, as after any sandbox change.

// ReasonUnknown is the reason of a container that was lost with its
// sandbox (containerd's CRI: "Unknown", exit code 255).
const (
	ReasonUnknown = "Unknown"
	exitUnknown   = 255
)

// LabelBootID is the machine's boot in which a container's process was
// started (/proc/sys/kernel/random/boot_id), and LabelLost when its
// sandbox was found gone.
const (
	LabelBootID = "kobune.io/boot-id"
	LabelLost   = "kobune.io/lost"
)

var bootIDOnce = sync.OnceValue(func() string {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
})

// sandboxGone says whether a pod of its own network has lost its network
// namespace.
func sandboxGone(pod *core.Pod, st PodState) bool {
	if pod.Spec.HostNetwork || st.IP == "" || len(st.Containers) == 0 {
		return false
	}
	_, err := os.Stat(network.NetnsPath(sandboxID(pod.UID)))
	return errors.Is(err, os.ErrNotExist)
}

// sandboxLost says whether the pod's containers must be retired: a
// container not retired yet whose sandbox is gone, or whose process was
// started in an earlier boot (not boot, the machine's current one) and is
// no more.
func sandboxLost(pod *core.Pod, st PodState, boot string) bool {
	gone := sandboxGone(pod, st)
	for _, c := range st.Containers {
		if c.lost {
			continue
		}
		if gone {
			return true
		}
		if c.bootID != "" && boot != "" && c.bootID != boot && !c.Running {
			return true
		}
	}
	return false
}

// retire ends every attempt of the pod's containers: a running process is
// killed, its task deleted, and the container labelled lost (it then reads
// as exited with 255/Unknown until it is started again); the old
// sandbox's address is released.
func (r *Containerd) retire(ctx context.Context, pod *core.Pod) error {
	ctrs, _, err := r.podContainers(ctx, pod.UID)
	if err != nil {
		return err
	}
	now := time.Now().UTC().Format(time.RFC3339Nano)
	for _, ctr := range ctrs {
		info := listed(ctx, ctr)
		if info.Labels[LabelLost] != "" {
			continue
		}
		if task, err := ctr.Task(ctx, nil); err == nil {
			if _, err := task.Delete(ctx, client.WithProcessKill); err != nil && !errdefs.IsNotFound(err) {
				return fmt.Errorf("delete task of %s: %w", ctr.ID(), err)
			}
		} else if !errdefs.IsNotFound(err) {
			return fmt.Errorf("task of %s: %w", ctr.ID(), err)
		}
		r.mu.Lock()
		delete(r.watched, ctr.ID())
		r.mu.Unlock()
		if _, err := ctr.SetLabels(ctx, map[string]string{LabelLost: now}); err != nil {
			return fmt.Errorf("label %s lost: %w", ctr.ID(), err)
		}
	}
	if pod.Spec.HostNetwork {
		// (A pod of its own network gets the agent's event, which names
		// the new address, once its new sandbox is made.)
		r.record(pod, core.EventTypeNormal, "SandboxChanged", "Pod sandbox changed, it will be killed and re-created.")
		return nil
	}
	// CNI DEL without a namespace: the address and CNI's cached result go.
	if err := r.network.Teardown(ctx, sandboxID(pod.UID)); err != nil {
		return fmt.Errorf("release the lost sandbox: %w", err)
	}
	return nil
}

// relabelIP gives the pod's remaining containers the new sandbox's
// address, so that the pod's state reads it until they start again.
func (r *Containerd) relabelIP(ctx context.Context, uid, ip string) error {
	ctrs, _, err := r.podContainers(ctx, uid)
	if err != nil {
		return err
	}
	for _, ctr := range ctrs {
		if _, err := ctr.SetLabels(ctx, map[string]string{LabelPodIP: ip}); err != nil && !errdefs.IsNotFound(err) {
			return fmt.Errorf("label %s with the new address: %w", ctr.ID(), err)
		}
	}
	return nil
}
