package e2e

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	containerd "github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/pkg/namespaces"
	"github.com/containerd/containerd/v2/pkg/oci"

	"github.com/kobune/kobune/agent/runtime"
	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/client"
)

// events returns the reasons (and messages) of the events about a pod.
func events(t *testing.T, ctx context.Context, c *client.Client, pod *core.Pod) map[string][]*core.Event {
	t.Helper()
	list, _, err := client.For[*core.Event](c).List(ctx, pod.Namespace, client.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]*core.Event{}
	for _, e := range list {
		if e.InvolvedObject.UID == pod.UID {
			out[e.Reason] = append(out[e.Reason], e)
		}
	}
	return out
}

// awaitEvents waits until the pod has an event of every reason.
func awaitEvents(t *testing.T, ctx context.Context, c *client.Client, pod *core.Pod, reasons ...string) map[string][]*core.Event {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		got := events(t, ctx, c, pod)
		missing := ""
		for _, r := range reasons {
			if len(got[r]) == 0 {
				missing = r
			}
		}
		if missing == "" {
			return got
		}
		if time.Now().After(deadline) {
			have := []string{}
			for r := range got {
				have = append(have, r)
			}
			t.Fatalf("pod %s has no %s event within 30 s (it has %v)", pod.Name, missing, have)
		}
	}
}

