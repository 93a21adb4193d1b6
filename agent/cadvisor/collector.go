// Package cadvisor is kobune-agent's cAdvisor: every second it reads the
// cgroups of the node's running pods and containers (CPU time, CFS
// throttling, memory working set and RSS, OOM kills), their network
// namespaces' interface counters and, less often, the disk their
// writable layers, logs and emptyDir volumes use — from the kernel, not
// estimates. It serves them in the kubelet's Summary API shape
// (api/stats; /stats/summary) and as Prometheus metrics with cAdvisor's
// names (/metrics/cadvisor), both on the node API and on the agent's
// loopback metrics port. CPU rates are over the last 5 s.
package cadvisor

import (
	"context"
	"os"
	"path"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/kobune/kobune/agent/runtime"
	"github.com/kobune/kobune/api/stats"
)

// Window is the span CPU rates are measured over (the resolution of the
// metrics API).
const Window = 5 * time.Second

// PodInfo is what the agent knows of one running pod.
type PodInfo struct {
	Ref       stats.PodReference
	StartTime time.Time
	// Volumes are its emptyDir directories by volume name.
	Volumes map[string]string
	// LogDir holds its containers' logs (one directory per container).
	LogDir string
}

// Config is what the collector needs from its agent.
type Config struct {
	NodeName string
	Runtime  runtime.StatsSource
	// Pods returns the node's running pods by uid.
	Pods func() map[string]PodInfo
	// MemoryCapacity is the node's memory (for availableBytes).
	MemoryCapacity func() uint64
	Cgroups        Cgroups
	// Interval between samples (0: 1 s); FsInterval between disk walks
	// (0: 10 s).
	Interval, FsInterval time.Duration
}

type point struct {
	at time.Time
	s  CgroupSample
}

// series is a cgroup's recent samples, oldest first, spanning Window.
type series struct{ points []point }

func (s *series) add(p point) {
	s.points = append(s.points, p)
	for len(s.points) > 2 && p.at.Sub(s.points[1].at) >= Window {
		s.points = s.points[1:]
	}
}

// rate is the CPU rate in nano-cores over the series (nil with one sample).
func (s *series) rate() *uint64 {
	if len(s.points) < 2 {
		return nil
	}
	first, last := s.points[0], s.points[len(s.points)-1]
	dt := last.at.Sub(first.at)
	if dt <= 0 || last.s.CPUNs < first.s.CPUNs {
		return nil
	}
	r := uint64(float64(last.s.CPUNs-first.s.CPUNs) / dt.Seconds())
	return &r
}

func (s *series) last() point { return s.points[len(s.points)-1] }

type fsUsage struct {
	at            time.Time
	bytes, inodes uint64
	measured      bool
}

type netSample struct {
	at     time.Time
	ifaces map[string][4]uint64
}

// Collector samples and keeps the latest figures.
type Collector struct {
	cfg   Config
	start time.Time

	mu         sync.Mutex
	pods       map[string]PodInfo
	podSeries  map[string]*series                     // pod uid → the pod cgroup
	ctrSeries  map[string]*series                     // container id → its cgroup
	containers map[string][]runtime.MeasuredContainer // pod uid → running containers
	net        map[string]netSample
	rootfs     map[string]fsUsage // container id
	logs       map[string]fsUsage // pod uid/container
	volumes    map[string]fsUsage // pod uid/volume
	lastFs     time.Time
}

// New returns a collector; Run samples.
func New(cfg Config) *Collector {
	if cfg.Interval <= 0 {
		cfg.Interval = time.Second
	}
	if cfg.FsInterval <= 0 {
		cfg.FsInterval = 10 * time.Second
	}
	return &Collector{cfg: cfg, start: time.Now(), podSeries: map[string]*series{}, ctrSeries: map[string]*series{},
		containers: map[string][]runtime.MeasuredContainer{}, net: map[string]netSample{}, rootfs: map[string]fsUsage{},
		logs: map[string]fsUsage{}, volumes: map[string]fsUsage{}}
}

