package cadvisor

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kobune/kobune/agent/runtime"
	"github.com/kobune/kobune/api/stats"
)

func writeFiles(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestReadCgroups: the v1 and v2 files, as the kernel writes them, give
// the same sample (working set = usage − inactive file cache).
func TestReadCgroups(t *testing.T) {
	const path = "/kobune/burstable/podu/u-app"
	v1, v2 := t.TempDir(), t.TempDir()
	writeFiles(t, v1, map[string]string{
		"cpuacct" + path + "/cpuacct.usage":        "2500000000\n",
		"cpu" + path + "/cpu.stat":                 "nr_periods 100\nnr_throttled 40\nthrottled_time 3000000000\n",
		"memory" + path + "/memory.usage_in_bytes": "10485760\n",
		"memory" + path + "/memory.stat":           "cache 4096\nrss 8192\ntotal_rss 6291456\ntotal_inactive_file 2097152\ntotal_pgfault 77\ntotal_pgmajfault 3\n",
		"memory" + path + "/memory.oom_control":    "oom_kill_disable 0\nunder_oom 0\noom_kill 2\n",
	})
	writeFiles(t, v2, map[string]string{
		path + "/cpu.stat":       "usage_usec 2500000\nuser_usec 2000000\nsystem_usec 500000\nnr_periods 100\nnr_throttled 40\nthrottled_usec 3000000\n",
		path + "/memory.current": "10485760\n",
		path + "/memory.stat":    "anon 6291456\nfile 4194304\ninactive_file 2097152\npgfault 77\npgmajfault 3\n",
		path + "/memory.events":  "low 0\nhigh 0\nmax 5\noom 2\noom_kill 2\n",
	})
	want := CgroupSample{CPUNs: 2_500_000_000, Periods: 100, ThrottledPeriods: 40, ThrottledNs: 3_000_000_000,
		MemoryUsage: 10 << 20, WorkingSet: 8 << 20, RSS: 6 << 20, PageFaults: 77, MajorPageFaults: 3, OOMKills: 2}
	for _, c := range []Cgroups{{Root: v1}, {Root: v2, V2: true}} {
		got, err := c.Read(path)
		if err != nil {
			t.Fatalf("v2=%v: %v", c.V2, err)
		}
		if got != want {
			t.Errorf("v2=%v: %+v, want %+v", c.V2, got, want)
		}
		if _, err := c.Read("/kobune/gone"); err == nil {
			t.Errorf("v2=%v: a missing cgroup read without error", c.V2)
		}
	}
}

func TestParseNetDev(t *testing.T) {
	got := parseNetDev([]byte(`Inter-|   Receive                                                |  Transmit
 face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed
    lo:    1000      10    0    0    0     0          0         0     1000      10    0    0    0     0       0          0
  eth0:  123456     100    2    0    0     0          0         0    65432      90    1    0    0     0       0          0
`))
	if len(got) != 1 || got["eth0"] != [4]uint64{123456, 2, 65432, 1} {
		t.Errorf("parseNetDev: %v", got)
	}
}

// TestSeriesRate: the CPU rate is over the last Window, from the oldest
// sample kept.
func TestSeriesRate(t *testing.T) {
	var s series
	t0 := time.Unix(1000, 0)
	if s.add(point{at: t0, s: CgroupSample{CPUNs: 0}}); s.rate() != nil {
		t.Fatal("a rate from one sample")
	}
	// 0.5 cpu for 3 s, then 0.2 cpu from there on, a sample a second.
	cpu := uint64(0)
	for i := 1; i <= 12; i++ {
		if i <= 3 {
			cpu += 500_000_000
		} else {
			cpu += 200_000_000
		}
		s.add(point{at: t0.Add(time.Duration(i) * time.Second), s: CgroupSample{CPUNs: cpu}})
	}
	r := s.rate()
	if r == nil || *r != 200_000_000 {
		t.Errorf("rate after the change: %v, want 200000000 nano-cores", r)
	}
	if span := s.points[len(s.points)-1].at.Sub(s.points[0].at); span < Window || span > Window+time.Second {
		t.Errorf("the series spans %v, want about %v", span, Window)
	}
}

// testSource is the containers a test's fixture cgroup tree holds.
type testSource []runtime.MeasuredContainer

func (s testSource) Measured(context.Context) ([]runtime.MeasuredContainer, error) { return s, nil }
func (s testSource) RootfsUsage(context.Context, string) (int64, int64, error) {
	return 4096, 3, nil
}

// TestSummaryAndPrometheus: a collector over a fixture tree: the pod and
// its container in the summary, the node as the pods' sum, the names of
// /metrics/cadvisor.
func TestSummaryAndPrometheus(t *testing.T) {
	root := t.TempDir()
	writeFiles(t, root, map[string]string{
		"cpuacct/kobune/burstable/podu/cpuacct.usage":              "1000000000",
		"memory/kobune/burstable/podu/memory.usage_in_bytes":       "2097152",
		"cpuacct/kobune/burstable/podu/u-app/cpuacct.usage":        "900000000",
		"cpu/kobune/burstable/podu/u-app/cpu.stat":                 "nr_periods 10\nnr_throttled 4\nthrottled_time 100\n",
		"memory/kobune/burstable/podu/u-app/memory.usage_in_bytes": "1048576",
	})
	logs := t.TempDir()
	writeFiles(t, logs, map[string]string{"app/0.log": "hello\n"})
	c := New(Config{NodeName: "node-1", Cgroups: Cgroups{Root: root},
		Runtime: testSource{{PodUID: "u", Name: "app", ID: "u-app", Cgroup: "/kobune/burstable/podu/u-app", PID: uint32(os.Getpid())}},
		Pods: func() map[string]PodInfo {
			return map[string]PodInfo{"u": {Ref: stats.PodReference{Name: "web", Namespace: "default", UID: "u"}, LogDir: logs}}
		},
		MemoryCapacity: func() uint64 { return 8 << 20 }})
	c.Sample(context.Background())
	sum := c.Summary()
	if len(sum.Pods) != 1 || len(sum.Pods[0].Containers) != 1 {
		t.Fatalf("summary: %+v", sum)
	}
	ctr := sum.Pods[0].Containers[0]
	if *ctr.CPU.UsageCoreNanoSeconds != 900000000 || ctr.CPU.UsageNanoCores != nil || ctr.CPU.Throttling.ThrottledPeriods != 4 || *ctr.Rootfs.UsedBytes != 4096 || *ctr.Logs.UsedBytes != 6 {
		t.Errorf("container: cpu %+v rootfs %+v logs %+v", ctr.CPU, ctr.Rootfs, ctr.Logs)
	}
	if *sum.Node.Memory.WorkingSetBytes != 2<<20 || *sum.Node.Memory.AvailableBytes != 6<<20 {
		t.Errorf("node memory %+v, want the pod's 2 MiB of 8", sum.Node.Memory)
	}
	var b strings.Builder
	c.WritePrometheus(&b)
	for _, want := range []string{`container_cpu_usage_seconds_total{container="app",namespace="default",pod="web"} 0.9`,
		`container_cpu_cfs_throttled_periods_total{container="app",namespace="default",pod="web"} 4`,
		`container_memory_usage_bytes{container="",namespace="default",pod="web"} 2.097152e+06`, `container_fs_usage_bytes{container="app",namespace="default",pod="web"} 4096`} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("prometheus lacks %q:\n%s", want, b.String())
		}
	}
}
