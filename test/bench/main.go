// Command bench measures the API server against raw etcd on this machine and
// writes the figures to docs/benchmarks.md (`make bench`):
//
//   - create throughput of pod-sized objects through kobune-apiserver, with 1
//     and 16 concurrent clients, beside raw etcd puts of the same bytes at the
//     same concurrency (the same embedded etcd, over the same loopback);
//   - watch delivery latency, p50 and p99, from the start of a create to its
//     arrival at each of 100 watchers;
//   - and, each in a file of its own: what security costs (security.go),
//     Priority and Fairness (fairness.go), the REST API (rest.go), custom
//     resources, CEL rules and admission webhooks (custom.go), the
//     scheduler (scheduler.go) and the build (build.go).
//
// Kubernetes' own numbers for the same runs on the same machine are quoted
// from issue #2 for comparison; they are not re-measured here.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/api/resource"
	"github.com/kobune/kobune/apiserver/testserver"
	"github.com/kobune/kobune/client"
	"github.com/kobune/kobune/proto/apipb"
)

func main() {
	out := flag.String("out", "docs/benchmarks.md", "where to write the report")
	creates := flag.Int("creates", 45000, "objects created (and raw puts) with 16 clients (a third of it with one)")
	rounds := flag.Int("rounds", 30, "alternating raw-etcd and API rounds the objects are split into")
	watchers := flag.Int("watchers", 100, "watchers in the latency run (0: skip it)")
	events := flag.Int("events", 300, "objects created in the latency run")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of the API create runs to this file")
	parts := flag.String("only", "api,security,fairness,rest,custom,scheduler,build", "which benchmarks to run: api, security, fairness, rest, custom, scheduler, build (comma-separated)")
	fairCreates := flag.Int("fairness-creates", 12000, "pod creates on each side of the Priority and Fairness benchmark (16 clients)")
	fairObjects := flag.Int("fairness-objects", 20000, "ConfigMaps the attacker of the fairness benchmark lists")
	fairWatches := flag.Int("fairness-watches", 5000, "watches the attacker of the fairness benchmark opens")
	fairLists := flag.Int("fairness-lists", 200, "unpaginated lists the attacker of the fairness benchmark runs at a time")
	fairAttack := flag.Duration("fairness-attack", 20*time.Second, "how long the victim's creates are measured under attack")
	restCreates := flag.Int("rest-creates", 12000, "pod creates on each side (etcd, gRPC, REST) of the REST benchmark (16 clients)")
	customCreates := flag.Int("custom-creates", 8000, "creates in each row of the custom resources benchmark (16 clients)")
	securityCreates := flag.Int("security-creates", 12000, "pod creates on each side of the security benchmark (16 clients)")
	schedNodes := flag.String("scheduler-nodes", "1000,5000", "node counts for the scheduler benchmark")
	schedPods := flag.Int("scheduler-pods", 10000, "measured pods per scheduler run")
	schedWorkloads := flag.String("scheduler-workloads", "", "run only these scheduler workloads (comma-separated; empty: all)")
	flag.Parse()
	profileAPI = *cpuprofile

	dir, err := os.MkdirTemp("", "kobune-bench")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	report := fmt.Sprintf("# Benchmarks\n\nWritten by `make bench` (test/bench) on %s.\n\n", time.Now().UTC().Format("2006-01-02 15:04 MST"))
	report += fmt.Sprintf("Machine: %s. Embedded etcd 3.7 with its data on the local disk (fsync on every write).\n\n", machine())
	if strings.Contains(*parts, "api") {
		report += apiBench(dir, *creates, *rounds, *watchers, *events) + "\n"
	}
	if strings.Contains(*parts, "security") {
		report += securityBench(dir, *securityCreates, 20) + "\n"
	}
	if strings.Contains(*parts, "fairness") {
		report += fairnessBench(dir, *fairCreates, 20, *fairObjects, *fairWatches, *fairLists, *fairAttack) + "\n"
	}
	if strings.Contains(*parts, "rest") {
		report += restBench(dir, *restCreates, 20) + "\n"
	}
	if strings.Contains(*parts, "custom") {
		report += customBench(dir, *customCreates, 20) + "\n"
	}
	if strings.Contains(*parts, "scheduler") {
		var counts []int
		for _, f := range strings.Split(*schedNodes, ",") {
			var n int
			if _, err := fmt.Sscan(f, &n); err != nil {
				log.Fatalf("-scheduler-nodes: %q is not a number", f)
			}
			counts = append(counts, n)
		}
		report += renderScheduler(schedulerBench(dir, counts, *schedPods, *schedWorkloads))
	}
	if strings.Contains(*parts, "build") {
		report += "\n" + buildBench(dir)
	}
	if err := os.WriteFile(*out, []byte(report), 0o644); err != nil {
		log.Fatal(err)
	}
	fmt.Print(report)
}