// Issue #10 defects 4 and 6: a container whose command does not exist left
// the pod Pending with no status and no event. Now the attempt shows as
// terminated with StartError (exit code 128) and the runtime's message, the
// restart back-off applies, and events say so; the agent also writes the
// kubelet's Pulled, Created and Started events for a pod that starts.
func TestContainerThatCannotStartSaysWhy(t *testing.T) {
	requireRoot(t)
	srv, nodes := startCluster(t, 1)
	nodes[0].startAgent(t, "10.244.84.0/24")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	pods := client.For[*core.Pod](srv.Client)
	for _, p := range []*core.Pod{
		{ObjectMeta: meta.ObjectMeta{Name: "nosuch", Namespace: "default"}, Spec: core.PodSpec{NodeName: "node-1",
			Containers: []core.Container{{Name: "app", Image: "kobune.local/busybox:1.35", ImagePullPolicy: core.PullNever, Command: []string{"/no/such/binary"}}}}},
		{ObjectMeta: meta.ObjectMeta{Name: "fine", Namespace: "default"}, Spec: core.PodSpec{NodeName: "node-1",
			Containers: []core.Container{{Name: "app", Image: "kobune.local/labapp:1.0", ImagePullPolicy: core.PullNever}}}},
	} {
		if _, err := pods.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	failed := waitForPod(t, ctx, pods, "nosuch", 0, func(p *core.Pod, _ bool) bool {
		return len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].RestartCount >= 2 &&
			p.Status.ContainerStatuses[0].LastState.Terminated != nil
	})
	cs := failed.Status.ContainerStatuses[0]
	last := cs.LastState.Terminated
	if last.Reason != "StartError" || last.ExitCode != 128 || !strings.Contains(last.Message, "/no/such/binary") {
		t.Errorf("lastState %+v, want StartError, exit code 128 and the runtime's message naming the command", last)
	}
	if w := cs.State.Waiting; cs.State.Terminated == nil && (w == nil || w.Reason != "CrashLoopBackOff") {
		t.Errorf("state %+v, want terminated (StartError) or waiting in CrashLoopBackOff", cs.State)
	}
	evs := awaitEvents(t, ctx, srv.Client, failed, "Failed", "BackOff", "Created")
	if msg := evs["Failed"][0].Message; !strings.HasPrefix(msg, "Error: ") || !strings.Contains(msg, "/no/such/binary") {
		t.Errorf("Failed event %q", msg)
	}
	if e := evs["Failed"][0]; e.Source.Component != "kobune-agent" || e.Source.Host != "node-1" || e.Type != "Warning" {
		t.Errorf("Failed event source %+v type %s", e.Source, e.Type)
	}
	fine := waitForPod(t, ctx, pods, "fine", 0, func(p *core.Pod, _ bool) bool { return p.Status.Phase == core.PodRunning })
	evs = awaitEvents(t, ctx, srv.Client, fine, "Pulled", "Created", "Started")
	if msg := evs["Pulled"][0].Message; msg != `Container image "kobune.local/labapp:1.0" already present on machine` {
		t.Errorf("Pulled event %q", msg)
	}
	if err := pods.Delete(ctx, "default", "fine", client.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	awaitEvents(t, ctx, srv.Client, fine, "Killing")
}

// A container's termination message, as the kubelet keeps it: what the
// process wrote to its terminationMessagePath (default
// /dev/termination-log, writable by any user), or under
// FallbackToLogsOnError the end of its log when it failed and wrote
// nothing. The defaults show in the stored pod.
func TestTerminationMessages(t *testing.T) {
	requireRoot(t)
	srv, nodes := startCluster(t, 1)
	nodes[0].startAgent(t, "10.244.80.0/24")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	pods := client.For[*core.Pod](srv.Client)
	user := int64(1000)
	pod := func(name, script string, c core.Container) *core.Pod {
		c.Name, c.Image, c.ImagePullPolicy, c.Command = "app", "kobune.local/busybox:1.35", core.PullNever, []string{"sh", "-c", script}
		return &core.Pod{ObjectMeta: meta.ObjectMeta{Name: name, Namespace: "default"}, Spec: core.PodSpec{NodeName: "node-1",
			RestartPolicy: core.RestartPolicyNever, Containers: []core.Container{c}}}
	}
	cases := []struct {
		pod  *core.Pod
		want string
	}{
		{pod("default-path", "printf bye > /dev/termination-log", core.Container{}), "bye"},
		{pod("own-path-other-user", "echo noise; printf 'as 1000' > /tmp/last-words; exit 3",
			core.Container{TerminationMessagePath: "/tmp/last-words", SecurityContext: &core.SecurityContext{RunAsUser: &user}}), "as 1000"},
		{pod("fallback-failed", "for i in $(seq 1 100); do echo line $i; done; exit 1",
			core.Container{TerminationMessagePolicy: core.TerminationMessageFallbackToLogsOnError}), "line 21\n"},
		{pod("fallback-succeeded", "echo only a log line",
			core.Container{TerminationMessagePolicy: core.TerminationMessageFallbackToLogsOnError}), ""},
	}
	for _, c := range cases {
		created, err := pods.Create(ctx, c.pod)
		if err != nil {
			t.Fatal(err)
		}
		if c.pod.Spec.Containers[0].TerminationMessagePath == "" {
			if got := created.Spec.Containers[0]; got.TerminationMessagePath != "/dev/termination-log" || got.TerminationMessagePolicy == "" {
				t.Errorf("%s: defaults path %q policy %q, want /dev/termination-log and a policy", c.pod.Name, got.TerminationMessagePath, got.TerminationMessagePolicy)
			}
		}
	}
	for _, c := range cases {
		done := waitForPod(t, ctx, pods, c.pod.Name, 0, func(p *core.Pod, _ bool) bool {
			return len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].State.Terminated != nil
		})
		got := done.Status.ContainerStatuses[0].State.Terminated.Message
		switch {
		case c.want == "line 21\n": // the last 80 of 100 lines: 21 to 100
			if !strings.HasPrefix(got, "line 21\n") || !strings.HasSuffix(got, "line 100\n") || strings.Contains(got, "line 20\n") {
				t.Errorf("%s: message %q, want lines 21 to 100 of the log", c.pod.Name, got)
			}
		case got != c.want:
			t.Errorf("%s: message %q, want %q", c.pod.Name, got, c.want)
		}
	}
}

