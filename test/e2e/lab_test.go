package e2e

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/client"
)

// TestLabUpAndDown runs `lab.sh up` and `lab.sh down` as a user would and
// checks that down leaves no namespaces, links, routes, iptables chains,
// mounts or processes behind.
func TestLabUpAndDown(t *testing.T) {
	requireRoot(t)
	if exec.Command("ip", "link", "show", "kobune-lab0").Run() == nil {
		t.Skip("a lab is already up on this host (kobune-lab0 exists); not touching it")
	}
	if l, err := net.Listen("tcp", "127.0.0.1:6443"); err != nil {
		t.Skip("127.0.0.1:6443 is in use; the lab's API server needs it")
	} else {
		l.Close()
	}
	state := filepath.Join(t.TempDir(), "lab")
	lab := filepath.Join(repoRoot(), "deploy", "lab", "lab.sh")
	env := append(os.Environ(), "KOBUNE_LAB_STATE="+state, "HOME="+t.TempDir(), "SUDO_USER=")
	run := func(args ...string) string {
		cmd := exec.Command(lab, args...)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("lab.sh %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	t.Cleanup(func() { // whatever happens, take it down
		cmd := exec.Command(lab, "down")
		cmd.Env = env
		_ = cmd.Run()
	})
	out := run("up", "--nodes", "2")
	for _, want := range []string{"The lab is up", "-> labapp 1.0 on hello-1", "-> labapp 2.0 on hello-2"} {
		if !strings.Contains(out, want) {
			t.Errorf("lab.sh up output lacks %q:\n%s", want, out)
		}
	}
	// The lab's scheduler places a pod that names no node, and it runs.
	apply := exec.Command(filepath.Join(repoRoot(), "bin", "kobectl"), "--server", "127.0.0.1:6443", "apply", "-f", filepath.Join(repoRoot(), "deploy", "examples", "pod-scheduled.yaml"))
	if out, err := apply.CombinedOutput(); err != nil {
		t.Fatalf("apply pod-scheduled.yaml: %v %s", err, out)
	}
	c, err := client.New("127.0.0.1:6443")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	placed, err := client.WaitFor(ctx, client.For[*core.Pod](c), "lab", "placed", 0, func(p *core.Pod, _ bool) bool { return p.Status.Phase == core.PodRunning })
	if err != nil {
		t.Fatalf("the scheduled pod did not run: %v", err)
	}
	if placed.Spec.NodeName != "node-1" && placed.Spec.NodeName != "node-2" {
		t.Errorf("placed on %q", placed.Spec.NodeName)
	}
	var pids []string
	files, _ := filepath.Glob(filepath.Join(state, "pids", "*.pid"))
	for _, f := range files {
		b, _ := os.ReadFile(f)
		pids = append(pids, strings.TrimSpace(string(b)))
	}
	if len(pids) != 6 { // apiserver, scheduler, 2 containerd, 2 agents
		t.Errorf("lab runs %d processes, want 6", len(pids))
	}
	run("down")

	check := func(what, out string, bad func(string) bool) {
		for _, line := range strings.Split(out, "\n") {
			if bad(line) {
				t.Errorf("left behind after lab.sh down: %s: %s", what, line)
			}
		}
	}
	netns, _ := exec.Command("ip", "netns", "list").Output()
	check("network namespace", string(netns), func(l string) bool { return strings.HasPrefix(l, "kobune-lab-") })
	links, _ := exec.Command("ip", "-o", "link").Output()
	check("link", string(links), func(l string) bool { return strings.Contains(l, "kobune-lab0") || strings.Contains(l, " kl-node-") })
	routes, _ := exec.Command("ip", "route").Output()
	check("route", string(routes), func(l string) bool {
		return strings.HasPrefix(l, "blackhole 10.244.0.0/16") || strings.HasPrefix(l, "blackhole 10.96.0.0/16")
	})
	rules, _ := exec.Command("iptables", "-S").Output()
	check("iptables", string(rules), func(l string) bool { return strings.Contains(l, "KOBUNE-LAB") })
	mounts, _ := os.ReadFile("/proc/self/mounts")
	check("mount", string(mounts), func(l string) bool { return strings.Contains(l, state) })
	for _, pid := range pids {
		if _, err := os.Stat("/proc/" + pid); err == nil {
			t.Errorf("lab process %s still runs after down", pid)
		}
	}
	if _, err := os.Stat(state); !os.IsNotExist(err) {
		t.Errorf("lab state %s still there after down", state)
	}
}
