package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/kobune/kobune/agent/network"
	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/apiserver"
	"github.com/kobune/kobune/apiserver/testserver"
	"github.com/kobune/kobune/client"
	"github.com/kobune/kobune/controller/controllermanager"
	"github.com/kobune/kobune/controller/serviceaccount"
	"github.com/kobune/kobune/ctl"
)

// node is one lab node for a test: a network namespace joined to the host
// by a veth pair, with its own containerd, and kobune-agent running inside.
type node struct {
	name, netns, nodeIP string
	dir                 string
	// kubeconfig and csiKubeconfig are the node's agent and CSI
	// provisioner identities (system:node:<name>, and its provisioner's).
	kubeconfig, csiKubeconfig string
	containerd                *exec.Cmd
	agent                     *exec.Cmd
	agentDone                 chan struct{}
	csi                       *exec.Cmd
	csiDone                   chan struct{}
}

// requireRoot skips the test, saying why, unless it can run for real.
func requireRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("end-to-end test needs root (network namespaces, containerd, CNI); run make test as root")
	}
	for _, bin := range []string{"containerd", "ctr", "runc", "ip", "nsenter", "/usr/lib/cni/bridge", "/bin/busybox"} {
		if _, err := exec.LookPath(bin); err != nil {
			t.Skipf("end-to-end test needs %s (apt-get install -y containerd runc containernetworking-plugins iproute2 busybox-static; .ci/run does this)", bin)
		}
	}
}

