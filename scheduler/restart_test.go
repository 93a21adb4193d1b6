package scheduler_test

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/api/resource"
	"github.com/kobune/kobune/apiserver"
	"github.com/kobune/kobune/apiserver/testserver"
	"github.com/kobune/kobune/client"
)

// TestKillSchedulerWith5000PendingPods runs two kobune-scheduler processes
// with leader election, kills the leader (SIGKILL) while 5,000 pods are
// pending and binds are in flight, starts it again, and checks that every pod is bound exactly once (the API server
// counts exactly 5,000 successful binds; no pod's node ever changes) and
// that no node is over-committed. The nodes have exactly the room the pods
// need, so a lost or doubled assumption would leave pods pending or
// overfill a node.
func TestKillSchedulerWith5000PendingPods(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the scheduler binary and schedules 5,000 pods twice over")
	}
	const (
		nodes   = 50
		pods    = 5000
		cpuNode = 10000 // millicores: nodes × cpuNode = pods × 100m exactly
	)
	bin := filepath.Join(t.TempDir(), "kobune-scheduler")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/kobune/kobune/cmd/kobune-scheduler").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	s := testserver.New(t, func(c *apiserver.Config) { c.MetricsListen = "127.0.0.1:0" })
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	c := s.Client
	for i := range nodes {
		mkNode(t, ctx, c, fmt.Sprintf("node-%02d", i), "10", nil)
	}
	podClient := client.For[*core.Pod](c)
	_, rev, err := podClient.List(ctx, "default", client.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	create := make(chan int)
	var wg sync.WaitGroup
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range create {
				p := &core.Pod{ObjectMeta: meta.ObjectMeta{Name: fmt.Sprintf("p-%04d", i), Namespace: "default"}, Spec: core.PodSpec{Containers: []core.Container{{
					Name: "c", Image: "i", Resources: core.ResourceRequirements{Requests: resource.List{resource.CPU: resource.MustParse("100m")}}}}}}
				if _, err := podClient.Create(ctx, p); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	for i := range pods {
		create <- i
	}
	close(create)
	wg.Wait()

	// Watch every change from before the pods existed: a pod's node must be
	// set once and never change.
	w, err := podClient.Watch(ctx, "default", client.ListOptions{}, rev)
	if err != nil {
		t.Fatal(err)
	}
	boundTo := map[string]string{}
	progress := make(chan int, pods)
	go func() {
		for ev := range w.Events {
			p := ev.Object
			if p.Spec.NodeName == "" {
				continue
			}
			if prev, ok := boundTo[p.Name]; ok {
				if prev != p.Spec.NodeName {
					t.Errorf("%s moved from %s to %s", p.Name, prev, p.Spec.NodeName)
				}
				continue
			}
			boundTo[p.Name] = p.Spec.NodeName
			progress <- len(boundTo)
		}
	}()

	start := func() *exec.Cmd {
		// The renew deadline leaves room for a slow API server: under -race,
		// while a new leader lists 5,000 pods and starts 256 binds at once,
		// its Lease renewal took over 3 s, and a leader that cannot renew in
		// time steps down and exits (nothing would restart it here).
		cmd := exec.Command(bin, "--server", s.Addr(), "--metrics-listen", "", "--leader-elect",
			"--leader-elect-lease-duration", "8s", "--leader-elect-renew-deadline", "6s", "--leader-elect-retry-period", "500ms")
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }) // this test's own child, by its PID
		return cmd
	}
	waitBound := func(n int) {
		t.Helper()
		for {
			select {
			case got := <-progress:
				if got >= n {
					return
				}
			case <-ctx.Done():
				t.Fatalf("fewer than %d pods bound: %v", n, ctx.Err())
			}
		}
	}
	first := start()
	waitBound(200) // the first one leads
	start()        // a standby: it waits for the Lease while the first one acts
	waitBound(1500)
	if err := first.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = first.Wait()
	t.Logf("killed the leading scheduler with about 1500 of %d pods bound", pods)
	start() // restarted; it and the standby compete for the Lease, one acts
	waitBound(pods)

	all, _, err := podClient.List(ctx, "default", client.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	used := map[string]int64{}
	for _, p := range all {
		if p.Spec.NodeName == "" {
			t.Errorf("%s is not bound", p.Name)
		}
		used[p.Spec.NodeName] += p.Spec.Containers[0].Resources.Requests.Cpu().MilliValue()
	}
	for n, m := range used {
		if m > cpuNode {
			t.Errorf("node %s over-committed: %dm of %dm", n, m, cpuNode)
		}
	}
	// Binds cut off by the kill count as Canceled, though some had
	// already been written. None may have found its pod already bound
	// (Aborted: two schedulers acted at once, or the new leader decided
	// again for a bound pod),
	// and the successful ones cannot exceed the pods.
	metrics := "http://" + s.MetricsAddr() + "/metrics"
	series := `kobune_apiserver_requests_total{code="%s",resource="pods",verb="bind"}`
	ok, canceled, aborted := scrape(t, metrics, fmt.Sprintf(series, "OK")), scrape(t, metrics, fmt.Sprintf(series, "Canceled")), scrape(t, metrics, fmt.Sprintf(series, "Aborted"))
	if aborted != 0 || ok > pods || ok+canceled < pods {
		t.Errorf("binds: %d OK, %d canceled by the kill, %d refused as already bound; want none refused, at most %d OK, OK + canceled ≥ %d", ok, canceled, aborted, pods, pods)
	}
	t.Logf("binds: %d OK, %d canceled by the kill (%d of them had been written), 0 refused", ok, canceled, pods-ok)
}

// scrape returns the value of one series from a /metrics page (0 if absent).
func scrape(t *testing.T, url, series string) int {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), series+" "); ok {
			var n int
			fmt.Sscan(v, &n)
			return n
		}
	}
	return 0
}
