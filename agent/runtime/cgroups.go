package runtime

import (
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
