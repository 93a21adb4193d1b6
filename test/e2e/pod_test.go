package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/api/resource"
	"github.com/kobune/kobune/client"
	"github.com/kobune/kobune/ctl"
)

// TestPodRunsOnContainerd: a pod bound to the node runs on containerd with
// an IP from the node's pod CIDR, answers HTTP with its own name as
// hostname, and is stopped and removed when deleted.
func TestPodRunsOnContainerd(t *testing.T) {
	requireRoot(t)
	srv, nodes := startCluster(t, 1)
	n := nodes[0]
	n.startAgent(t, "10.244.77.0/24")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	pods := client.For[*core.Pod](srv.Client)

	pod := &core.Pod{ObjectMeta: meta.ObjectMeta{Name: "web", Namespace: "default"}, Spec: core.PodSpec{
		NodeName:       "node-1",
		InitContainers: []core.Container{{Name: "setup", Image: "kobune.local/busybox:1.35", Command: []string{"sh", "-c", "echo init done"}}},
		Containers: []core.Container{{Name: "app", Image: "kobune.local/labapp:1.0", ImagePullPolicy: core.PullNever,
			Env: []core.EnvVar{{Name: "MY_POD", ValueFrom: &core.EnvVarSource{FieldRef: &core.ObjectFieldSelector{FieldPath: "metadata.name"}}}}}},
	}}
	created, err := pods.Create(ctx, pod)
	if err != nil {
		t.Fatal(err)
	}
	running := waitForPod(t, ctx, pods, "web", 0, func(p *core.Pod, _ bool) bool { return p.Status.Phase == core.PodRunning })
	ip := running.Status.PodIP
	if !strings.HasPrefix(ip, "10.244.77.") {
		t.Fatalf("pod IP %q is not from the node's pod CIDR 10.244.77.0/24", ip)
	}
	if len(running.Status.InitContainerStatuses) != 1 || running.Status.InitContainerStatuses[0].State.Terminated == nil {
		t.Errorf("init container status: %+v", running.Status.InitContainerStatuses)
	}

	// From inside the node's namespace (never from the host), ask the pod.
	var body string
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		hctx, hcancel := context.WithTimeout(ctx, 3*time.Second)
		body, err = n.exec(hctx, "timeout", "2", "busybox", "wget", "-q", "-O", "-", "http://"+ip+":8080/")
		hcancel()
		if err == nil {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if !strings.Contains(body, "labapp 1.0 on web") {
		t.Fatalf("GET http://%s:8080/ from the node = %q (%v); want the pod's name as hostname", ip, body, err)
	}

	if err := pods.Delete(ctx, "default", "web", client.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitForPod(t, ctx, pods, "web", client.ResourceVersion(created), func(_ *core.Pod, deleted bool) bool { return deleted })
	if _, err := os.Stat("/run/netns/kobune-" + created.UID[:12]); !os.IsNotExist(err) {
		t.Errorf("the pod's network namespace is still there after deletion (%v)", err)
	}
}

func waitForPod(t *testing.T, ctx context.Context, pods *client.Typed[*core.Pod], name string, from int64, cond func(*core.Pod, bool) bool) *core.Pod {
	t.Helper()
	wctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	p, err := client.WaitFor(wctx, pods, "default", name, from, cond)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestPodsReachEachOtherAcrossNodes: each agent routes the other node's pod
// CIDR to that node (host-gateway); a pod on node-2 answers a request sent
// from inside node-1's namespace.
func TestPodsReachEachOtherAcrossNodes(t *testing.T) {
	requireRoot(t)
	srv, nodes := startCluster(t, 2)
	nodes[0].startAgent(t, "10.244.81.0/24")
	nodes[1].startAgent(t, "10.244.82.0/24")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	pods := client.For[*core.Pod](srv.Client)
	pod := &core.Pod{ObjectMeta: meta.ObjectMeta{Name: "far", Namespace: "default"}, Spec: core.PodSpec{
		NodeName:   "node-2",
		Containers: []core.Container{{Name: "app", Image: "kobune.local/labapp:2.0", ImagePullPolicy: core.PullNever}},
	}}
	if _, err := pods.Create(ctx, pod); err != nil {
		t.Fatal(err)
	}
	running := waitForPod(t, ctx, pods, "far", 0, func(p *core.Pod, _ bool) bool { return p.Status.Phase == core.PodRunning })
	url := "http://" + running.Status.PodIP + ":8080/"
	var body string
	var err error
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		hctx, hcancel := context.WithTimeout(ctx, 3*time.Second)
		body, err = nodes[0].exec(hctx, "timeout", "2", "busybox", "wget", "-q", "-O", "-", url)
		hcancel()
		if err == nil {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if !strings.Contains(body, "labapp 2.0 on far") {
		routes, _ := nodes[0].exec(ctx, "ip", "route")
		t.Fatalf("GET %s from node-1 = %q (%v); node-1 routes:\n%s", url, body, err, routes)
	}
}

// TestRestartPolicies: a crashing container under Always is restarted with
// a growing back-off (CrashLoopBackOff) and keeps its last exit; under
// Never the pod ends Succeeded or Failed by its exit code.
func TestRestartPolicies(t *testing.T) {
	requireRoot(t)
	srv, nodes := startCluster(t, 1)
	nodes[0].startAgent(t, "10.244.83.0/24")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	pods := client.For[*core.Pod](srv.Client)
	mk := func(name string, policy core.RestartPolicy, code string) {
		p := &core.Pod{ObjectMeta: meta.ObjectMeta{Name: name, Namespace: "default"}, Spec: core.PodSpec{
			NodeName: "node-1", RestartPolicy: policy,
			Containers: []core.Container{{Name: "app", Image: "kobune.local/labapp:1.0", ImagePullPolicy: core.PullNever,
				Args: []string{"--exit-code", code, "--exit-after", "300ms"}}},
		}}
		if _, err := pods.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	mk("crasher", core.RestartPolicyAlways, "3")
	mk("done", core.RestartPolicyNever, "0")
	mk("broken", core.RestartPolicyNever, "4")

	crashing := waitForPod(t, ctx, pods, "crasher", 0, func(p *core.Pod, _ bool) bool {
		if len(p.Status.ContainerStatuses) == 0 {
			return false
		}
		cs := p.Status.ContainerStatuses[0]
		return cs.RestartCount >= 2 && cs.State.Waiting != nil && cs.State.Waiting.Reason == "CrashLoopBackOff"
	})
	last := crashing.Status.ContainerStatuses[0].LastState.Terminated
	if last == nil || last.ExitCode != 3 || last.Reason != "Error" {
		t.Errorf("lastState of the crashing container: %+v, want exit code 3, reason Error", last)
	}
	if crashing.Status.Phase != core.PodRunning {
		t.Errorf("phase during CrashLoopBackOff = %s, want Running", crashing.Status.Phase)
	}
	waitForPod(t, ctx, pods, "done", 0, func(p *core.Pod, _ bool) bool { return p.Status.Phase == core.PodSucceeded })
	failed := waitForPod(t, ctx, pods, "broken", 0, func(p *core.Pod, _ bool) bool { return p.Status.Phase == core.PodFailed })
	if term := failed.Status.ContainerStatuses[0].State.Terminated; term == nil || term.ExitCode != 4 || failed.Status.ContainerStatuses[0].RestartCount != 0 {
		t.Errorf("failed pod's container: %+v", failed.Status.ContainerStatuses[0])
	}
}

// TestResourcesBecomeCgroups: requests and limits become cgroup settings
// under a parent per QoS class; a container over its memory limit is
// OOMKilled; the pod's cgroup goes with the pod.
func TestResourcesBecomeCgroups(t *testing.T) {
	requireRoot(t)
	srv, nodes := startCluster(t, 1)
	nodes[0].startAgent(t, "10.244.84.0/24")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	pods := client.For[*core.Pod](srv.Client)
	limits := resource.List{resource.CPU: resource.MustParse("500m"), resource.Memory: resource.MustParse("64Mi")}
	p := &core.Pod{ObjectMeta: meta.ObjectMeta{Name: "sized", Namespace: "default"}, Spec: core.PodSpec{
		NodeName:   "node-1",
		Containers: []core.Container{{Name: "app", Image: "kobune.local/labapp:1.0", ImagePullPolicy: core.PullNever, Resources: core.ResourceRequirements{Limits: limits}}},
	}}
	created, err := pods.Create(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	running := waitForPod(t, ctx, pods, "sized", 0, func(p *core.Pod, _ bool) bool { return p.Status.Phase == core.PodRunning })
	if running.Status.QOSClass != core.QOSGuaranteed {
		t.Errorf("qosClass = %s, want Guaranteed", running.Status.QOSClass)
	}
	podDir := "/kobune/guaranteed/pod" + created.UID
	ctrDir := podDir + "/" + created.UID + "-app"
	read := func(parts ...string) string {
		b, err := os.ReadFile(filepath.Join(append([]string{"/sys/fs/cgroup"}, parts...)...))
		if err != nil {
			t.Errorf("read cgroup file: %v", err)
		}
		return strings.TrimSpace(string(b))
	}
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err == nil { // cgroup v2
		if got := read(ctrDir, "memory.max"); got != "67108864" {
			t.Errorf("memory.max = %s, want 67108864", got)
		}
		if got := read(ctrDir, "cpu.max"); got != "50000 100000" {
			t.Errorf("cpu.max = %s, want 50000 100000", got)
		}
	} else {
		if got := read("memory", ctrDir, "memory.limit_in_bytes"); got != "67108864" {
			t.Errorf("memory.limit_in_bytes = %s, want 67108864", got)
		}
		if got := read("cpu", ctrDir, "cpu.cfs_quota_us"); got != "50000" {
			t.Errorf("cpu.cfs_quota_us = %s, want 50000", got)
		}
		if got := read("cpu", ctrDir, "cpu.shares"); got != "512" {
			t.Errorf("cpu.shares = %s, want 512 (requests default to limits)", got)
		}
	}
	// Issue #10 defect 11: the pod's own cgroup carries the sums of its
	// containers' requests and limits, as the kubelet sets it (it had
	// runc's defaults: 1024 shares, no quota, no memory limit).
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err == nil {
		if got := read(podDir, "memory.max"); got != "67108864" {
			t.Errorf("pod memory.max = %s, want 67108864", got)
		}
		if got := read(podDir, "cpu.max"); got != "50000 100000" {
			t.Errorf("pod cpu.max = %s, want 50000 100000", got)
		}
	} else {
		for file, want := range map[string]string{"memory/memory.limit_in_bytes": "67108864", "cpu/cpu.cfs_quota_us": "50000", "cpu/cpu.shares": "512"} {
			h, name, _ := strings.Cut(file, "/")
			if got := read(h, podDir, name); got != want {
				t.Errorf("pod cgroup %s = %s, want %s", file, got, want)
			}
		}
	}

	hog := &core.Pod{ObjectMeta: meta.ObjectMeta{Name: "hog", Namespace: "default"}, Spec: core.PodSpec{
		NodeName: "node-1",
		Containers: []core.Container{{Name: "app", Image: "kobune.local/labapp:1.0", ImagePullPolicy: core.PullNever,
			Args:      []string{"--alloc-mb", "256"},
			Resources: core.ResourceRequirements{Limits: resource.List{resource.Memory: resource.MustParse("32Mi")}}}},
	}}
	if _, err := pods.Create(ctx, hog); err != nil {
		t.Fatal(err)
	}
	dead := waitForPod(t, ctx, pods, "hog", 0, func(p *core.Pod, _ bool) bool {
		return len(p.Status.ContainerStatuses) > 0 && p.Status.ContainerStatuses[0].LastState.Terminated != nil
	})
	if last := dead.Status.ContainerStatuses[0].LastState.Terminated; last.Reason != "OOMKilled" || last.ExitCode != 137 {
		t.Errorf("memory hog's lastState %+v, want OOMKilled with exit code 137", last)
	}

	if err := pods.Delete(ctx, "default", "sized", client.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitForPod(t, ctx, pods, "sized", client.ResourceVersion(running), func(_ *core.Pod, deleted bool) bool { return deleted })
	for _, hierarchy := range []string{"memory", "cpu", ""} {
		if _, err := os.Stat(filepath.Join("/sys/fs/cgroup", hierarchy, podDir)); err == nil {
			t.Errorf("pod cgroup %s left behind in %q", podDir, hierarchy)
		}
	}
}

// TestProbes: readiness drives Ready (switched off and on through labapp),
// exec probes run in the container, and a failing liveness probe restarts
// the container.
func TestProbes(t *testing.T) {
	requireRoot(t)
	srv, nodes := startCluster(t, 1)
	n := nodes[0]
	n.startAgent(t, "10.244.85.0/24")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	pods := client.For[*core.Pod](srv.Client)
	for _, p := range []*core.Pod{
		{ObjectMeta: meta.ObjectMeta{Name: "probed", Namespace: "default"}, Spec: core.PodSpec{NodeName: "node-1",
			Containers: []core.Container{{Name: "app", Image: "kobune.local/labapp:1.0", ImagePullPolicy: core.PullNever,
				Ports:          []core.ContainerPort{{Name: "http", ContainerPort: 8080}},
				StartupProbe:   &core.Probe{ProbeHandler: core.ProbeHandler{HTTPGet: &core.HTTPGetAction{Path: "/healthz", Port: meta.FromString("http")}}, PeriodSeconds: 1, FailureThreshold: 30},
				ReadinessProbe: httpProbe("/readyz"),
				LivenessProbe:  &core.Probe{ProbeHandler: core.ProbeHandler{TCPSocket: &core.TCPSocketAction{Port: meta.FromInt(8080)}}, PeriodSeconds: 1}}}}},
		{ObjectMeta: meta.ObjectMeta{Name: "shell", Namespace: "default"}, Spec: core.PodSpec{NodeName: "node-1",
			Containers: []core.Container{{Name: "sh", Image: "kobune.local/busybox:1.35", ImagePullPolicy: core.PullNever,
				// cat writes what it reads: an exec probe's command needs
				// a stdout (it failed with "exit 1" when it had none).
				Command:        []string{"sh", "-c", "echo ok > /tmp/ok; exec sleep 3600"},
				ReadinessProbe: &core.Probe{ProbeHandler: core.ProbeHandler{Exec: &core.ExecAction{Command: []string{"cat", "/tmp/ok"}}}, PeriodSeconds: 1}}}}},
		{ObjectMeta: meta.ObjectMeta{Name: "unhealthy", Namespace: "default"}, Spec: core.PodSpec{NodeName: "node-1",
			Containers: []core.Container{{Name: "app", Image: "kobune.local/labapp:1.0", ImagePullPolicy: core.PullNever,
				LivenessProbe: &core.Probe{ProbeHandler: core.ProbeHandler{TCPSocket: &core.TCPSocketAction{Port: meta.FromInt(9999)}}, PeriodSeconds: 1, FailureThreshold: 2}}}}},
	} {
		if _, err := pods.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	ready := func(want bool) func(*core.Pod, bool) bool {
		return func(p *core.Pod, _ bool) bool {
			for _, c := range p.Status.Conditions {
				if c.Type == core.PodReady {
					return (c.Status == meta.ConditionTrue) == want
				}
			}
			return false
		}
	}
	probed := waitForPod(t, ctx, pods, "probed", 0, ready(true))
	waitForPod(t, ctx, pods, "shell", 0, ready(true))
	post := func(path string) {
		if out, err := n.exec(ctx, "timeout", "3", "busybox", "wget", "-q", "-O", "-", "--post-data", "", "http://"+probed.Status.PodIP+":8080"+path); err != nil {
			t.Fatalf("POST %s: %v %s", path, err, out)
		}
	}
	post("/readyz/off")
	notReady := waitForPod(t, ctx, pods, "probed", client.ResourceVersion(probed), ready(false))
	if cs := notReady.Status.ContainerStatuses[0]; cs.Ready || cs.State.Running == nil || cs.RestartCount != 0 {
		t.Errorf("after /readyz/off the container should be running, not ready, not restarted: %+v", cs)
	}
	post("/readyz/on")
	waitForPod(t, ctx, pods, "probed", client.ResourceVersion(notReady), ready(true))
	waitForPod(t, ctx, pods, "unhealthy", 0, func(p *core.Pod, _ bool) bool {
		return len(p.Status.ContainerStatuses) > 0 && p.Status.ContainerStatuses[0].RestartCount >= 1
	})
}

// TestAgentRestartAndControlPlaneOutage: a killed and restarted agent adopts
// its running containers without restarting them; with the API server down,
// pods keep running and a crashing container is still restarted locally.
func TestAgentRestartAndControlPlaneOutage(t *testing.T) {
	requireRoot(t)
	srv, nodes := startCluster(t, 1)
	n := nodes[0]
	n.startAgent(t, "10.244.87.0/24")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	pods := client.For[*core.Pod](srv.Client)
	for _, p := range []*core.Pod{
		{ObjectMeta: meta.ObjectMeta{Name: "steady", Namespace: "default"}, Spec: core.PodSpec{NodeName: "node-1",
			Containers: []core.Container{{Name: "app", Image: "kobune.local/labapp:1.0", ImagePullPolicy: core.PullNever}}}},
		{ObjectMeta: meta.ObjectMeta{Name: "crasher", Namespace: "default"}, Spec: core.PodSpec{NodeName: "node-1",
			Containers: []core.Container{{Name: "app", Image: "kobune.local/labapp:1.0", ImagePullPolicy: core.PullNever,
				Args: []string{"--exit-code", "1", "--exit-after", "200ms"}}}}},
	} {
		if _, err := pods.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	steady := waitForPod(t, ctx, pods, "steady", 0, func(p *core.Pod, _ bool) bool { return p.Status.Phase == core.PodRunning })
	crasher := waitForPod(t, ctx, pods, "crasher", 0, func(p *core.Pod, _ bool) bool {
		return len(p.Status.ContainerStatuses) > 0 && p.Status.ContainerStatuses[0].RestartCount >= 1
	})

	// The agent dies and comes back: the steady container is not restarted.
	n.killAgent()
	n.startAgent(t, "10.244.87.0/24")
	time.Sleep(2 * time.Second) // time for the new agent to look (and, wrongly, restart)
	again, err := pods.Get(ctx, "default", "steady")
	if err != nil {
		t.Fatal(err)
	}
	before, after := steady.Status.ContainerStatuses[0], again.Status.ContainerStatuses[0]
	if after.RestartCount != 0 || after.State.Running == nil || !after.State.Running.StartedAt.Equal(before.State.Running.StartedAt.Time) || again.Status.PodIP != steady.Status.PodIP {
		t.Errorf("after the agent restart the steady pod changed: before %+v, after %+v", before, after)
	}

	// The whole control plane goes away: restarts go on, from containerd's own records.
	restarts := func() int {
		out, _ := exec.Command("ctr", "-a", n.socket(), "-n", "kobune-e2e", "containers", "info", crasher.UID+"-app").Output()
		i := strings.Index(string(out), `"kobune.io/restarts": "`)
		if i < 0 {
			return -1
		}
		var r int
		fmt.Sscanf(string(out)[i+len(`"kobune.io/restarts": "`):], "%d", &r)
		return r
	}
	srv.Stop()
	start := restarts()
	time.Sleep(60 * time.Second) // the whole control plane stays down for a minute
	if got := restarts(); got < start+2 {
		t.Errorf("with the API server down the crashing container went from %d to %d restarts; want local restarts to go on", start, got)
	}
	if out, err := n.exec(ctx, "timeout", "3", "busybox", "wget", "-q", "-O", "-", "http://"+steady.Status.PodIP+":8080/"); err != nil || !strings.Contains(out, "labapp 1.0 on steady") {
		t.Errorf("the steady pod stopped serving while the API server was down: %q %v", out, err)
	}
	srv2, err := srv.Again()
	if err != nil {
		t.Fatal(err)
	}
	defer srv2.Stop()
	pods2 := client.For[*core.Pod](srv2.Client)
	waitForPod(t, ctx, pods2, "crasher", 0, func(p *core.Pod, _ bool) bool {
		return p.Status.ContainerStatuses[0].RestartCount >= int32(start+2)
	})
	if s, err := pods2.Get(ctx, "default", "steady"); err != nil || s.Status.ContainerStatuses[0].RestartCount != 0 || s.Status.Phase != core.PodRunning {
		t.Errorf("steady pod after the outage: %v %+v", err, s.Status.ContainerStatuses)
	}
}

// TestGracefulTermination: a container that handles SIGTERM goes as soon as
// it exits; one that ignores SIGTERM is killed when its grace period ends.
func TestGracefulTermination(t *testing.T) {
	requireRoot(t)
	srv, nodes := startCluster(t, 1)
	nodes[0].startAgent(t, "10.244.88.0/24")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	pods := client.For[*core.Pod](srv.Client)
	grace := int64(3)
	mk := func(name string, args ...string) *core.Pod {
		p := &core.Pod{ObjectMeta: meta.ObjectMeta{Name: name, Namespace: "default"}, Spec: core.PodSpec{NodeName: "node-1",
			TerminationGracePeriodSeconds: &grace,
			Containers:                    []core.Container{{Name: "app", Image: "kobune.local/labapp:1.0", ImagePullPolicy: core.PullNever, Args: args}}}}
		if _, err := pods.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
		return waitForPod(t, ctx, pods, name, 0, func(p *core.Pod, _ bool) bool { return p.Status.Phase == core.PodRunning })
	}
	polite := mk("polite")
	stubborn := mk("stubborn", "--term-delay", "60s") // keeps running for 60 s after SIGTERM
	deleteAndTime := func(p *core.Pod) time.Duration {
		start := time.Now()
		if err := pods.Delete(ctx, "default", p.Name, client.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		waitForPod(t, ctx, pods, p.Name, client.ResourceVersion(p), func(_ *core.Pod, deleted bool) bool { return deleted })
		return time.Since(start)
	}
	if d := deleteAndTime(polite); d >= 3*time.Second {
		t.Errorf("a container that exits on SIGTERM took %v to go; want less than its 3 s grace period", d)
	}
	if d := deleteAndTime(stubborn); d < 3*time.Second || d > 20*time.Second {
		t.Errorf("a container ignoring SIGTERM went after %v; want it killed when its 3 s grace period ends", d)
	}
}

// TestContainersShareLocalhost: two containers of one pod share its network
// namespace: the sidecar reaches the app on 127.0.0.1.
func TestContainersShareLocalhost(t *testing.T) {
	requireRoot(t)
	srv, nodes := startCluster(t, 1)
	nodes[0].startAgent(t, "10.244.89.0/24")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	pods := client.For[*core.Pod](srv.Client)
	p := &core.Pod{ObjectMeta: meta.ObjectMeta{Name: "pair", Namespace: "default"}, Spec: core.PodSpec{NodeName: "node-1",
		Containers: []core.Container{
			{Name: "app", Image: "kobune.local/labapp:1.0", ImagePullPolicy: core.PullNever},
			{Name: "sidecar", Image: "kobune.local/busybox:1.35", ImagePullPolicy: core.PullNever, Command: []string{"sleep", "3600"}},
		}}}
	if _, err := pods.Create(ctx, p); err != nil {
		t.Fatal(err)
	}
	waitForPod(t, ctx, pods, "pair", 0, func(p *core.Pod, _ bool) bool {
		return p.Status.Phase == core.PodRunning && len(p.Status.ContainerStatuses) == 2
	})
	var out, errOut bytes.Buffer
	deadline := time.Now().Add(20 * time.Second)
	code := -1
	for time.Now().Before(deadline) {
		out.Reset()
		errOut.Reset()
		code = ctl.RunContext(ctx, append(kobectlArgs(srv.Addr()), "exec", "pair", "-c", "sidecar", "--", "wget", "-q", "-O", "-", "http://127.0.0.1:8080/"), nil, &out, &errOut)
		if code == 0 {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if code != 0 || !strings.Contains(out.String(), "labapp 1.0 on pair") {
		t.Errorf("sidecar GET http://127.0.0.1:8080/ = %q (%s, exit %d)", out.String(), errOut.String(), code)
	}
}

// TestImageNeverPullAndHostPort: a missing image with pull policy Never
// shows ErrImageNeverPull; a hostPort is reachable on the node's address
// from another node.
func TestImageNeverPullAndHostPort(t *testing.T) {
	requireRoot(t)
	srv, nodes := startCluster(t, 2)
	nodes[0].startAgent(t, "10.244.91.0/24")
	nodes[1].startAgent(t, "10.244.92.0/24")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	pods := client.For[*core.Pod](srv.Client)
	for _, p := range []*core.Pod{
		{ObjectMeta: meta.ObjectMeta{Name: "missing", Namespace: "default"}, Spec: core.PodSpec{NodeName: "node-1",
			Containers: []core.Container{{Name: "app", Image: "kobune.local/nothere:1.0", ImagePullPolicy: core.PullNever}}}},
		{ObjectMeta: meta.ObjectMeta{Name: "exposed", Namespace: "default"}, Spec: core.PodSpec{NodeName: "node-1",
			Containers: []core.Container{{Name: "app", Image: "kobune.local/labapp:2.0", ImagePullPolicy: core.PullNever,
				Ports: []core.ContainerPort{{ContainerPort: 8080, HostPort: 18080}}}}}},
	} {
		if _, err := pods.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	waitForPod(t, ctx, pods, "missing", 0, func(p *core.Pod, _ bool) bool {
		return p.Status.Phase == core.PodPending && len(p.Status.ContainerStatuses) == 1 &&
			p.Status.ContainerStatuses[0].State.Waiting != nil && p.Status.ContainerStatuses[0].State.Waiting.Reason == "ErrImageNeverPull"
	})
	waitForPod(t, ctx, pods, "exposed", 0, func(p *core.Pod, _ bool) bool { return p.Status.Phase == core.PodRunning })
	url := "http://" + nodes[0].nodeIP + ":18080/"
	var out string
	var err error
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if out, err = nodes[1].exec(ctx, "timeout", "2", "busybox", "wget", "-q", "-O", "-", url); err == nil {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if !strings.Contains(out, "labapp 2.0 on exposed") {
		t.Errorf("GET %s from node-2 = %q (%v)", url, out, err)
	}
}

// httpProbe probes path on the container port named http, every second.
func httpProbe(path string) *core.Probe {
	return &core.Probe{ProbeHandler: core.ProbeHandler{HTTPGet: &core.HTTPGetAction{Path: path, Port: meta.FromString("http")}}, PeriodSeconds: 1, FailureThreshold: 1}
}