// Issue #10 defect 2: a container removed behind the agent's back came
// back with a new pod IP while the API kept showing the old one. A pod's
// network identity lasts as long as the pod.
func TestContainerRemovedBehindTheAgentKeepsThePodIP(t *testing.T) {
	requireRoot(t)
	srv, nodes := startCluster(t, 1)
	n := nodes[0]
	n.startAgent(t, "10.244.83.0/24")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	pods := client.For[*core.Pod](srv.Client)
	if _, err := pods.Create(ctx, &core.Pod{ObjectMeta: meta.ObjectMeta{Name: "web", Namespace: "default"}, Spec: core.PodSpec{NodeName: "node-1",
		Containers: []core.Container{{Name: "app", Image: "kobune.local/labapp:1.0", ImagePullPolicy: core.PullNever}}}}); err != nil {
		t.Fatal(err)
	}
	before := waitForPod(t, ctx, pods, "web", 0, func(p *core.Pod, _ bool) bool { return p.Status.Phase == core.PodRunning && p.Status.PodIP != "" })
	// With the agent down, so that it cannot notice, the container goes
	// entirely (task and container); then the agent comes back.
	id := before.UID + "-app"
	n.killAgent()
	for _, args := range [][]string{{"tasks", "kill", "-s", "SIGKILL", id}, {"tasks", "rm", "-f", id}, {"containers", "rm", id}} {
		out, err := exec.Command("ctr", append([]string{"-a", n.socket(), "-n", "kobune-e2e"}, args...)...).CombinedOutput()
		if err != nil && args[0] == "containers" {
			t.Fatalf("ctr %v: %v %s", args, err, out)
		}
	}
	n.startAgent(t, "10.244.83.0/24")
	// The agent starts the container again, in the same sandbox.
	var after *core.Pod
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		out, _ := exec.Command("ctr", "-a", n.socket(), "-n", "kobune-e2e", "tasks", "ls").CombinedOutput()
		p, err := pods.Get(ctx, "default", "web")
		if err != nil {
			t.Fatal(err)
		}
		if p.Status.PodIP != before.Status.PodIP {
			t.Fatalf("pod IP changed from %s to %s after its container was removed", before.Status.PodIP, p.Status.PodIP)
		}
		if strings.Contains(string(out), id) && strings.Contains(string(out), "RUNNING") && p.Status.Phase == core.PodRunning {
			after = p
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the removed container was not started again within 60 s:\n%s", out)
		}
	}
	// A running task is not yet a listening app (a CI run asked within
	// milliseconds and was refused): ask for up to 10 s.
	var got string
	var err error
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if got, err = n.exec(ctx, "timeout", "3", "busybox", "wget", "-q", "-O", "-", "http://"+before.Status.PodIP+":8080/"); err == nil {
			break
		}
	}
	if err != nil || !strings.Contains(got, "labapp 1.0 on web") {
		t.Errorf("the pod does not answer on its IP %s after the container came back: %q %v", before.Status.PodIP, got, err)
	}
	if after.Status.PodIP != before.Status.PodIP {
		t.Errorf("status shows %s, was %s", after.Status.PodIP, before.Status.PodIP)
	}
}