func run(t *testing.T, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// TestMain removes the binaries and images built for the run.
func TestMain(m *testing.M) {
	if os.Geteuid() == 0 {
		for _, r := range removeStaleRuns() {
			fmt.Fprintln(os.Stderr, "e2e: removed what an earlier run left:", r)
		}
	}
	code := m.Run()
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
	// The QoS parents the agents made; rmdir leaves any still in use.
	for _, pattern := range []string{"/sys/fs/cgroup/*/kobune/*", "/sys/fs/cgroup/kobune/*", "/sys/fs/cgroup/*/kobune", "/sys/fs/cgroup/kobune"} {
		dirs, _ := filepath.Glob(pattern)
		for _, d := range dirs {
			_ = os.Remove(d)
		}
	}
	os.Exit(code)
}

// built holds the agent binary and the test images, built once per run.
var built struct {
	dir           string
	agent, images string
	csi           string
	err           error
	done          bool
}

func buildArtifacts(t *testing.T) (agentBin, imagesDir string) {
	t.Helper()
	if !built.done {
		built.done = true
		dir, err := os.MkdirTemp("", "kobune-e2e-build")
		built.dir = dir
		if err != nil {
			built.err = err
		} else {
			built.agent, built.images = filepath.Join(dir, "kobune-agent"), filepath.Join(dir, "images")
			built.csi = filepath.Join(dir, "kobune-csi-local")
			root := repoRoot()
			for _, c := range [][]string{
				{"go", "build", "-o", built.agent, "./cmd/kobune-agent"},
				{"go", "build", "-o", built.csi, "./cmd/kobune-csi-local"},
				{"go", "run", "./deploy/images/build", "-out", built.images},
			} {
				cmd := exec.Command(c[0], c[1:]...)
				cmd.Dir = root
				if out, err := cmd.CombinedOutput(); err != nil {
					built.err = fmt.Errorf("%s: %v\n%s", strings.Join(c, " "), err, out)
					break
				}
			}
		}
	}
	if built.err != nil {
		t.Fatal(built.err)
	}
	return built.agent, built.images
}

func repoRoot() string {
	wd, _ := os.Getwd()
	return filepath.Join(wd, "..", "..")
}

// startCluster makes a lab on this host: a bridge with the API server on
// its host address, and nodes, each a network namespace attached to the
// bridge by a veth pair, with its own containerd. No namespace has a
// default route; the agents are started by startAgent.
func startCluster(t *testing.T, nodes int) (*testserver.Server, []*node) {
	t.Helper()
	id := os.Getpid() % 100000
	bridge := fmt.Sprintf("ke2e%d", id)
	hostIP := "172.31.250.1"
	run(t, "ip", "link", "add", bridge, "type", "bridge")
	t.Cleanup(func() { _ = exec.Command("ip", "link", "delete", bridge).Run() })
	run(t, "ip", "addr", "add", hostIP+"/24", "dev", bridge)
	run(t, "ip", "link", "set", bridge, "up")
	// Hosts with FORWARD policy DROP would drop node-to-node traffic on the bridge.
	accept := []string{"FORWARD", "-i", bridge, "-o", bridge, "-j", "ACCEPT"}
	if exec.Command("iptables", append([]string{"-I"}, accept...)...).Run() == nil {
		t.Cleanup(func() { _ = exec.Command("iptables", append([]string{"-D"}, accept...)...).Run() })
	}
	var ns []*node
	for i := range nodes {
		n := &node{
			name:   fmt.Sprintf("node-%d", i+1),
			netns:  fmt.Sprintf("kobune-e2e-%d-%d", id, i+1),
			nodeIP: fmt.Sprintf("172.31.250.%d", 11+i),
			dir:    t.TempDir(),
		}
		veth := fmt.Sprintf("ke2e%dn%d", id, i+1)
		run(t, "ip", "netns", "add", n.netns)
		t.Cleanup(func() { _ = exec.Command("ip", "netns", "delete", n.netns).Run() })
		run(t, "ip", "link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", n.netns)
		t.Cleanup(func() { _ = exec.Command("ip", "link", "delete", veth).Run() })
		run(t, "ip", "link", "set", veth, "master", bridge, "up")
		run(t, "ip", "-n", n.netns, "addr", "add", n.nodeIP+"/24", "dev", "eth0")
		run(t, "ip", "-n", n.netns, "link", "set", "eth0", "up")
		run(t, "ip", "-n", n.netns, "link", "set", "lo", "up")
		ns = append(ns, n)
	}
	// Secure as the lab: TLS, a certificate per component and node,
	// Node,RBAC (so every e2e test also checks the components' roles).
	var names []string
	for _, n := range ns {
		names = append(names, n.name)
	}
	srv, err := testserver.StartSecure(filepath.Join(ns[0].dir, "etcd"), testserver.StableAddrOn(hostIP), filepath.Join(ns[0].dir, "pki"), names, nil,
		func(c *apiserver.Config) { c.Logf = t.Logf })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	// After the agents have stopped (their cleanups run first) and before
	// the API server does: the network namespaces of the pods an agent was
	// still stopping when it was killed (a scale-down, an eviction at the
	// end of a test). A real agent removes them when it starts again;
	// these agents do not start again.
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		pods, _, err := client.For[*core.Pod](srv.Client).List(ctx, "", client.ListOptions{})
		if err != nil {
			return
		}
		for _, p := range pods {
			if len(p.UID) >= 12 && exec.Command("ip", "netns", "delete", network.NetnsName(p.UID[:12])).Run() == nil {
				t.Logf("removed the network namespace of pod %s/%s", p.Namespace, p.Name)
			}
		}
	})
	adminKubeconfigs.Store(srv.Addr(), srv.Kubeconfig("admin"))
	for _, n := range ns {
		n.kubeconfig, n.csiKubeconfig = srv.Kubeconfig("agent-"+n.name), srv.Kubeconfig("csi-"+n.name)
	}
	// Pods get a ServiceAccount token volume (ServiceAccount admission):
	// its ServiceAccount and the kube-root-ca.crt ConfigMap come from these
	// two controllers, which run even where a test runs no other.
	ids, err := controllermanager.New(componentClient(t, srv, "controller"), controllermanager.Config{RootCAFile: filepath.Join(srv.PKIDir, "ca.crt"),
		Only: []string{serviceaccount.Name, serviceaccount.PublisherName}})
	if err != nil {
		t.Fatal(err)
	}
	idsCtx, stopIDs := context.WithCancel(context.Background())
	t.Cleanup(stopIDs)
	go ids.Run(idsCtx)
	for _, n := range ns {
		n.startContainerd(t)
		t.Cleanup(func() { n.removeLeftovers(t) })
	}
	return srv, ns
}

// removeLeftovers kills and removes whatever a failed (or unfinished) test
// left running in its containerd (shims outlive containerd), then the
// pods' network namespaces and cgroups. It runs after the agent has stopped
// and before containerd stops, and needs no API server.
func (n *node) removeLeftovers(t *testing.T) {
	ctr := n.ctr
	uids := map[string]bool{}
	for _, id := range strings.Fields(ctr("containers", "ls", "-q")) {
		if len(id) > 36 {
			uids[id[:36]] = true // container IDs are <pod uid>-<name>
		}
		ctr("tasks", "kill", "-s", "SIGKILL", id)
		ctr("tasks", "rm", "-f", id)
		ctr("containers", "rm", id)
		t.Logf("removed leftover container %s", id)
	}
	// Sandboxes without containers (a pod whose first container never
	// started) hold an address in the node's CNI allocations.
	sandboxes, _ := network.AllocatedSandboxes(filepath.Join(n.dir, "agent", "cni"))
	for _, id := range sandboxes {
		if err := exec.Command("ip", "netns", "delete", network.NetnsName(id)).Run(); err == nil {
			t.Logf("removed leftover pod network namespace %s", network.NetnsName(id))
		}
	}
	// The pods' tmpfs volumes (secrets, projected, Memory emptyDirs): the
	// agent shares the host's mount namespace.
	unmountUnder(filepath.Join(n.dir, "agent") + "/")
	for uid := range uids {
		_ = exec.Command("ip", "netns", "delete", "kobune-"+uid[:12]).Run()
		dirs, _ := filepath.Glob("/sys/fs/cgroup/*/kobune/*/pod" + uid)
		more, _ := filepath.Glob("/sys/fs/cgroup/kobune/*/pod" + uid)
		for _, d := range append(dirs, more...) {
			_ = os.Remove(d)
		}
	}
}

