package cadvisor

import (
	"fmt"
	"io"
	"sort"
	"strings"
)

// metric is one of cAdvisor's metric families.
type metric struct {
	name, help, typ string
	value           func(s CgroupSample) float64
}

// cgroupMetrics are cAdvisor's per-cgroup metrics, by their names.
var cgroupMetrics = []metric{
	{"container_cpu_usage_seconds_total", "Cumulative cpu time consumed in seconds.", "counter", func(s CgroupSample) float64 { return float64(s.CPUNs) / 1e9 }},
	{"container_cpu_cfs_periods_total", "Number of elapsed enforcement period intervals.", "counter", func(s CgroupSample) float64 { return float64(s.Periods) }},
	{"container_cpu_cfs_throttled_periods_total", "Number of throttled period intervals.", "counter", func(s CgroupSample) float64 { return float64(s.ThrottledPeriods) }},
	{"container_cpu_cfs_throttled_seconds_total", "Total time duration the container has been throttled.", "counter", func(s CgroupSample) float64 { return float64(s.ThrottledNs) / 1e9 }},
	{"container_memory_usage_bytes", "Current memory usage in bytes, including all memory regardless of when it was accessed", "gauge", func(s CgroupSample) float64 { return float64(s.MemoryUsage) }},
	{"container_memory_working_set_bytes", "Current working set in bytes.", "gauge", func(s CgroupSample) float64 { return float64(s.WorkingSet) }},
	{"container_memory_rss", "Size of RSS in bytes.", "gauge", func(s CgroupSample) float64 { return float64(s.RSS) }},
	{"container_oom_events_total", "Count of out of memory events observed for the container", "counter", func(s CgroupSample) float64 { return float64(s.OOMKills) }},
}

// WritePrometheus writes the latest samples in Prometheus' text format
// with cAdvisor's names and the kubelet's labels: one series per
// container (container, pod, namespace) and one per pod cgroup
// (container=""), as the kubelet's /metrics/cadvisor has them; network
// counters per pod interface; disk usage per container.
func (c *Collector) WritePrometheus(w io.Writer) {
	c.mu.Lock()
	defer c.mu.Unlock()
	type row struct {
		labels string
		s      CgroupSample
		at     int64
	}
	var rows []row
	uids := make([]string, 0, len(c.containers))
	for uid := range c.containers {
		uids = append(uids, uid)
	}
	sort.Strings(uids)
	lbl := func(container string, ref PodInfo) string {
		return fmt.Sprintf(`container=%q,namespace=%q,pod=%q`, container, ref.Ref.Namespace, ref.Ref.Name)
	}
	for _, uid := range uids {
		info := c.pods[uid]
		if s := c.podSeries[uid]; s != nil {
			rows = append(rows, row{lbl("", info), s.last().s, s.last().at.UnixMilli()})
		}
		ctrs := c.containers[uid]
		sort.Slice(ctrs, func(i, j int) bool { return ctrs[i].Name < ctrs[j].Name })
		for _, m := range ctrs {
			if s := c.ctrSeries[m.ID]; s != nil {
				rows = append(rows, row{lbl(m.Name, info), s.last().s, s.last().at.UnixMilli()})
			}
		}
	}
	var b strings.Builder
	for _, m := range cgroupMetrics {
		fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s %s\n", m.name, m.help, m.name, m.typ)
		for _, r := range rows {
			fmt.Fprintf(&b, "%s{%s} %g %d\n", m.name, r.labels, m.value(r.s), r.at)
		}
	}
	for _, dir := range []struct {
		name, help string
		i          int
	}{
		{"container_network_receive_bytes_total", "Cumulative count of bytes received", 0},
		{"container_network_receive_errors_total", "Cumulative count of errors encountered while receiving", 1},
		{"container_network_transmit_bytes_total", "Cumulative count of bytes transmitted", 2},
		{"container_network_transmit_errors_total", "Cumulative count of errors encountered while transmitting", 3},
	} {
		fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s counter\n", dir.name, dir.help, dir.name)
		for _, uid := range uids {
			n, ok := c.net[uid]
			if !ok {
				continue
			}
			names := make([]string, 0, len(n.ifaces))
			for name := range n.ifaces {
				names = append(names, name)
			}
			sort.Strings(names)
			for _, name := range names {
				fmt.Fprintf(&b, "%s{%s,interface=%q} %d %d\n", dir.name, lbl("POD", c.pods[uid]), name, n.ifaces[name][dir.i], n.at.UnixMilli())
			}
		}
	}
	fmt.Fprintf(&b, "# HELP container_fs_usage_bytes Number of bytes that are consumed by the container on this filesystem.\n# TYPE container_fs_usage_bytes gauge\n")
	for _, uid := range uids {
		for _, m := range c.containers[uid] {
			if u, ok := c.rootfs[m.ID]; ok {
				fmt.Fprintf(&b, "container_fs_usage_bytes{%s} %d %d\n", lbl(m.Name, c.pods[uid]), u.bytes, u.at.UnixMilli())
			}
		}
	}
	_, _ = io.WriteString(w, b.String())
}
