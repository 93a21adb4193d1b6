package cadvisor

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// CgroupSample is what one cgroup's files say at one moment.
type CgroupSample struct {
	// CPUNs is the cumulative CPU time of the cgroup's tasks.
	CPUNs uint64
	// Periods, ThrottledPeriods and ThrottledNs are the CFS quota's
	// counters (zero without a quota).
	Periods, ThrottledPeriods, ThrottledNs uint64
	// MemoryUsage is the charged memory (page cache included); WorkingSet
	// is it less the inactive file cache, as the kubelet computes it; RSS
	// the anonymous memory.
	MemoryUsage, WorkingSet, RSS uint64
	PageFaults, MajorPageFaults  uint64
	OOMKills                     uint64
}

// Cgroups reads cgroups under Root (/sys/fs/cgroup), on the v1
// hierarchies (cpuacct, cpu, memory) or the v2 unified one.
type Cgroups struct {
	Root string
	V2   bool
}

// Host returns the reader of this machine's cgroups.
func Host() Cgroups {
	root := "/sys/fs/cgroup"
	_, err := os.Stat(filepath.Join(root, "cgroup.controllers"))
	return Cgroups{Root: root, V2: err == nil}
}

// Read samples the cgroup at path (such as /kobune/burstable/pod<uid>);
// an error means the cgroup is gone (its container exited).
func (c Cgroups) Read(path string) (CgroupSample, error) {
	if c.V2 {
		return c.readV2(path)
	}
	return c.readV1(path)
}

func (c Cgroups) readV1(path string) (CgroupSample, error) {
	var s CgroupSample
	usage, err := readUint(filepath.Join(c.Root, "cpuacct", path, "cpuacct.usage"))
	if err != nil {
		return s, err
	}
	s.CPUNs = usage
	if kv, err := readKV(filepath.Join(c.Root, "cpu", path, "cpu.stat")); err == nil {
		s.Periods, s.ThrottledPeriods, s.ThrottledNs = kv["nr_periods"], kv["nr_throttled"], kv["throttled_time"]
	}
	if s.MemoryUsage, err = readUint(filepath.Join(c.Root, "memory", path, "memory.usage_in_bytes")); err != nil {
		return s, err
	}
	s.WorkingSet = s.MemoryUsage
	if kv, err := readKV(filepath.Join(c.Root, "memory", path, "memory.stat")); err == nil {
		// total_* include the cgroup's children (a pod's containers).
		s.WorkingSet = subFloor(s.MemoryUsage, kv["total_inactive_file"])
		s.RSS, s.PageFaults, s.MajorPageFaults = kv["total_rss"], kv["total_pgfault"], kv["total_pgmajfault"]
	}
	if kv, err := readKV(filepath.Join(c.Root, "memory", path, "memory.oom_control")); err == nil {
		s.OOMKills = kv["oom_kill"]
	}
	return s, nil
}

func (c Cgroups) readV2(path string) (CgroupSample, error) {
	var s CgroupSample
	dir := filepath.Join(c.Root, path)
	kv, err := readKV(filepath.Join(dir, "cpu.stat"))
	if err != nil {
		return s, err
	}
	s.CPUNs = kv["usage_usec"] * 1000
	s.Periods, s.ThrottledPeriods, s.ThrottledNs = kv["nr_periods"], kv["nr_throttled"], kv["throttled_usec"]*1000
	if s.MemoryUsage, err = readUint(filepath.Join(dir, "memory.current")); err != nil {
		return s, err
	}
	s.WorkingSet = s.MemoryUsage
	if kv, err := readKV(filepath.Join(dir, "memory.stat")); err == nil {
		s.WorkingSet = subFloor(s.MemoryUsage, kv["inactive_file"])
		s.RSS, s.PageFaults, s.MajorPageFaults = kv["anon"], kv["pgfault"], kv["pgmajfault"]
	}
	if kv, err := readKV(filepath.Join(dir, "memory.events")); err == nil {
		s.OOMKills = kv["oom_kill"]
	}
	return s, nil
}

func subFloor(a, b uint64) uint64 {
	if b > a {
		return 0
	}
	return a - b
}

func readUint(file string) (uint64, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return 0, err
	}
	return strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
}

// readKV reads a "key value" per line file (cpu.stat, memory.stat ...).
func readKV(file string) (map[string]uint64, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	out := map[string]uint64{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 2 {
			if n, err := strconv.ParseUint(f[1], 10, 64); err == nil {
				out[f[0]] = n
			}
		}
	}
	return out, nil
}

// NetDev reads the interface counters of the network namespace a process
// is in (/proc/<pid>/net/dev), all interfaces but lo.
func NetDev(pid uint32) (map[string][4]uint64, error) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.FormatUint(uint64(pid), 10), "net", "dev"))
	if err != nil {
		return nil, err
	}
	return parseNetDev(b), nil
}

// parseNetDev returns, per interface, rx bytes, rx errors, tx bytes, tx
// errors.
func parseNetDev(b []byte) map[string][4]uint64 {
	out := map[string][4]uint64{}
	for _, line := range strings.Split(string(b), "\n") {
		name, rest, ok := strings.Cut(line, ":")
		name = strings.TrimSpace(name)
		if !ok || name == "lo" || strings.Contains(name, "|") {
			continue
		}
		f := strings.Fields(rest)
		if len(f) < 16 {
			continue
		}
		n := func(i int) uint64 { v, _ := strconv.ParseUint(f[i], 10, 64); return v }
		out[name] = [4]uint64{n(0), n(2), n(8), n(10)}
	}
	return out
}