// apiBench measures create throughput against raw etcd and watch latency,
// and returns the report's sections.
func apiBench(dir string, creates, rounds, watchers, events int) string {
	srv, err := testserver.Start(filepath.Join(dir, "throughput"), "")
	if err != nil {
		log.Fatalf("start apiserver: %v", err)
	}
	ctx := context.Background()

	podJSON := podBytes("template")
	var rows []throughputRow
	for _, conc := range []int{1, 16} {
		n := creates
		if conc == 1 {
			n /= 3
		}
		// Each concurrent client has its own connection, for the API and for
		// raw etcd alike; raw etcd is reached the way any etcd client reaches
		// it, over gRPC to the same etcd the API server uses.
		clients := make([]*client.Client, conc)
		raws := make([]*clientv3.Client, conc)
		for i := range clients {
			if clients[i], err = client.New(srv.Addr()); err != nil {
				log.Fatal(err)
			}
			defer clients[i].Close()
			if raws[i], err = clientv3.New(clientv3.Config{Endpoints: srv.EtcdEndpoints(), DialTimeout: 10 * time.Second}); err != nil {
				log.Fatal(err)
			}
			defer raws[i].Close()
		}
		// Many short rounds alternate raw etcd and the API, so that both see
		// the same machine conditions (this VM's speed drifts by tens of
		// percent over seconds) and the same database size. Each side's
		// throughput is all its objects over all its time.
		per := n / rounds
		row := throughputRow{concurrency: conc, objects: per * rounds, rounds: rounds}
		stopProfile := startProfile(fmt.Sprintf("%s.%d", profileAPI, conc))
		var etcdTime, apiTime time.Duration
		for round := range rounds {
			d := measure(per, conc, func(w, i int) error {
				_, err := raws[w].Put(ctx, fmt.Sprintf("/bench/raw/%d/%d/%d", conc, round, i), string(podJSON))
				return err
			})
			bodies := make([][]byte, per)
			for i := range bodies {
				bodies[i] = podBytes(fmt.Sprintf("c%d-%d-%d", conc, round, i))
			}
			a := measure(per, conc, func(w, i int) error {
				_, err := clients[w].API.Create(ctx, &apipb.CreateRequest{Resource: "pods", Namespace: "default", Object: bodies[i]})
				return err
			})
			etcdTime += d
			apiTime += a
			row.roundRatios = append(row.roundRatios, d.Seconds()/a.Seconds())
		}
		stopProfile()
		row.etcd = float64(row.objects) / etcdTime.Seconds()
		row.api = float64(row.objects) / apiTime.Seconds()
		log.Printf("%2d clients, %d rounds of %d: raw etcd %.0f puts/s, API %.0f creates/s (%.0f%%; rounds %s)", conc, rounds, per, row.etcd, row.api, 100*row.api/row.etcd, row.ratioSpread())
		rows = append(rows, row)
	}

	srv.Stop()

	// Watch latency gets its own fresh server, so that etcd snapshots and
	// compactions of the throughput runs' data do not land in it.
	if watchers == 0 {
		return render(rows, len(podJSON), 0, 0, 0, 0, 0, 0)
	}
	wsrv, err := testserver.Start(filepath.Join(dir, "watch"), "")
	if err != nil {
		log.Fatalf("start apiserver: %v", err)
	}
	defer wsrv.Stop()
	log.Printf("watch latency: %d watchers, %d creates", watchers, events)
	p50, p99, max, delivered := watchLatency(ctx, wsrv, watchers, events)
	log.Printf("  p50 %v p99 %v max %v (%d deliveries)", p50, p99, max, delivered)
	return render(rows, len(podJSON), watchers, events, p50, p99, max, delivered)
}

var profileAPI string