// ctr runs containerd's ctr on the node's containerd, in the agents'
// namespace, and returns what it printed (errors included).
func (n *node) ctr(args ...string) string {
	out, _ := exec.Command("ctr", append([]string{"-a", n.socket(), "-n", "kobune-e2e"}, args...)...).CombinedOutput()
	return string(out)
}

func (n *node) socket() string { return filepath.Join(n.dir, "containerd.sock") }

func (n *node) startContainerd(t *testing.T) {
	t.Helper()
	root := filepath.Join(n.dir, "containerd")
	n.runContainerd(t)
	t.Cleanup(func() {
		_ = n.containerd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = n.containerd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = n.containerd.Process.Kill()
			<-done
		}
		// Shims outlive their containerd. removeLeftovers deleted every
		// task containerd still knew; a shim it had lost (an agent killed
		// inside a task's delete) would run on, without a container.
		for _, pid := range shimsOf(n.socket()) {
			if syscall.Kill(pid, syscall.SIGKILL) == nil {
				t.Logf("killed leftover containerd shim %d", pid)
			}
		}
		unmountUnder(root)
	})
}

// runContainerd starts the node's containerd (again, after a reboot) and
// waits for its socket; startContainerd's clean-up stops the one running.
func (n *node) runContainerd(t *testing.T) {
	t.Helper()
	root := filepath.Join(n.dir, "containerd")
	n.containerd = exec.Command("containerd", "--root", filepath.Join(root, "root"), "--state", filepath.Join(root, "state"),
		"--address", n.socket(), "--log-level", "warn")
	logf, _ := os.OpenFile(filepath.Join(n.dir, "containerd.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	n.containerd.Stdout, n.containerd.Stderr = logf, logf
	if err := n.containerd.Start(); err != nil {
		t.Fatal(err)
	}
	logf.Close() // the child has its own descriptor
	deadline := time.Now().Add(20 * time.Second)
	for {
		if _, err := os.Stat(n.socket()); err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("containerd did not create its socket within 20s")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// shimsOf lists the containerd shims serving the containerd at socket.
func shimsOf(socket string) []int {
	var pids []int
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, f := range procs {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		args := strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
		if !strings.Contains(args[0], "containerd-shim") {
			continue
		}
		for i, a := range args[:len(args)-1] {
			if a == "-address" && args[i+1] == socket {
				if pid, err := strconv.Atoi(strings.Split(f, "/")[2]); err == nil {
					pids = append(pids, pid)
				}
			}
		}
	}
	return pids
}

// startAgent runs kobune-agent inside the node's network namespace. It
// enters only the network namespace (nsenter --net), not a private mount
// namespace as `ip netns exec` would: the pod namespaces it creates under
// /run/netns must be visible to containerd and runc on the host.
func (n *node) startAgent(t *testing.T, podCIDR string, extra ...string) {
	t.Helper()
	agentBin, images := buildArtifacts(t)
	n.agent = exec.Command("nsenter", append([]string{"--net=/run/netns/" + n.netns, agentBin,
		"--kubeconfig", n.kubeconfig, "--node-name", n.name,
		"--tls-cert-file", n.pki("agent-" + n.name + "-serving.crt"), "--tls-private-key-file", n.pki("agent-" + n.name + "-serving.key"), "--client-ca-file", n.pki("ca.crt"), "--node-ip", n.nodeIP, "--runtime", "containerd",
		"--containerd", n.socket(), "--containerd-namespace", "kobune-e2e", "--state-dir", filepath.Join(n.dir, "agent"),
		"--pod-cidr", podCIDR, "--load-images", images, "--lease-interval", "1s",
		"--crashloop-backoff-base", "1s", "--crashloop-backoff-max", "4s"}, extra...)...)
	logf, _ := os.OpenFile(filepath.Join(n.dir, "agent.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	n.agent.Stdout, n.agent.Stderr = logf, logf
	if err := n.agent.Start(); err != nil {
		t.Fatal(err)
	}
	agent := n.agent
	done := make(chan struct{})
	go func() { _ = agent.Wait(); logf.Close(); close(done) }()
	n.agentDone = done
	t.Cleanup(func() {
		_ = agent.Process.Signal(syscall.SIGTERM)
		<-done
		if t.Failed() {
			b, _ := os.ReadFile(filepath.Join(n.dir, "agent.log"))
			t.Logf("agent log:\n%s", b)
		}
	})
}

// pki is a file of the cluster's PKI (beside the node's kubeconfig).
func (n *node) pki(file string) string { return filepath.Join(filepath.Dir(n.kubeconfig), file) }

// csiDataDir is where the node's kobune-csi-local makes its volumes.
func (n *node) csiDataDir() string { return filepath.Join(n.dir, "csi-local") }

// startCSI runs kobune-csi-local (driver and provisioner) in the node's
// network namespace, its socket where the agent looks.
func (n *node) startCSI(t *testing.T) {
	t.Helper()
	buildArtifacts(t)
	n.csi = exec.Command("nsenter", "--net=/run/netns/"+n.netns, built.csi, "--node-id", n.name, "--kubeconfig", n.csiKubeconfig,
		"--data-dir", n.csiDataDir(), "--endpoint", filepath.Join(n.dir, "agent", "plugins", "localpath.csi.kobune.io", "csi.sock"))
	logf, _ := os.OpenFile(filepath.Join(n.dir, "csi.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	n.csi.Stdout, n.csi.Stderr = logf, logf
	if err := n.csi.Start(); err != nil {
		t.Fatal(err)
	}
	cmd, done := n.csi, make(chan struct{})
	go func() { _ = cmd.Wait(); logf.Close(); close(done) }()
	n.csiDone = done
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		<-done
		if t.Failed() {
			b, _ := os.ReadFile(filepath.Join(n.dir, "csi.log"))
			t.Logf("%s kobune-csi-local log:\n%s", n.name, b)
		}
	})
}

// killAgent kills the agent with SIGKILL, as a crash would.
func (n *node) killAgent() {
	_ = n.agent.Process.Kill()
	<-n.agentDone
}

// exec runs a command inside the node's network namespace (never on the host).
func (n *node) exec(ctx context.Context, args ...string) (string, error) {
	out, err := exec.CommandContext(ctx, "ip", append([]string{"netns", "exec", n.netns}, args...)...).CombinedOutput()
	return string(out), err
}

// unmountUnder unmounts whatever containerd left mounted below dir.
func unmountUnder(dir string) {
	b, err := os.ReadFile("/proc/self/mounts")
	if err != nil {
		return
	}
	lines := strings.Split(string(b), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		f := strings.Fields(lines[i])
		if len(f) > 1 && strings.HasPrefix(f[1], dir) {
			_ = syscall.Unmount(f[1], syscall.MNT_DETACH)
		}
	}
}

// startWithControllers is a cluster of len(podCIDRs) nodes, each with its
// agent, plus kobune-controller's controllers in the test process, and a
// context that ends after timeout (or with the test).
func startWithControllers(t *testing.T, timeout time.Duration, podCIDRs ...string) (*testserver.Server, []*node, context.Context) {
	t.Helper()
	return startWithControllerConfig(t, timeout, controllermanager.Config{}, podCIDRs...)
}

// startWithControllerConfig is startWithControllers with the controllers
// tuned by cfg.
func startWithControllerConfig(t *testing.T, timeout time.Duration, cfg controllermanager.Config, podCIDRs ...string) (*testserver.Server, []*node, context.Context) {
	t.Helper()
	srv, nodes := startCluster(t, len(podCIDRs))
	for i, cidr := range podCIDRs {
		nodes[i].startAgent(t, cidr)
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	t.Cleanup(cancel)
	cfg.RootCAFile = filepath.Join(srv.PKIDir, "ca.crt")
	m, err := controllermanager.New(componentClient(t, srv, "controller"), cfg)
	if err != nil {
		t.Fatal(err)
	}
	go m.Run(ctx)
	return srv, nodes, ctx
}

// componentClient connects as one of the PKI's identities ("scheduler",
// "controller"), so the components run with their own least-privilege
// roles, as in the lab.
func componentClient(t *testing.T, srv *testserver.Server, name string) *client.Client {
	t.Helper()
	c, err := client.Dial("", srv.Kubeconfig(name))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// adminKubeconfigs: API server address → its admin kubeconfig.
var adminKubeconfigs sync.Map

// kobectlArgs are the flags that make kobectl talk to the API server at
// addr as its admin.
func kobectlArgs(addr string) []string {
	if k, ok := adminKubeconfigs.Load(addr); ok {
		return []string{"--kubeconfig", k.(string)}
	}
	return []string{"--server", addr}
}

// kobectl runs kobectl against the API server at addr, with no input,
// and returns what it printed and its exit status.
func kobectl(ctx context.Context, addr string, args ...string) (stdout, stderr string, code int) {
	var out, errOut bytes.Buffer
	code = ctl.RunContext(ctx, append(kobectlArgs(addr), args...), strings.NewReader(""), &out, &errOut)
	return out.String(), errOut.String(), code
}
