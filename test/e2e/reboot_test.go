package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kobune/kobune/agent/network"
	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/client"
)

// TestNodeRebootBringsPodsBack: a node loses what a reboot loses — every
// process (agent, containerd, shims, containers), containerd's state
// directory (/run/containerd on a machine), the pods' network namespaces
// (/run/netns) and cgroups, the tmpfs volumes — and keeps what is on disk.
// When its containerd and agent start again, every pod is Running again
// with no command typed: a new sandbox (and address), each container's
// restart count one higher, its last state "Unknown" (exit 255) as
// containerd's CRI reports a lost task, init containers run again, and the
// pod serves. A restartPolicy Never pod that was running fails, as the
// kubelet lets it. (Before: the agent reused the lost namespace's path and
// the pods crash-looped for good.) The VM lab's reboot test does the same
// with a machine's own systemd.
func TestNodeRebootBringsPodsBack(t *testing.T) {
	requireRoot(t)
	srv, nodes := startCluster(t, 1)
	n := nodes[0]
	const cidr = "10.244.91.0/24"
	n.startAgent(t, cidr)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	pods := client.For[*core.Pod](srv.Client)
	labapp := func(name string, args ...string) core.Container {
		return core.Container{Name: name, Image: "kobune.local/labapp:1.0", ImagePullPolicy: core.PullNever, Args: args}
	}
	never := core.RestartPolicyNever
	for _, p := range []*core.Pod{
		{ObjectMeta: meta.ObjectMeta{Name: "web", Namespace: "default"}, Spec: core.PodSpec{NodeName: "node-1",
			Containers: []core.Container{labapp("app")}}},
		{ObjectMeta: meta.ObjectMeta{Name: "initialized", Namespace: "default"}, Spec: core.PodSpec{NodeName: "node-1",
			InitContainers: []core.Container{{Name: "prepare", Image: "kobune.local/busybox:1.35", ImagePullPolicy: core.PullNever,
				Command: []string{"sh", "-c", "date >> /work/runs"}}},
			Containers: []core.Container{{Name: "app", Image: "kobune.local/busybox:1.35", ImagePullPolicy: core.PullNever,
				Command: []string{"sleep", "3600"}, VolumeMounts: []core.VolumeMount{{Name: "work", MountPath: "/work"}}}},
			Volumes: []core.Volume{{Name: "work", VolumeSource: core.VolumeSource{EmptyDir: &core.EmptyDirVolumeSource{}}}}}},
		{ObjectMeta: meta.ObjectMeta{Name: "hostnet", Namespace: "default"}, Spec: core.PodSpec{NodeName: "node-1", HostNetwork: true,
			Containers: []core.Container{labapp("app", "--listen", ":18091")}}},
		{ObjectMeta: meta.ObjectMeta{Name: "once", Namespace: "default"}, Spec: core.PodSpec{NodeName: "node-1", RestartPolicy: never,
			Containers: []core.Container{labapp("app")}}},
	} {
		if p.Name == "initialized" {
			p.Spec.InitContainers[0].VolumeMounts = []core.VolumeMount{{Name: "work", MountPath: "/work"}}
		}
		if _, err := pods.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	before := map[string]*core.Pod{}
	for _, name := range []string{"web", "initialized", "hostnet", "once"} {
		before[name] = waitForPod(t, ctx, pods, name, 0, func(p *core.Pod, _ bool) bool {
			return p.Status.Phase == core.PodRunning && len(p.Status.ContainerStatuses) > 0 && p.Status.ContainerStatuses[0].Ready
		})
	}

	n.reboot(t, cidr)
	rebooted := time.Now()
	defer func() {
		if t.Failed() {
			for _, name := range []string{"web", "initialized", "hostnet", "once"} {
				out, _, _ := kobectl(ctx, srv.Addr(), "describe", "pod", name)
				t.Logf("%s", out)
			}
		}
	}()

	for _, name := range []string{"web", "initialized", "hostnet"} {
		was := before[name]
		p := waitForPod(t, ctx, pods, name, 0, func(p *core.Pod, _ bool) bool {
			if p.Status.Phase != core.PodRunning || len(p.Status.ContainerStatuses) == 0 {
				return false
			}
			c := p.Status.ContainerStatuses[0]
			if name == "hostnet" {
				// The machine's boot id tells a hostNetwork pod's lost
				// process from one never started; this simulation keeps the
				// host's boot, so the container is only made again (the VM
				// lab's reboot test and TestSandboxLost see the restart).
				return c.Ready && c.State.Running != nil && c.State.Running.StartedAt.After(was.Status.ContainerStatuses[0].State.Running.StartedAt.Time)
			}
			return c.Ready && c.RestartCount == was.Status.ContainerStatuses[0].RestartCount+1
		})
		t.Logf("%s Running and ready again %.1f s after the agent started again (IP %s, was %s)", name, time.Since(rebooted).Seconds(), p.Status.PodIP, was.Status.PodIP)
		last := p.Status.ContainerStatuses[0].LastState.Terminated
		if name != "hostnet" && (last == nil || last.Reason != "Unknown" || last.ExitCode != 255) {
			t.Errorf("%s: last state %+v; want terminated, reason Unknown, exit code 255 (the attempt lost with the reboot)", name, p.Status.ContainerStatuses[0].LastState)
		}
		if name == "hostnet" {
			if p.Status.PodIP != n.nodeIP {
				t.Errorf("hostnet: IP %s; want the node's %s", p.Status.PodIP, n.nodeIP)
			}
			continue
		}
		if p.Status.PodIP == "" {
			t.Errorf("%s has no IP after the reboot", name)
		}
	}

	// Serving again: the app from the node's network, and the init
	// container ran twice (its emptyDir is on disk and kept both lines).
	web, _ := pods.Get(ctx, "default", "web")
	for _, url := range []string{"http://" + web.Status.PodIP + ":8080/", "http://" + n.nodeIP + ":18091/"} {
		if out, err := n.exec(ctx, "timeout", "5", "busybox", "wget", "-q", "-O", "-", url); err != nil || !strings.Contains(out, "labapp 1.0") {
			t.Errorf("after the reboot %s answers %q (%v); want labapp", url, out, err)
		}
	}
	// The tmpfs volume (the projected ServiceAccount token) is there again.
	if out, errOut, code := kobectl(ctx, srv.Addr(), "exec", "initialized", "-c", "app", "--", "cat", "/var/run/secrets/kubernetes.io/serviceaccount/namespace"); code != 0 || out != "default" {
		t.Errorf("the ServiceAccount volume after the reboot: %q %s (exit %d); want the namespace file", out, errOut, code)
	}
	ini, _ := pods.Get(ctx, "default", "initialized")
	if len(ini.Status.InitContainerStatuses) != 1 || ini.Status.InitContainerStatuses[0].RestartCount != 1 {
		t.Errorf("init container after the reboot: %+v; want it run again (restart count 1)", ini.Status.InitContainerStatuses)
	}
	var out string
	for range 50 { // the exec endpoint comes with the pod's status; try a few times
		var code int
		if out, _, code = kobectl(ctx, srv.Addr(), "exec", "initialized", "--", "cat", "/work/runs"); code == 0 {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if lines := strings.Count(strings.TrimSpace(out), "\n") + 1; lines != 2 {
		t.Errorf("the init container's file after the reboot: %q; want two runs", out)
	}

	// restartPolicy Never: the running container was lost; the pod fails.
	once := waitForPod(t, ctx, pods, "once", 0, func(p *core.Pod, _ bool) bool { return p.Status.Phase == core.PodFailed })
	if term := once.Status.ContainerStatuses[0].State.Terminated; term == nil || term.Reason != "Unknown" {
		t.Errorf("once (restartPolicy Never) after the reboot: %+v; want terminated, reason Unknown", once.Status.ContainerStatuses[0].State)
	}
	// Its sandbox was not made again: no namespace, no address held.
	left, _ := network.AllocatedSandboxes(filepath.Join(n.dir, "agent", "cni"))
	if len(left) != 2 { // web and initialized
		t.Errorf("after the reboot the node holds %d pod addresses (%v); want 2 (web, initialized)", len(left), left)
	}
}

// reboot does to the node what a machine's reboot does, and starts its
// containerd and agent again, as the machine's systemd would.
func (n *node) reboot(t *testing.T, podCIDR string) {
	t.Helper()
	ids := strings.Fields(n.ctr("containers", "ls", "-q"))
	n.killAgent()
	// Power gone: containerd, its shims and every container process.
	_ = n.containerd.Process.Kill()
	_ = n.containerd.Wait()
	for _, pid := range shimsOf(n.socket()) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	uids := map[string]bool{}
	for _, id := range ids {
		if len(id) > 36 {
			uids[id[:36]] = true
		}
	}
	for uid := range uids {
		dirs, _ := filepath.Glob("/sys/fs/cgroup/*/kobune/*/pod" + uid)
		more, _ := filepath.Glob("/sys/fs/cgroup/kobune/*/pod" + uid)
		for _, d := range append(dirs, more...) {
			killCgroup(d)
		}
	}
	// /run is a tmpfs: containerd's state (its tasks, the rootfs mounts),
	// the pods' network namespaces; and the pods' tmpfs volumes.
	state := filepath.Join(n.dir, "containerd", "state")
	unmountUnder(state)
	if err := os.RemoveAll(state); err != nil {
		t.Fatal(err)
	}
	for _, id := range ids { // runc's state (its root is /run/containerd/runc on every node of this host)
		_ = os.RemoveAll(filepath.Join("/run/containerd/runc/kobune-e2e", id))
	}
	sandboxes, _ := network.AllocatedSandboxes(filepath.Join(n.dir, "agent", "cni"))
	for _, id := range sandboxes {
		if out, err := exec.Command("ip", "netns", "delete", network.NetnsName(id)).CombinedOutput(); err != nil {
			t.Fatalf("ip netns delete %s: %v %s", network.NetnsName(id), err, out)
		}
	}
	unmountUnder(filepath.Join(n.dir, "agent") + "/")
	// Boot: containerd, then the agent.
	_ = os.Remove(n.socket())
	n.runContainerd(t)
	n.startAgent(t, podCIDR)
}

// killCgroup SIGKILLs every process in a cgroup and below, then removes it.
func killCgroup(dir string) {
	_ = filepath.Walk(dir, func(path string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() || info.Name() != "cgroup.procs" {
			return nil
		}
		b, _ := os.ReadFile(path)
		for _, f := range strings.Fields(string(b)) {
			if pid, err := strconv.Atoi(f); err == nil {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		return nil
	})
	time.Sleep(200 * time.Millisecond)
	var dirs []string
	_ = filepath.Walk(dir, func(path string, info os.FileInfo, err error) error {
		if err == nil && info.IsDir() {
			dirs = append(dirs, path)
		}
		return nil
	})
	for i := len(dirs) - 1; i >= 0; i-- {
		_ = os.Remove(dirs[i])
	}
}