// startProfile profiles the CPU until the returned function is called, when
// -cpuprofile is set.
func startProfile(path string) func() {
	if profileAPI == "" {
		return func() {}
	}
	f, err := os.Create(path)
	if err != nil {
		log.Fatal(err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		log.Fatal(err)
	}
	return func() { pprof.StopCPUProfile(); f.Close() }
}

type throughputRow struct {
	concurrency, objects, rounds int
	etcd, api                    float64 // objects per second over all rounds
	roundRatios                  []float64
}

// ratioSpread prints the API/etcd ratio of the rounds: lowest, median, highest.
func (r throughputRow) ratioSpread() string {
	s := append([]float64(nil), r.roundRatios...)
	sort.Float64s(s)
	return fmt.Sprintf("%.0f%% / %.0f%% / %.0f%%", 100*s[0], 100*median(s), 100*s[len(s)-1])
}

func median(xs []float64) float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	return s[len(s)/2]
}

// measure runs n operations split over conc goroutines and returns the time taken.
func measure(n, conc int, op func(worker, i int) error) time.Duration {
	var wg sync.WaitGroup
	var failed atomic.Int64
	start := time.Now()
	for w := range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += conc {
				if err := op(w, i); err != nil {
					if failed.Add(1) == 1 {
						log.Printf("operation failed: %v", err)
					}
				}
			}
		}()
	}
	wg.Wait()
	if failed.Load() > 0 {
		log.Fatalf("%d operations failed", failed.Load())
	}
	return time.Since(start)
}

// podBytes is a pod of the size real pods have (about 1.3 KiB of JSON):
// labels, annotations, two containers with env, ports, resources, a probe.
func podBytes(name string) []byte {
	c := func(n, img string) core.Container {
		return core.Container{
			Name: n, Image: img, Args: []string{"--listen=:8080", "--log-level=info"},
			Ports: []core.ContainerPort{{Name: "http", ContainerPort: 8080}},
			Env:   []core.EnvVar{{Name: "MODE", Value: "production"}, {Name: "POD_NAME", ValueFrom: &core.EnvVarSource{FieldRef: &core.ObjectFieldSelector{FieldPath: "metadata.name"}}}},
			Resources: core.ResourceRequirements{
				Requests: resource.List{resource.CPU: resource.MustParse("100m"), resource.Memory: resource.MustParse("64Mi")},
				Limits:   resource.List{resource.CPU: resource.MustParse("500m"), resource.Memory: resource.MustParse("128Mi")},
			},
			ReadinessProbe: &core.Probe{ProbeHandler: core.ProbeHandler{HTTPGet: &core.HTTPGetAction{Path: "/readyz", Port: meta.FromInt(8080)}}},
		}
	}
	p := &core.Pod{
		TypeMeta: meta.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: meta.ObjectMeta{Name: name, Namespace: "default",
			Labels:      map[string]string{"app": "bench", "tier": "backend", "pod-template-hash": "5d8f7c9b4"},
			Annotations: map[string]string{"kobune.io/bench": strings.Repeat("x", 200)}},
		Spec: core.PodSpec{Containers: []core.Container{c("app", "kobune.local/labapp:1.0"), c("sidecar", "kobune.local/busybox:1.35")}},
	}
	b, _ := json.Marshal(p)
	return b
}

// watchLatency opens watchers, creates objects one after another, and
// measures from the start of each create to its arrival at each watcher.
func watchLatency(ctx context.Context, srv *testserver.Server, watchers, events int) (p50, p99, max time.Duration, delivered int) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	cms := client.For[*core.ConfigMap](srv.Client)
	var sent sync.Map // name → time.Time
	lat := make(chan time.Duration, watchers*events)
	var ready sync.WaitGroup
	var done sync.WaitGroup
	for range watchers {
		c, err := client.New(srv.Addr())
		if err != nil {
			log.Fatal(err)
		}
		defer c.Close()
		_, rev, err := client.For[*core.ConfigMap](c).List(ctx, "default", client.ListOptions{})
		if err != nil {
			log.Fatal(err)
		}
		w, err := client.For[*core.ConfigMap](c).Watch(ctx, "default", client.ListOptions{LabelSelector: "bench=watch"}, rev)
		if err != nil {
			log.Fatal(err)
		}
		ready.Add(1)
		done.Add(1)
		go func() {
			defer done.Done()
			ready.Done()
			got := 0
			for ev := range w.Events {
				if ev.Type != "ADDED" {
					continue
				}
				if t, ok := sent.Load(ev.Object.Name); ok {
					lat <- time.Since(t.(time.Time))
				}
				if got++; got == events {
					return
				}
			}
		}()
	}
	ready.Wait()
	time.Sleep(500 * time.Millisecond) // let every watch stream reach the server
	for i := range events {
		name := fmt.Sprintf("watch-%d", i)
		sent.Store(name, time.Now())
		cm := &core.ConfigMap{ObjectMeta: meta.ObjectMeta{Name: name, Namespace: "default", Labels: map[string]string{"bench": "watch"}}, Data: map[string]string{"k": strings.Repeat("v", 512)}}
		if _, err := cms.Create(ctx, cm); err != nil {
			log.Fatal(err)
		}
	}
	waitDone := make(chan struct{})
	go func() { done.Wait(); close(waitDone) }()
	select {
	case <-waitDone:
	case <-time.After(60 * time.Second):
		log.Printf("some watchers did not receive every event within 60s")
	}
	close(lat)
	var all []time.Duration
	for d := range lat {
		all = append(all, d)
	}
	sort.Slice(all, func(i, j int) bool { return all[i] < all[j] })
	if len(all) == 0 {
		log.Fatal("no watch events delivered")
	}
	pick := func(q float64) time.Duration { return all[int(q*float64(len(all)-1))] }
	return pick(0.50), pick(0.99), all[len(all)-1], len(all)
}

