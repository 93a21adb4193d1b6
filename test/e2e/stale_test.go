package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
)

// removeStaleRuns removes what an earlier run of these tests left when it
// could not clean up (killed, or panicked on go test's timeout): its
// bridges and node namespaces (a stale bridge holds the API server's
// address 172.31.250.1 and takes the new run's traffic), the containerd,
// kobune-agent and shim processes it started (found by their command
// lines, which name this suite's /tmp/Test…/ directories and the
// kobune-e2e containerd namespace; killed by PID, only when the test
// process that owned them is gone), and the mounts below their
// directories. It returns what it removed, for the log.
func removeStaleRuns() []string {
	var removed []string
	alive := func(id string) bool {
		pid, err := strconv.Atoi(id)
		if err != nil || pid == os.Getpid()%100000 {
			return true // ours, or not a run's id
		}
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		return err == nil && strings.Contains(string(b), "e2e.test")
	}
	// Bridges ke2e<id> (and their veths ke2e<id>n<i>), namespaces kobune-e2e-<id>-<i>.
	links, _ := exec.Command("ip", "-o", "link", "show").Output()
	for _, m := range regexp.MustCompile(`\d+: (ke2e(\d+)):`).FindAllStringSubmatch(string(links), -1) {
		if !alive(m[2]) {
			if exec.Command("ip", "link", "delete", m[1]).Run() == nil {
				removed = append(removed, "bridge "+m[1])
			}
			_ = exec.Command("iptables", "-D", "FORWARD", "-i", m[1], "-o", m[1], "-j", "ACCEPT").Run()
		}
	}
	netns, _ := exec.Command("ip", "netns", "list").Output()
	for _, m := range regexp.MustCompile(`(?m)^(kobune-e2e-(\d+)-\d+)`).FindAllStringSubmatch(string(netns), -1) {
		if !alive(m[2]) && exec.Command("ip", "netns", "delete", m[1]).Run() == nil {
			removed = append(removed, "namespace "+m[1])
		}
	}
	// Pod network namespaces (kobune-<uid prefix>) of dead runs: nothing
	// runs in them and their veth went with the node's namespace, so only
	// lo is left. (A live lab's or run's pod namespace has its eth0.)
	for _, m := range regexp.MustCompile(`(?m)^(kobune-[0-9a-f]{8}-[0-9a-f]{3})\b`).FindAllStringSubmatch(string(netns), -1) {
		pids, _ := exec.Command("ip", "netns", "pids", m[1]).Output()
		nsLinks, err := exec.Command("ip", "-n", m[1], "-o", "link").Output()
		if err != nil || len(strings.TrimSpace(string(pids))) > 0 || strings.Count(strings.TrimSpace(string(nsLinks)), "\n") > 0 ||
			!strings.Contains(string(nsLinks), ": lo:") {
			continue
		}
		if exec.Command("ip", "netns", "delete", m[1]).Run() == nil {
			removed = append(removed, "pod namespace "+m[1])
		}
	}
	// Processes: a containerd or agent whose parent (the test) is gone, a
	// shim whose containerd is gone.
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	type proc struct {
		pid       int
		ppid      int
		cmd, addr string
	}
	var all []proc
	live := map[string]bool{} // containerd sockets with a running containerd
	for _, f := range procs {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		cmd := strings.ReplaceAll(string(b), "\x00", " ")
		pid, _ := strconv.Atoi(strings.Split(f, "/")[2])
		stat, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		var ppid int
		if i := strings.LastIndex(string(stat), ") "); i > 0 {
			fields := strings.Fields(string(stat)[i+2:])
			if len(fields) > 1 {
				ppid, _ = strconv.Atoi(fields[1])
			}
		}
		p := proc{pid: pid, ppid: ppid, cmd: cmd}
		if m := regexp.MustCompile(`--address (/tmp/Test\S+/containerd\.sock)`).FindStringSubmatch(cmd); m != nil && strings.HasPrefix(cmd, "containerd ") {
			p.addr = m[1]
			if ppid != 1 {
				live[m[1]] = true
			}
		}
		all = append(all, p)
	}
	for _, p := range all {
		stale := false
		switch {
		case p.addr != "" && p.ppid == 1:
			stale = true // an orphaned containerd of an earlier run
		case strings.Contains(p.cmd, "kobune-agent ") && strings.Contains(p.cmd, "--containerd-namespace kobune-e2e") && p.ppid == 1:
			stale = true
		case strings.Contains(p.cmd, "/kobune-e2e-build") && strings.Contains(p.cmd, "/kobune-csi-local ") && p.ppid == 1:
			stale = true
		case strings.HasPrefix(p.cmd, "/usr/bin/containerd-shim-runc-v2 -namespace kobune-e2e "):
			m := regexp.MustCompile(`-address (/tmp/Test\S+/containerd\.sock)`).FindStringSubmatch(p.cmd)
			stale = m != nil && !live[m[1]]
		}
		if stale && syscall.Kill(p.pid, syscall.SIGKILL) == nil {
			removed = append(removed, fmt.Sprintf("process %d (%.60s)", p.pid, p.cmd))
		}
	}
	// Mounts below the directories of runs whose containerd is gone.
	b, _ := os.ReadFile("/proc/self/mounts")
	lines := strings.Split(string(b), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		f := strings.Fields(lines[i])
		if len(f) < 2 {
			continue
		}
		m := regexp.MustCompile(`^(/tmp/Test[^/]+/\d+)/`).FindStringSubmatch(f[1])
		if m != nil && !live[m[1]+"/containerd.sock"] && syscall.Unmount(f[1], syscall.MNT_DETACH) == nil {
			removed = append(removed, "mount "+f[1])
		}
	}
	return removed
}