// Run samples every Interval until ctx ends.
func (c *Collector) Run(ctx context.Context) {
	t := time.NewTicker(c.cfg.Interval)
	defer t.Stop()
	for {
		c.Sample(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Sample reads every running container once (and the disks when due).
func (c *Collector) Sample(ctx context.Context) {
	measured, err := c.cfg.Runtime.Measured(ctx)
	if err != nil {
		return
	}
	pods := c.cfg.Pods()
	now := time.Now()
	byPod := map[string][]runtime.MeasuredContainer{}
	for _, m := range measured {
		if _, ok := pods[m.PodUID]; ok {
			byPod[m.PodUID] = append(byPod[m.PodUID], m)
		}
	}
	type read struct {
		key string
		s   CgroupSample
	}
	var podReads, ctrReads []read
	nets := map[string]netSample{}
	for uid, ctrs := range byPod {
		if s, err := c.cfg.Cgroups.Read(path.Dir(ctrs[0].Cgroup)); err == nil {
			podReads = append(podReads, read{uid, s})
		}
		for _, m := range ctrs {
			if s, err := c.cfg.Cgroups.Read(m.Cgroup); err == nil {
				ctrReads = append(ctrReads, read{m.ID, s})
			}
		}
		if ifs, err := NetDev(ctrs[0].PID); err == nil {
			nets[uid] = netSample{at: now, ifaces: ifs}
		}
	}
	fsDue := now.Sub(c.lastFs) >= c.cfg.FsInterval
	var rootfs, logs, volumes map[string]fsUsage
	if fsDue {
		rootfs, logs, volumes = map[string]fsUsage{}, map[string]fsUsage{}, map[string]fsUsage{}
		for uid, ctrs := range byPod {
			info := pods[uid]
			for _, m := range ctrs {
				if b, i, err := c.cfg.Runtime.RootfsUsage(ctx, m.ID); err == nil {
					rootfs[m.ID] = fsUsage{at: now, bytes: uint64(b), inodes: uint64(i), measured: true}
				}
				if info.LogDir != "" {
					b, i := DirUsage(filepath.Join(info.LogDir, m.Name))
					logs[uid+"/"+m.Name] = fsUsage{at: now, bytes: b, inodes: i, measured: true}
				}
			}
			for name, dir := range info.Volumes {
				b, i := DirUsage(dir)
				volumes[uid+"/"+name] = fsUsage{at: now, bytes: b, inodes: i, measured: true}
			}
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.pods, c.containers, c.net = pods, byPod, nets
	keep := func(m map[string]*series, reads []read) {
		seen := map[string]bool{}
		for _, r := range reads {
			s := m[r.key]
			if s == nil {
				s = &series{}
				m[r.key] = s
			}
			s.add(point{at: now, s: r.s})
			seen[r.key] = true
		}
		for k := range m {
			if !seen[k] {
				delete(m, k)
			}
		}
	}
	keep(c.podSeries, podReads)
	keep(c.ctrSeries, ctrReads)
	if fsDue {
		c.rootfs, c.logs, c.volumes, c.lastFs = rootfs, logs, volumes, now
	}
}

// DirUsage is the bytes and inodes of the files under dir (what du
// counts: allocated blocks).
func DirUsage(dir string) (bytes, inodes uint64) {
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		inodes++
		if info, err := d.Info(); err == nil && !d.IsDir() {
			bytes += uint64(info.Size())
		}
		return nil
	})
	return bytes, inodes
}

func u64(v uint64) *uint64 { return &v }

func cpuStats(s *series) *stats.CPUStats {
	l := s.last()
	out := &stats.CPUStats{Time: l.at, UsageNanoCores: s.rate(), UsageCoreNanoSeconds: u64(l.s.CPUNs)}
	if l.s.Periods > 0 {
		out.Throttling = &stats.ThrottlingStats{Periods: l.s.Periods, ThrottledPeriods: l.s.ThrottledPeriods, ThrottledTimeNs: l.s.ThrottledNs}
	}
	return out
}

func memoryStats(s *series) *stats.MemoryStats {
	l := s.last()
	return &stats.MemoryStats{Time: l.at, UsageBytes: u64(l.s.MemoryUsage), WorkingSetBytes: u64(l.s.WorkingSet), RSSBytes: u64(l.s.RSS),
		PageFaults: u64(l.s.PageFaults), MajorPageFaults: u64(l.s.MajorPageFaults), OOMKills: u64(l.s.OOMKills)}
}

func fsStats(u fsUsage) *stats.FsStats {
	if !u.measured {
		return nil
	}
	return &stats.FsStats{Time: u.at, UsedBytes: u64(u.bytes), InodesUsed: u64(u.inodes)}
}

// Summary is the latest figures in the Summary API's shape.
func (c *Collector) Summary() stats.Summary {
	c.mu.Lock()
	defer c.mu.Unlock()
	sum := stats.Summary{Node: stats.NodeStats{NodeName: c.cfg.NodeName, StartTime: c.start}, Pods: []stats.PodStats{}}
	var nodeCPU, nodeRate, nodeWS, nodeUsage, nodeRSS uint64
	rated := false
	var at time.Time
	uids := make([]string, 0, len(c.containers))
	for uid := range c.containers {
		uids = append(uids, uid)
	}
	sort.Strings(uids)
	for _, uid := range uids {
		info := c.pods[uid]
		ps := stats.PodStats{PodRef: info.Ref, StartTime: info.StartTime, Containers: []stats.ContainerStats{}}
		if s := c.podSeries[uid]; s != nil {
			ps.CPU, ps.Memory = cpuStats(s), memoryStats(s)
			nodeCPU += *ps.CPU.UsageCoreNanoSeconds
			if ps.CPU.UsageNanoCores != nil {
				nodeRate += *ps.CPU.UsageNanoCores
				rated = true
			}
			nodeWS += *ps.Memory.WorkingSetBytes
			nodeUsage += *ps.Memory.UsageBytes
			nodeRSS += *ps.Memory.RSSBytes
			at = s.last().at
		}
		ctrs := append([]runtime.MeasuredContainer(nil), c.containers[uid]...)
		sort.Slice(ctrs, func(i, j int) bool { return ctrs[i].Name < ctrs[j].Name })
		var ephemeral, ephemeralInodes uint64
		measuredFs := false
		for _, m := range ctrs {
			cs := stats.ContainerStats{Name: m.Name, StartTime: m.StartedAt}
			if s := c.ctrSeries[m.ID]; s != nil {
				cs.CPU, cs.Memory = cpuStats(s), memoryStats(s)
			}
			if u, ok := c.rootfs[m.ID]; ok {
				cs.Rootfs = fsStats(u)
				ephemeral, ephemeralInodes, measuredFs = ephemeral+u.bytes, ephemeralInodes+u.inodes, true
			}
			if u, ok := c.logs[uid+"/"+m.Name]; ok {
				cs.Logs = fsStats(u)
				ephemeral, ephemeralInodes, measuredFs = ephemeral+u.bytes, ephemeralInodes+u.inodes, true
			}
			ps.Containers = append(ps.Containers, cs)
		}
		names := make([]string, 0, len(info.Volumes))
		for name := range info.Volumes {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, name := range names {
			if u, ok := c.volumes[uid+"/"+name]; ok {
				ps.VolumeStats = append(ps.VolumeStats, stats.VolumeStats{Name: name, FsStats: *fsStats(u)})
				ephemeral, ephemeralInodes, measuredFs = ephemeral+u.bytes, ephemeralInodes+u.inodes, true
			}
		}
		if measuredFs {
			ps.EphemeralStorage = &stats.FsStats{Time: c.lastFs, UsedBytes: u64(ephemeral), InodesUsed: u64(ephemeralInodes)}
		}
		if n, ok := c.net[uid]; ok {
			ns := &stats.NetworkStats{Time: n.at}
			ifnames := make([]string, 0, len(n.ifaces))
			for name := range n.ifaces {
				ifnames = append(ifnames, name)
			}
			sort.Strings(ifnames)
			for _, name := range ifnames {
				v := n.ifaces[name]
				ns.Interfaces = append(ns.Interfaces, stats.InterfaceStats{Name: name, RxBytes: u64(v[0]), RxErrors: u64(v[1]), TxBytes: u64(v[2]), TxErrors: u64(v[3])})
			}
			if len(ns.Interfaces) > 0 {
				ns.InterfaceStats = ns.Interfaces[0] // the pod's eth0 (names sort eth0 first)
			}
			ps.Network = ns
		}
		sum.Pods = append(sum.Pods, ps)
	}
	if at.IsZero() {
		at = time.Now()
	}
	sum.Node.CPU = &stats.CPUStats{Time: at, UsageCoreNanoSeconds: u64(nodeCPU)}
	if rated || len(uids) == 0 {
		sum.Node.CPU.UsageNanoCores = u64(nodeRate)
	}
	sum.Node.Memory = &stats.MemoryStats{Time: at, UsageBytes: u64(nodeUsage), WorkingSetBytes: u64(nodeWS), RSSBytes: u64(nodeRSS)}
	if c.cfg.MemoryCapacity != nil {
		sum.Node.Memory.AvailableBytes = u64(subFloor(c.cfg.MemoryCapacity(), nodeWS))
	}
	return sum
}