func machine() string {
	cpu := "unknown cpu"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(l, "model name") {
				cpu = strings.TrimSpace(strings.SplitN(l, ":", 2)[1])
				break
			}
		}
	}
	mem := ""
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		var kb int64
		fmt.Sscanf(strings.SplitN(string(b), "\n", 2)[0], "MemTotal: %d kB", &kb)
		mem = fmt.Sprintf(", %.0f GiB memory", float64(kb)/(1<<20))
	}
	kernel, _ := os.ReadFile("/proc/sys/kernel/osrelease")
	return fmt.Sprintf("%d cores (%s)%s, Linux %s, %s", runtime.NumCPU(), cpu, mem, strings.TrimSpace(string(kernel)), runtime.Version())
}

func render(rows []throughputRow, size, watchers, events int, p50, p99, max time.Duration, delivered int) string {
	var b strings.Builder
	b.WriteString("## API create throughput\n\n")
	fmt.Fprintf(&b, "Pod objects of %d bytes of JSON created through kobune-apiserver (gRPC, decoding, defaulting, admission, validation, an etcd create transaction), beside raw etcd puts of the same bytes at the same concurrency against the same etcd. Every concurrent client has its own gRPC connection, to the API server or to etcd. The API server reaches its embedded etcd in-process for reads and writes (watches use a loopback connection); the raw-etcd clients reach it over loopback gRPC, as any etcd client does. The objects are split into short rounds that alternate (etcd, API, etcd, API, ...), so that both sides see the same machine conditions and database size; each side's rate is all its objects over all its time, and the last column shows how the ratio varied between rounds.\n\n", size)
	b.WriteString("| clients | objects each (rounds) | raw etcd puts/s | API creates/s | API / etcd | goal | ratio per round: lowest / median / highest |\n|---|---|---|---|---|---|---|\n")
	for _, r := range rows {
		ratio := r.api / r.etcd
		verdict := "met"
		if ratio < 0.70 {
			verdict = "**missed**"
		}
		fmt.Fprintf(&b, "| %d | %d (%d) | %.0f | %.0f | %.0f%% | ≥ 70%% (%s) | %s |\n", r.concurrency, r.objects, r.rounds, r.etcd, r.api, 100*ratio, verdict, r.ratioSpread())
	}
	b.WriteString("\nFor comparison (issue #2, measured on this kind of machine): real kube-apiserver v1.37 creates a median of 580 pods/s with 16 clients (14% of ≈ 4,000 raw etcd puts/s) and 240/s with one client (27% of raw etcd).\n\n")
	if watchers == 0 {
		return b.String()
	}
	b.WriteString("## Watch delivery latency\n\n")
	verdict := "met"
	if p99 > 50*time.Millisecond {
		verdict = "**missed**"
	}
	fmt.Fprintf(&b, "%d watchers (each its own connection, label-selected) on one namespace; %d ConfigMaps created one after another; latency from the start of each create call to the event's arrival at each watcher (%d deliveries).\n\n", watchers, events, delivered)
	b.WriteString("| p50 | p99 | max | goal |\n|---|---|---|---|\n")
	fmt.Fprintf(&b, "| %s | %s | %s | p99 < 50 ms (%s) |\n", p50.Round(10*time.Microsecond), p99.Round(10*time.Microsecond), max.Round(10*time.Microsecond), verdict)
	return b.String()
}
