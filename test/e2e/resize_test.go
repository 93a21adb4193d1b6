package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/api/resource"
	"github.com/kobune/kobune/client"
)

// TestInPlaceResizeOnARealNode: `kobectl patch pod --subresource resize`
// changes a running container's cgroup limits without restarting it (the
// container reads its new limits itself, its restart count and start time
// stay), restarts a container whose resizePolicy asks for it, sets the
// pod's cgroup to the new sums, and the status shows the new resources.
func TestInPlaceResizeOnARealNode(t *testing.T) {
	requireRoot(t)
	srv, nodes := startCluster(t, 1)
	nodes[0].startAgent(t, "10.244.91.0/24")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	pods := client.For[*core.Pod](srv.Client)
	sized := func(cpu, mem string) core.ResourceRequirements {
		return core.ResourceRequirements{
			Requests: resource.List{resource.CPU: resource.MustParse("100m"), resource.Memory: resource.MustParse("32Mi")},
			Limits:   resource.List{resource.CPU: resource.MustParse(cpu), resource.Memory: resource.MustParse(mem)}}
	}
	created, err := pods.Create(ctx, &core.Pod{ObjectMeta: meta.ObjectMeta{Name: "resized", Namespace: "default"}, Spec: core.PodSpec{NodeName: "node-1",
		Containers: []core.Container{
			{Name: "inplace", Image: "kobune.local/busybox:1.35", ImagePullPolicy: core.PullNever, Command: []string{"sleep", "3600"}, Resources: sized("200m", "64Mi")},
			{Name: "restarts", Image: "kobune.local/busybox:1.35", ImagePullPolicy: core.PullNever, Command: []string{"sleep", "3600"}, Resources: sized("200m", "64Mi"),
				ResizePolicy: []core.ContainerResizePolicy{{ResourceName: resource.Memory, RestartPolicy: core.ResizeRestartContainer}}},
		}}})
	if err != nil {
		t.Fatal(err)
	}
	before := waitForPod(t, ctx, pods, "resized", 0, func(p *core.Pod, _ bool) bool {
		return p.Status.Phase == core.PodRunning && len(p.Status.ContainerStatuses) == 2 && p.Status.ContainerStatuses[0].Ready && p.Status.ContainerStatuses[1].Ready
	})
	v2 := false
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err == nil {
		v2 = true
	}
	// What the container reads of its own cgroup (kubectl exec, as the
	// conformance suite reads it).
	ownLimits := func(container string) (cpu, mem string) {
		t.Helper()
		script := "cat /sys/fs/cgroup/cpu/cpu.cfs_quota_us /sys/fs/cgroup/memory/memory.limit_in_bytes"
		if v2 {
			script = "cat /sys/fs/cgroup/cpu.max /sys/fs/cgroup/memory.max"
		}
		out, errOut, code := kobectl(ctx, srv.Addr(), "exec", "resized", "-c", container, "--", "sh", "-c", script)
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if code != 0 || len(lines) != 2 {
			t.Fatalf("read the cgroup in %s: %q %q (%d)", container, out, errOut, code)
		}
		return lines[0], lines[1]
	}
	wantCPU, wantMem := map[bool]string{false: "20000", true: "20000 100000"}[v2], "67108864"
	if cpu, mem := ownLimits("inplace"); cpu != wantCPU || mem != wantMem {
		t.Errorf("before the resize the container reads cpu %q, memory %q; want %q, %q", cpu, mem, wantCPU, wantMem)
	}
	out, errOut, code := kobectl(ctx, srv.Addr(), "patch", "pod", "resized", "--subresource", "resize", "-p",
		`{"spec":{"containers":[{"name":"inplace","resources":{"limits":{"cpu":"300m","memory":"96Mi"}}},{"name":"restarts","resources":{"limits":{"memory":"96Mi"}}}]}}`)
	if code != 0 || !strings.Contains(out, "pod/resized patched") {
		t.Fatalf("kobectl patch --subresource resize: %q %q (%d)", out, errOut, code)
	}
	after := waitForPod(t, ctx, pods, "resized", client.ResourceVersion(before), func(p *core.Pod, _ bool) bool {
		for _, c := range p.Status.Conditions {
			if c.Type == core.PodResizePending || c.Type == core.PodResizeInProgress {
				return false
			}
		}
		cs := p.Status.ContainerStatuses
		return p.Status.ObservedGeneration == p.Generation && len(cs) == 2 && cs[0].Resources != nil && cs[0].Resources.Limits.Memory().String() == "96Mi" &&
			cs[1].Resources != nil && cs[1].Resources.Limits.Memory().String() == "96Mi" && cs[1].Ready
	})
	wantCPU, wantMem = map[bool]string{false: "30000", true: "30000 100000"}[v2], "100663296"
	if cpu, mem := ownLimits("inplace"); cpu != wantCPU || mem != wantMem {
		t.Errorf("after the resize the container reads cpu %q, memory %q; want %q, %q", cpu, mem, wantCPU, wantMem)
	}
	if _, mem := ownLimits("restarts"); mem != wantMem {
		t.Errorf("the restarted container reads memory %q; want %q", mem, wantMem)
	}
	in0, in1 := before.Status.ContainerStatuses[0], after.Status.ContainerStatuses[0]
	if in1.RestartCount != 0 || in1.State.Running == nil || !in1.State.Running.StartedAt.Equal(in0.State.Running.StartedAt.Time) {
		t.Errorf("the in-place container restarted: %d restarts, %+v (was %+v)", in1.RestartCount, in1.State, in0.State)
	}
	if r := after.Status.ContainerStatuses[1].RestartCount; r != 1 {
		t.Errorf("the container whose policy is RestartContainer: %d restarts, want 1", r)
	}
	// The pod's cgroup holds the new sums (cpu 300m + 200m, memory 96Mi × 2).
	podDir := "/kobune/burstable/pod" + created.UID
	files := map[string]string{"cpu/cpu.cfs_quota_us": "50000", "memory/memory.limit_in_bytes": "201326592"}
	if v2 {
		files = map[string]string{"cpu.max": "50000 100000", "memory.max": "201326592"}
	}
	for file, want := range files {
		h, name, ok := strings.Cut(file, "/")
		path := filepath.Join("/sys/fs/cgroup", h, podDir, name)
		if !ok {
			path = filepath.Join("/sys/fs/cgroup", podDir, file)
		}
		if b, err := os.ReadFile(path); err != nil || strings.TrimSpace(string(b)) != want {
			t.Errorf("pod cgroup %s = %q (%v), want %s", file, b, err, want)
		}
	}
}
