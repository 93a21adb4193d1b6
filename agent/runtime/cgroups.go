package runtime

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/containerd/containerd/v2/pkg/oci"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/resource"
)

// cgroupRoot is where pod cgroups live in every hierarchy (the kubelet's
// "kubepods"): /kobune/<qos class>/pod<uid>/<container id>. Grouping by QoS
// class is what lets a node favour Guaranteed pods over BestEffort ones.
const cgroupRoot = "/kobune"

const sysCgroup = "/sys/fs/cgroup"

// podCgroup is the pod's cgroup path (the parent of its containers').
func podCgroup(pod *core.Pod) string {
	qos := pod.Status.QOSClass
	if qos == "" {
		qos = core.PodQOSClass(&pod.Spec)
	}
	return cgroupRoot + "/" + strings.ToLower(string(qos)) + "/pod" + pod.UID
}

// CPU shares and CFS quota from requests and limits, the kubelet's way:
// 1 cpu = 1024 shares (at least 2); quota = limit × period, period 100 ms.
const (
	cfsPeriod = 100_000
	minShares = 2
	minQuota  = 1_000
)

// resourceOpts turns a container's requests and limits into cgroup settings.
func resourceOpts(c *core.Container) []oci.SpecOpts {
	var opts []oci.SpecOpts
	shares := uint64(minShares)
	if req, ok := c.Resources.Requests[resource.CPU]; ok {
		shares = max(uint64(req.MilliValue()*1024/1000), minShares)
	}
	opts = append(opts, oci.WithCPUShares(shares))
	if lim, ok := c.Resources.Limits[resource.CPU]; ok {
		opts = append(opts, oci.WithCPUCFS(max(lim.MilliValue()*cfsPeriod/1000, minQuota), cfsPeriod))
	}
	if lim, ok := c.Resources.Limits[resource.Memory]; ok {
		opts = append(opts, oci.WithMemoryLimit(uint64(lim.Value())))
	}
	return opts
}

// podResources are the pod cgroup's settings, the kubelet's way: cpu shares
// from the sum of the containers' cpu requests; a cpu quota and a memory
// limit only when every container has that limit, from their sum. An init
// container runs alone (beside the sidecars before it), so it counts when
// it asks for more than the sum.
type podResources struct {
	shares    uint64
	quota     int64 // 0: none
	memory    int64 // 0: none
	hasQuota  bool
	hasMemory bool
}

func podCgroupResources(pod *core.Pod) podResources {
	allCPU, allMem := true, true
	for _, list := range [2][]core.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for _, c := range list {
			_, ok := c.Resources.Limits[resource.CPU]
			allCPU = allCPU && ok
			_, ok = c.Resources.Limits[resource.Memory]
			allMem = allMem && ok
		}
	}
	// Sidecars add to the containers; an ordinary init container counts
	// alone, beside the sidecars before it (core.PodAggregate).
	amount := func(of func(*core.Container) int64) int64 {
		return core.PodAggregate(&pod.Spec, of, func(a, b int64) int64 { return a + b }, func(a, b int64) int64 { return max(a, b) })
	}
	cpuReq := amount(func(c *core.Container) int64 { return c.Resources.Requests.Cpu().MilliValue() })
	cpuLim := amount(func(c *core.Container) int64 { q := c.Resources.Limits[resource.CPU]; return q.MilliValue() })
	memLim := amount(func(c *core.Container) int64 { q := c.Resources.Limits[resource.Memory]; return q.Value() })
	r := podResources{shares: max(uint64(cpuReq*1024/1000), minShares), hasQuota: allCPU, hasMemory: allMem}
	if allCPU {
		r.quota = max(cpuLim*cfsPeriod/1000, minQuota)
	}
	if allMem {
		r.memory = memLim
	}
	return r
}

// ensurePodCgroup makes the pod's cgroup and writes its settings before the
// first container starts in it (runc would make it with defaults: 1024
// shares, no quota, no memory limit). Errors are returned: a pod whose
// limits cannot be applied must not run without them.
func ensurePodCgroup(pod *core.Pod) error {
	r := podCgroupResources(pod)
	path := podCgroup(pod)
	if cgroupV2() {
		return writePodCgroupV2(path, r)
	}
	type file struct{ hierarchy, name, value string }
	files := []file{{"cpu", "cpu.shares", strconv.FormatUint(r.shares, 10)}}
	if r.hasQuota {
		files = append(files, file{"cpu", "cpu.cfs_period_us", strconv.Itoa(cfsPeriod)}, file{"cpu", "cpu.cfs_quota_us", strconv.FormatInt(r.quota, 10)})
	}
	if r.hasMemory {
		files = append(files, file{"memory", "memory.limit_in_bytes", strconv.FormatInt(r.memory, 10)})
	}
	for _, h := range []string{"cpu", "memory"} {
		if err := os.MkdirAll(filepath.Join(sysCgroup, h, path), 0o755); err != nil {
			return fmt.Errorf("pod cgroup %s: %w", path, err)
		}
	}
	for _, f := range files {
		if err := os.WriteFile(filepath.Join(sysCgroup, f.hierarchy, path, f.name), []byte(f.value), 0o644); err != nil {
			return fmt.Errorf("pod cgroup %s: write %s: %w", path, f.name, err)
		}
	}
	return nil
}