// Issue #10 defect 5: a liveness restart did not say why. The agent now
// writes Unhealthy (each failed attempt) and Killing events, and the killed
// attempt's real exit code is its lastState: 137 for a process that ignores
// SIGTERM and is killed when its grace period ends.
func TestLivenessRestartSaysWhy(t *testing.T) {
	requireRoot(t)
	srv, nodes := startCluster(t, 1)
	nodes[0].startAgent(t, "10.244.82.0/24")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	pods := client.For[*core.Pod](srv.Client)
	grace := int64(1)
	// PID 1 ignores SIGTERM without a handler: the kill needs SIGKILL.
	if _, err := pods.Create(ctx, &core.Pod{ObjectMeta: meta.ObjectMeta{Name: "stubborn", Namespace: "default"}, Spec: core.PodSpec{NodeName: "node-1",
		TerminationGracePeriodSeconds: &grace,
		Containers: []core.Container{{Name: "sh", Image: "kobune.local/busybox:1.35", ImagePullPolicy: core.PullNever,
			Command:       []string{"sh", "-c", "exec sleep 3600"},
			LivenessProbe: &core.Probe{ProbeHandler: core.ProbeHandler{Exec: &core.ExecAction{Command: []string{"cat", "/no/such/file"}}}, PeriodSeconds: 1, FailureThreshold: 2}}}}}); err != nil {
		t.Fatal(err)
	}
	restarted := waitForPod(t, ctx, pods, "stubborn", 0, func(p *core.Pod, _ bool) bool {
		return len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].RestartCount >= 1 && p.Status.ContainerStatuses[0].LastState.Terminated != nil
	})
	if last := restarted.Status.ContainerStatuses[0].LastState.Terminated; last.ExitCode != 137 || last.Reason != "Error" {
		t.Errorf("lastState after the liveness kill: exit code %d, reason %q; want 137, Error", last.ExitCode, last.Reason)
	}
	evs := awaitEvents(t, ctx, srv.Client, restarted, "Unhealthy", "Killing")
	if msg := evs["Unhealthy"][0].Message; !strings.HasPrefix(msg, "Liveness probe failed: ") {
		t.Errorf("Unhealthy event %q", msg)
	}
	if msg := evs["Killing"][0].Message; msg != "Container sh failed liveness probe, will be restarted" {
		t.Errorf("Killing event %q", msg)
	}
}

// Issue #10 defect 7: hostNetwork was stored and ignored (the pod got a
// pod-CIDR address). A hostNetwork pod shares its node's network
// namespace: its IP is the node's, it answers on the node's address, and it
// sees the node's interfaces.
func TestHostNetworkPodSharesTheNodesNetwork(t *testing.T) {
	requireRoot(t)
	srv, nodes := startCluster(t, 1)
	n := nodes[0]
	n.startAgent(t, "10.244.81.0/24")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	pods := client.For[*core.Pod](srv.Client)
	if _, err := pods.Create(ctx, &core.Pod{ObjectMeta: meta.ObjectMeta{Name: "hostnet", Namespace: "default"}, Spec: core.PodSpec{NodeName: "node-1", HostNetwork: true,
		Containers: []core.Container{{Name: "app", Image: "kobune.local/labapp:1.0", ImagePullPolicy: core.PullNever, Args: []string{"--listen", ":18080"},
			Ports: []core.ContainerPort{{ContainerPort: 18080}}}}}}); err != nil {
		t.Fatal(err)
	}
	p := waitForPod(t, ctx, pods, "hostnet", 0, func(p *core.Pod, _ bool) bool { return p.Status.Phase == core.PodRunning })
	if p.Status.PodIP != n.nodeIP || p.Status.HostIP != n.nodeIP {
		t.Errorf("hostNetwork pod IP %q (host IP %q), want the node's %s", p.Status.PodIP, p.Status.HostIP, n.nodeIP)
	}
	if hp := p.Spec.Containers[0].Ports[0].HostPort; hp != 18080 {
		t.Errorf("hostPort defaulted to %d, want the containerPort 18080", hp)
	}
	var got string
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if got, _ = n.exec(ctx, "timeout", "3", "busybox", "wget", "-q", "-O", "-", "http://"+n.nodeIP+":18080/"); strings.Contains(got, "labapp 1.0") {
			break
		}
	}
	if !strings.Contains(got, "labapp 1.0") {
		t.Errorf("the node's address %s:18080 does not answer with the pod: %q", n.nodeIP, got)
	}
	out, err := exec.Command("ip", "netns", "list").CombinedOutput()
	if err == nil && strings.Contains(string(out), "kobune-"+p.UID[:12]) {
		t.Errorf("a network namespace was made for a hostNetwork pod")
	}
}

