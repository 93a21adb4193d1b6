package e2e

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/api/resource"
	"github.com/kobune/kobune/api/stats"
	"github.com/kobune/kobune/client"
)

// TestUsageMetricsOnARealNode: a container limited to 200m that burns a
// whole CPU shows, through the metrics API and kobectl top, a CPU rate
// within 10 % of what its cgroup's own counter says over the same span,
// and CFS throttling (periods throttled) within 10 % of its cgroup's
// cpu.stat; an idle container beside it shows next to no CPU; its memory
// is the cgroup's working set; the node's figures are its pods' sums;
// /metrics/cadvisor carries cAdvisor's names; a viewer without
// nodes/proxy cannot read a node's raw stats.
func TestUsageMetricsOnARealNode(t *testing.T) {
	requireRoot(t)
	srv, nodes := startCluster(t, 1)
	nodes[0].startAgent(t, "10.244.86.0/24")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	pods := client.For[*core.Pod](srv.Client)
	limit := resource.List{resource.CPU: resource.MustParse("200m"), resource.Memory: resource.MustParse("64Mi")}
	p, err := pods.Create(ctx, &core.Pod{ObjectMeta: meta.ObjectMeta{Name: "burner", Namespace: "default", Labels: map[string]string{"app": "burner"}}, Spec: core.PodSpec{
		NodeName: "node-1",
		Containers: []core.Container{
			{Name: "burn", Image: "kobune.local/labapp:1.0", ImagePullPolicy: core.PullNever, Args: []string{"--burn-seconds", "10m", "--alloc-mb", "16"},
				Resources: core.ResourceRequirements{Limits: limit}},
			{Name: "idle", Image: "kobune.local/labapp:1.0", ImagePullPolicy: core.PullNever, Args: []string{"--listen", ":8081"}},
		}}})
	if err != nil {
		t.Fatal(err)
	}
	running := waitForPod(t, ctx, pods, "burner", 0, func(p *core.Pod, _ bool) bool { return p.Status.Phase == core.PodRunning })
	ctrCgroup := "/kobune/" + strings.ToLower(string(running.Status.QOSClass)) + "/pod" + p.UID + "/" + p.UID + "-burn"
	v2 := false
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err == nil {
		v2 = true
	}
	// The cgroup's own counters, read here as the test's reference.
	cpuNs := func() uint64 {
		file, scale, key := filepath.Join("/sys/fs/cgroup/cpuacct", ctrCgroup, "cpuacct.usage"), uint64(1), ""
		if v2 {
			file, scale, key = filepath.Join("/sys/fs/cgroup", ctrCgroup, "cpu.stat"), 1000, "usage_usec"
		}
		return readCounter(t, file, key) * scale
	}
	throttled := func() uint64 {
		file := filepath.Join("/sys/fs/cgroup/cpu", ctrCgroup, "cpu.stat")
		if v2 {
			file = filepath.Join("/sys/fs/cgroup", ctrCgroup, "cpu.stat")
		}
		return readCounter(t, file, "nr_throttled")
	}
	// Let it burn and be sampled for a while (the rate covers 5 s).
	time.Sleep(8 * time.Second)

	within := func(what string, got, want float64) {
		t.Helper()
		if want == 0 || got < want*0.9 || got > want*1.1 {
			t.Errorf("%s: %.0f, want within 10%% of the cgroup's own %.0f", what, got, want)
		}
	}
	// The metrics API's CPU rate against the cgroup's counter over the 5 s
	// before the read.
	start, t0 := cpuNs(), time.Now()
	time.Sleep(5 * time.Second)
	end, t1 := cpuNs(), time.Now()
	list, err := srv.Client.PodMetrics(ctx, "default", "app=burner")
	if err != nil || len(list.Items) != 1 {
		t.Fatalf("pod metrics: %v %+v", err, list)
	}
	own := float64(end-start) / t1.Sub(t0).Seconds() / 1e6 // millicores
	usage := map[string]resource.List{}
	for _, c := range list.Items[0].Containers {
		usage[c.Name] = c.Usage
	}
	burnCPU := usage["burn"][resource.CPU]
	within("burn's CPU through the metrics API (millicores)", float64(burnCPU.MilliValue()), own)
	if own < 150 || own > 230 {
		t.Errorf("the cgroup itself says %.0fm: a 200m limit should hold a burning container near 200m", own)
	}
	if idle := usage["idle"][resource.CPU]; idle.MilliValue() > 20 {
		t.Errorf("the idle container uses %s", idle.String())
	}
	if mem := usage["burn"][resource.Memory]; mem.Value() < 16<<20 || mem.Value() > 64<<20 {
		t.Errorf("burn's working set %s: it allocated 16 MiB under a 64 MiB limit", mem.String())
	}

	// The Summary's throttling against cpu.stat, read right after it. The
	// summary's sample is up to a second old (10 periods of 100 ms): after
	// 20 s of burning, that is under 5 % of the count.
	time.Sleep(8 * time.Second)
	b, err := srv.Client.NodeStats(ctx, "node-1", "summary")
	if err != nil {
		t.Fatal(err)
	}
	ownThrottled := throttled()
	var sum stats.Summary
	if err := json.Unmarshal(b, &sum); err != nil {
		t.Fatal(err)
	}
	var burn *stats.ContainerStats
	var pod *stats.PodStats
	for i := range sum.Pods {
		if sum.Pods[i].PodRef.Name == "burner" {
			pod = &sum.Pods[i]
			for j := range pod.Containers {
				if pod.Containers[j].Name == "burn" {
					burn = &pod.Containers[j]
				}
			}
		}
	}
	if burn == nil || burn.CPU == nil || burn.CPU.Throttling == nil {
		t.Fatalf("no throttling for burn in the summary:\n%s", b)
	}
	within("throttled periods in the summary", float64(burn.CPU.Throttling.ThrottledPeriods), float64(ownThrottled))
	t.Logf("burn: the cgroup says %.0fm, the metrics API %dm; throttled periods: summary %d, cpu.stat %d", own, burnCPU.MilliValue(), burn.CPU.Throttling.ThrottledPeriods, ownThrottled)
	if burn.Memory == nil || burn.Memory.WorkingSetBytes == nil || burn.Logs == nil || pod.Network == nil || pod.Network.RxBytes == nil {
		t.Errorf("the summary lacks memory, logs or network for burner:\n%s", b)
	}
	if sum.Node.CPU == nil || sum.Node.CPU.UsageNanoCores == nil || *sum.Node.CPU.UsageNanoCores < uint64(burnCPU.MilliValue())*1e6*9/10 {
		t.Errorf("the node's CPU should be at least its pods' sum: %+v", sum.Node.CPU)
	}

	// kobectl top: the same figures, and the throttling column.
	out, errOut, code := kobectl(ctx, srv.Addr(), "top", "pods", "--containers")
	m := regexp.MustCompile(`burner\s+burn\s+(\d+)m\s+\d+Mi\s+(\d+)/(\d+)`).FindStringSubmatch(out)
	if code != 0 || m == nil {
		t.Fatalf("top pods --containers:\n%s%s", out, errOut)
	}
	topCPU, _ := strconv.Atoi(m[1])
	within("kobectl top's CPU (millicores)", float64(topCPU), own)
	if n, _ := strconv.Atoi(m[2]); n == 0 {
		t.Errorf("top shows no throttled periods:\n%s", out)
	}
	if out, errOut, code := kobectl(ctx, srv.Addr(), "top", "nodes"); code != 0 || !regexp.MustCompile(`node-1\s+\d+m\s+\d+%\s+\d+Mi\s+\d+%`).MatchString(out) {
		t.Errorf("top nodes:\n%s%s", out, errOut)
	}

	// cAdvisor's names on /metrics/cadvisor.
	prom, err := srv.Client.NodeStats(ctx, "node-1", "cadvisor")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`container_cpu_cfs_throttled_periods_total{container="burn",namespace="default",pod="burner"}`,
		`container_cpu_usage_seconds_total{container="idle",namespace="default",pod="burner"}`, `container_memory_working_set_bytes{container="",namespace="default",pod="burner"}`,
		`container_network_receive_bytes_total{container="POD",namespace="default",pod="burner",interface="eth0"}`} {
		if !strings.Contains(string(prom), want) {
			t.Errorf("/metrics/cadvisor lacks %s:\n%s", want, prom)
		}
	}

	// The kubelet's /pods (nodes/NAME/proxy/pods): the node's pods as a
	// v1 PodList.
	page, err := srv.Client.NodeStats(ctx, "node-1", "pods")
	if err != nil {
		t.Fatal(err)
	}
	var podList struct {
		Kind  string
		Items []core.Pod
	}
	if err := json.Unmarshal(page, &podList); err != nil || podList.Kind != "PodList" || len(podList.Items) != 1 || podList.Items[0].Name != "burner" {
		t.Errorf("node-1's pods page: %v %.300s; want a PodList of burner", err, page)
	}
}

// readCounter reads a cgroup counter file: the whole file, or the value
// of key in a "key value" file.
func readCounter(t *testing.T, file, key string) uint64 {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("read %s: %v", file, err)
	}
	if key == "" {
		n, _ := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
		return n
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) == 2 && f[0] == key {
			n, _ := strconv.ParseUint(f[1], 10, 64)
			return n
		}
	}
	t.Fatalf("%s has no %s", file, key)
	return 0
}
