package vmlab

import (
	"fmt"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kobune/kobune/test/benchreport"
)

var phaseDone = regexp.MustCompile(`\[([a-z-]+)\] done in (\S+)`)

// phases are the "[name] done in D" lines of kobeadm's output, in order.
func phases(out string) (names []string, took map[string]time.Duration) {
	took = map[string]time.Duration{}
	for _, m := range phaseDone.FindAllStringSubmatch(out, -1) {
		d, _ := time.ParseDuration(m[2])
		names = append(names, m[1])
		took[m[1]] = d
	}
	return names, took
}

func phaseTable(out string, total time.Duration) string {
	names, took := phases(out)
	var b strings.Builder
	b.WriteString("| phase | took | share |\n|---|---|---|\n")
	for _, n := range names {
		fmt.Fprintf(&b, "| %s | %d ms | %.0f%% |\n", n, took[n].Milliseconds(), 100*took[n].Seconds()/total.Seconds())
	}
	fmt.Fprintf(&b, "| (the whole command) | %d ms | |\n", total.Milliseconds())
	return b.String()
}

// TestBenchVMLab is `make bench`'s installer benchmark (as root, only
// when KOBUNE_BENCH_REPORT names the report): the base image built from
// Debian's packages into a cache of its own, three machines booted, the
// offline bundle (make dist) unpacked into them, kobeadm init and two
// joins, each phase timed, until three nodes are Ready; then a worker
// with pods rebooted five times, each time until all its pods run again.
func TestBenchVMLab(t *testing.T) {
	report := benchreport.Path(t)
	if os.Geteuid() != 0 {
		t.Skip("the VM lab needs root")
	}
	cache := t.TempDir()
	l := &lab{t: t, state: t.TempDir(), cache: cache}
	t.Cleanup(func() { l.run("", "down") })
	start := time.Now()
	l.must("base")
	base := time.Since(start)
	start = time.Now()
	l.must("up", "--bare", "3")
	up := time.Since(start)
	start = time.Now()
	l.bundle("cp1", "w1", "w2")
	dist := time.Since(start)
	for _, m := range []string{"cp1", "w1", "w2"} {
		l.must("exec", m, "sysctl", "-qw", "net.ipv4.ip_forward=1")
	}
	clusterStart := time.Now()
	initOut := l.must("exec", "cp1", "/root/kobune/kobeadm", "init")
	initTook := time.Since(clusterStart)
	join := joinLine(initOut)
	start = time.Now()
	joinOut := l.must(append([]string{"exec", "w1", "/root/kobune/kobeadm"}, join...)...)
	joinTook := time.Since(start)
	l.must(append([]string{"exec", "w2", "/root/kobune/kobeadm"}, join...)...)
	kobectl := func(args ...string) string {
		out, _ := l.kobectl(args...)
		return out
	}
	waitFor := func(what string, ok func() bool) { l.waitFor(what, 3*time.Minute, 200*time.Millisecond, ok) }
	waitFor("3 nodes Ready", func() bool { return strings.Count(kobectl("get", "nodes", "--no-headers"), " Ready ") == 3 })
	cluster := time.Since(clusterStart)

	kobectl("create", "deployment", "web", "--image", "kobune.local/labapp:1.0", "--replicas", "4")
	waitFor("4 web pods Running", func() bool {
		return strings.Count(kobectl("get", "pods", "-l", "app=web", "--no-headers"), "Running") == 4
	})
	restartsOnW1 := func() (running, restarts int) {
		out := kobectl("get", "pods", "-l", "app=web", "--field-selector", "spec.nodeName=w1", "-o", "jsonpath={range .items[*]}{.status.phase} {.status.containerStatuses[0].ready} {.status.containerStatuses[0].restartCount}{\"\\n\"}{end}")
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			f := strings.Fields(line)
			if len(f) == 3 {
				if f[0] == "Running" && f[1] == "true" {
					running++
				}
				r, _ := strconv.Atoi(f[2])
				restarts += r
			}
		}
		return
	}
	n, _ := restartsOnW1()
	var reboots []time.Duration
	for i := 0; i < 5; i++ {
		_, before := restartsOnW1()
		start := time.Now()
		l.must("reboot", "w1")
		waitFor("w1's pods back", func() bool { r, rs := restartsOnW1(); return r == n && rs == before+n })
		reboots = append(reboots, time.Since(start))
	}
	sort.Slice(reboots, func(i, j int) bool { return reboots[i] < reboots[j] })
	s := func(d time.Duration) string { return fmt.Sprintf("%.1f s", d.Seconds()) }
	benchreport.Append(t, report, fmt.Sprintf(`
## Installing on the VM lab (test/vmlab TestBenchVMLab)

Written by `+"`make bench`"+` on %s, as root: three Debian machines booted with systemd-nspawn on this host (deploy/vmlab/vmlab.sh), the offline bundle of `+"`make dist`"+` unpacked into each, `+"`kobeadm init`"+` on cp1 and the join line it prints on w1 and w2, one after the other, until the three nodes are Ready.

| base image from Debian's packages (once, then cached) | 3 machines booted | make dist and unpack | init + 2 joins to 3 nodes Ready | goal |
|---|---|---|---|---|
| %s | %s | %s | %s | 3 machines in < 60 s from booted (%s), < 3 min with the base image and the bundle (all four: %s, %s) |

kobeadm init on cp1, each phase's share:

%s
kobeadm join on w1:

%s
A worker rebooted (its own `+"`systemctl reboot`"+`) with %d of the example's 4 pods, five times: from the reboot to all its pods Running and ready again, each restarted once more.

| p50 | p99 (the slowest of 5) | goal |
|---|---|---|
| %s | %s | all Running within 60 s (%s) |
`, time.Now().UTC().Format("2006-01-02 15:04 MST"), s(base), s(up), s(dist), s(cluster), benchreport.Verdict(cluster < time.Minute),
		s(base+up+dist+cluster), benchreport.Verdict(base+up+dist+cluster < 3*time.Minute),
		phaseTable(initOut, initTook), phaseTable(joinOut, joinTook), n, s(reboots[2]), s(reboots[4]), benchreport.Verdict(reboots[4] < time.Minute)))
}