// TestStaleSnapshotFromAnInterruptedCreate: an agent killed after
// containerd prepared a container's snapshot and before it recorded the
// container leaves the snapshot behind (TestAgentKilledMidMount once
// caught it: "snapshot ... already exists", retried forever). Here the
// snapshot is made by hand before the agent starts; the pod must run.
func TestStaleSnapshotFromAnInterruptedCreate(t *testing.T) {
	requireRoot(t)
	srv, nodes := startCluster(t, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	pods := client.For[*core.Pod](srv.Client)
	p, err := pods.Create(ctx, &core.Pod{ObjectMeta: meta.ObjectMeta{Name: "stale", Namespace: "default"}, Spec: core.PodSpec{NodeName: "node-1",
		Containers: []core.Container{{Name: "app", Image: "kobune.local/labapp:1.0", ImagePullPolicy: core.PullNever}}}})
	if err != nil {
		t.Fatal(err)
	}
	key := p.UID + "-app" // the agent's container id, and its snapshot's key
	if out, err := exec.Command("ctr", "-a", nodes[0].socket(), "-n", "kobune-e2e", "snapshots", "prepare", key, "").CombinedOutput(); err != nil {
		t.Fatalf("ctr snapshots prepare: %v: %s", err, out)
	}
	nodes[0].startAgent(t, "10.244.89.0/24")
	waitForPod(t, ctx, pods, "stale", 0, func(p *core.Pod, _ bool) bool { return p.Status.Phase == core.PodRunning })
}

// Seen in CI: `kobectl logs` of one pod failed with `container "<uid>-app"
// ... not found` — another pod's crashing container was replaced while
// the agent listed the node's containers, and the listing read each
// container a second time. A listing (what logs, exec, the sync loop and
// the metrics read) must not fail for containers that come and go while
// it runs.
func TestListingWhileContainersComeAndGo(t *testing.T) {
	requireRoot(t)
	n := &node{name: "node-1", dir: t.TempDir()}
	n.startContainerd(t)
	const ns = "kobune-e2e-churn"
	rt, err := runtime.NewContainerd(n.socket(), ns, t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	c, err := containerd.New(n.socket(), containerd.WithDefaultNamespace(ns))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(namespaces.WithNamespace(context.Background(), ns), time.Minute)
	defer cancel()
	// Containers (records only, no task) made and deleted one after another,
	// eight at a time, as a crashing container is replaced on each restart.
	made := func(i int) string { return fmt.Sprintf("00000000-0000-0000-0000-%012d-app", i) }
	create := func(i int) error {
		_, err := c.NewContainer(ctx, made(i), containerd.WithSpec(&oci.Spec{}),
			containerd.WithContainerLabels(map[string]string{runtime.LabelPodUID: made(i)[:36], runtime.LabelContainer: "app"}))
		return err
	}
	for i := range 8 {
		if err := create(i); err != nil {
			t.Fatal(err)
		}
	}
	stop := make(chan struct{})
	churned := make(chan error, 1)
	go func() {
		i := 8
		for {
			select {
			case <-stop:
				churned <- nil
				return
			default:
			}
			if err := create(i); err != nil {
				churned <- err
				return
			}
			if err := c.ContainerService().Delete(ctx, made(i-8)); err != nil {
				churned <- err
				return
			}
			i++
		}
	}()
	lists := 0
	for end := time.Now().Add(3 * time.Second); time.Now().Before(end); lists++ {
		pods, err := rt.Pods(ctx)
		if err != nil {
			close(stop)
			<-churned
			t.Fatalf("listing %d failed while containers came and went: %v", lists, err)
		}
		if len(pods) < 8 {
			t.Errorf("listing %d: %d pods, want the 8 that always exist", lists, len(pods))
		}
	}
	close(stop)
	if err := <-churned; err != nil {
		t.Fatal(err)
	}
	t.Logf("%d listings while containers were replaced", lists)
}