// writePodCgroupV2 is ensurePodCgroup on the unified hierarchy: the cpu and
// memory controllers are enabled down the path, shares become cpu.weight
// (the kubelet's conversion), quota cpu.max, the limit memory.max.
func writePodCgroupV2(path string, r podResources) error {
	dir := sysCgroup
	for _, part := range strings.Split(strings.Trim(path, "/"), "/") {
		_ = os.WriteFile(filepath.Join(dir, "cgroup.subtree_control"), []byte("+cpu +memory"), 0o644)
		dir = filepath.Join(dir, part)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("pod cgroup %s: %w", path, err)
		}
	}
	weight := 1 + ((r.shares-2)*9999)/262142
	files := map[string]string{"cpu.weight": strconv.FormatUint(weight, 10)}
	if r.hasQuota {
		files["cpu.max"] = fmt.Sprintf("%d %d", r.quota, cfsPeriod)
	}
	if r.hasMemory {
		files["memory.max"] = strconv.FormatInt(r.memory, 10)
	}
	for name, value := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(value), 0o644); err != nil {
			return fmt.Errorf("pod cgroup %s: write %s: %w", path, name, err)
		}
	}
	return nil
}

// cgroupV2 reports whether the host uses the unified hierarchy.
func cgroupV2() bool {
	_, err := os.Stat(filepath.Join(sysCgroup, "cgroup.controllers"))
	return err == nil
}

// oomKilled reads the kernel's OOM-kill counter of a container's cgroup.
// It must be read before the task is deleted: runc removes the cgroup then.
func oomKilled(cgroup string) bool {
	file, key := filepath.Join(sysCgroup, "memory", cgroup, "memory.oom_control"), "oom_kill"
	if cgroupV2() {
		file = filepath.Join(sysCgroup, cgroup, "memory.events")
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) == 2 && f[0] == key {
			n, _ := strconv.Atoi(f[1])
			return n > 0
		}
	}
	return false
}

// removePodCgroup removes the pod's (now empty) cgroup in every hierarchy;
// runc removes the containers' own, but not the parents Kobune made.
func removePodCgroup(path string) {
	if cgroupV2() {
		_ = os.Remove(filepath.Join(sysCgroup, path))
		return
	}
	dirs, _ := os.ReadDir(sysCgroup)
	for _, d := range dirs {
		_ = os.Remove(filepath.Join(sysCgroup, d.Name(), path))
	}
}

// ErrMemoryInUse is a memory limit below what the container uses now.
var ErrMemoryInUse = errors.New("memory limit below current usage")

// ResizeContainers implements Resizer: the pod's cgroup is written before
// the containers' (a limit raised: the kernel wants the parent's room
// first) and after them (a limit lowered: the children's first).
func (r *Containerd) ResizeContainers(ctx context.Context, pod *core.Pod, names []string) error {
	_ = ensurePodCgroup(pod)
	for _, name := range names {
		c := pod.Spec.Container(name)
		if c == nil {
			return fmt.Errorf("container %q is not in the pod's spec", name)
		}
		if err := writeContainerCgroup(podCgroup(pod)+"/"+containerID(pod.UID, name), c); err != nil {
			return fmt.Errorf("container %s: %w", name, err)
		}
	}
	return ensurePodCgroup(pod)
}

// writeContainerCgroup sets a running container's cgroup from its
// requests and limits, as resourceOpts sets them at creation (runc
// update's files): cpu shares (v2: weight), the CFS quota or none, the
// memory limit or none. A memory limit below the usage is not written.
func writeContainerCgroup(cgroup string, c *core.Container) error {
	shares := uint64(minShares)
	if req, ok := c.Resources.Requests[resource.CPU]; ok {
		shares = max(uint64(req.MilliValue()*1024/1000), minShares)
	}
	quota := int64(-1)
	if lim, ok := c.Resources.Limits[resource.CPU]; ok {
		quota = max(lim.MilliValue()*cfsPeriod/1000, minQuota)
	}
	memory := int64(-1)
	if lim, ok := c.Resources.Limits[resource.Memory]; ok {
		memory = lim.Value()
	}
	type file struct{ dir, name, value string }
	var files []file
	usage := filepath.Join(sysCgroup, "memory", cgroup, "memory.usage_in_bytes")
	if cgroupV2() {
		usage = filepath.Join(sysCgroup, cgroup, "memory.current")
		dir := filepath.Join(sysCgroup, cgroup)
		cpuMax, memMax := fmt.Sprintf("max %d", cfsPeriod), "max"
		if quota > 0 {
			cpuMax = fmt.Sprintf("%d %d", quota, cfsPeriod)
		}
		if memory >= 0 {
			memMax = strconv.FormatInt(memory, 10)
		}
		files = []file{{dir, "memory.max", memMax}, {dir, "cpu.weight", strconv.FormatUint(1+((shares-2)*9999)/262142, 10)}, {dir, "cpu.max", cpuMax}}
	} else {
		cpu, mem := filepath.Join(sysCgroup, "cpu", cgroup), filepath.Join(sysCgroup, "memory", cgroup)
		files = []file{{mem, "memory.limit_in_bytes", strconv.FormatInt(memory, 10)}, {cpu, "cpu.shares", strconv.FormatUint(shares, 10)},
			{cpu, "cpu.cfs_period_us", strconv.Itoa(cfsPeriod)}, {cpu, "cpu.cfs_quota_us", strconv.FormatInt(quota, 10)}}
	}
	if memory >= 0 {
		if b, err := os.ReadFile(usage); err == nil {
			if used, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err == nil && used > memory {
				return fmt.Errorf("%w: attempting to set memory limit (%d) below current usage (%d)", ErrMemoryInUse, memory, used)
			}
		}
	}
	for _, f := range files {
		if err := os.WriteFile(filepath.Join(f.dir, f.name), []byte(f.value), 0o644); err != nil {
			return fmt.Errorf("write %s: %w", filepath.Join(f.dir, f.name), err)
		}
	}
	return nil
}
