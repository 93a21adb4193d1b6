package agent_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/kobune/kobune/agent"
	"github.com/kobune/kobune/agent/node"
	"github.com/kobune/kobune/agent/runtime"
	"github.com/kobune/kobune/api/coordination"
	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	nodev1 "github.com/kobune/kobune/api/node"
	"github.com/kobune/kobune/api/resource"
	"github.com/kobune/kobune/apiserver/testserver"
	"github.com/kobune/kobune/client"
)

func startAgent(t *testing.T, ctx context.Context, s *testserver.Server, rt runtime.Runtime) (stop func()) {
	t.Helper()
	cfg := agent.Config{LeaseInterval: 200 * time.Millisecond, DisableProbes: true, Logf: t.Logf}
	cfg.Node = node.Config{
		Name:           "node-1",
		Capacity:       mustResources(t, "cpu=4,memory=8Gi,pods=110"),
		SystemReserved: mustResources(t, "cpu=500m,memory=1Gi"),
		Labels:         map[string]string{"zone": "a"},
		Taints:         []core.Taint{{Key: "dedicated", Value: "lab", Effect: core.TaintNoSchedule}},
		Addresses:      []core.NodeAddress{{Type: "InternalIP", Address: "192.0.2.10"}},
		PodCIDR:        "10.244.1.0/24",
	}
	return runAgent(t, ctx, cfg, s, rt)
}

// runAgent runs an agent until the returned stop is called.
func runAgent(t *testing.T, ctx context.Context, cfg agent.Config, s *testserver.Server, rt runtime.Runtime) (stop func()) {
	t.Helper()
	actx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- agent.New(cfg, s.Client, rt).Run(actx) }()
	return func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("agent: %v", err)
		}
	}
}

// fakeNode is an API server, a context for the test and a simulated
// runtime for a node with pod CIDR cidr.
func fakeNode(t *testing.T, cidr string) (*testserver.Server, context.Context, *runtime.Fake) {
	t.Helper()
	s := testserver.New(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	rt, err := runtime.NewFake(cidr)
	if err != nil {
		t.Fatal(err)
	}
	return s, ctx, rt
}

func mustResources(t *testing.T, s string) resource.List {
	t.Helper()
	l, err := node.ParseResources(s)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// waitPod waits until a pod satisfies cond (see client.WaitFor).
func waitPod(t *testing.T, ctx context.Context, s *testserver.Server, name string, from int64, cond func(*core.Pod, bool) bool) *core.Pod {
	t.Helper()
	wctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	p, err := client.WaitFor(wctx, client.For[*core.Pod](s.Client), "default", name, from, cond)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestFakeAgentRegistersRunsAndDeletesPods(t *testing.T) {
	s, ctx, rt := fakeNode(t, "10.244.1.0/24")
	stop := startAgent(t, ctx, s, rt)

	// The node registers with capacity, allocatable, labels, taints and Ready.
	var n *core.Node
	nodes := client.For[*core.Node](s.Client)
	w, err := nodes.Watch(ctx, "", client.ListOptions{FieldSelector: "metadata.name=node-1"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	n = (<-w.Events).Object
	if got := n.Status.Allocatable.Cpu(); got.String() != "3500m" {
		t.Errorf("allocatable cpu = %s, want 3500m (4 - 500m)", got.String())
	}
	if got := n.Status.Allocatable.Memory(); got.String() != "7Gi" {
		t.Errorf("allocatable memory = %s, want 7Gi", got.String())
	}
	if n.Labels["kubernetes.io/hostname"] != "node-1" || n.Labels["zone"] != "a" || n.Labels["kubernetes.io/os"] != "linux" {
		t.Errorf("labels: %v", n.Labels)
	}
	if len(n.Spec.Taints) != 1 || n.Spec.Taints[0].Key != "dedicated" || n.Status.NodeInfo.ContainerRuntimeVersion != "fake://0.1" {
		t.Errorf("taints %v, runtime %q", n.Spec.Taints, n.Status.NodeInfo.ContainerRuntimeVersion)
	}
	ready := false
	for _, c := range n.Status.Conditions {
		ready = ready || (c.Type == core.NodeReady && c.Status == meta.ConditionTrue)
	}
	if !ready {
		t.Errorf("node not Ready: %+v", n.Status.Conditions)
	}

	// The Lease is renewed.
	leases := client.For[*coordination.Lease](s.Client)
	first, err := waitLease(ctx, leases)
	if err != nil {
		t.Fatal(err)
	}
	lw, err := leases.Watch(ctx, node.LeaseNamespace, client.ListOptions{}, client.ResourceVersion(first))
	if err != nil {
		t.Fatal(err)
	}
	renewed := (<-lw.Events).Object
	if !renewed.Spec.RenewTime.After(first.Spec.RenewTime.Time) {
		t.Errorf("lease not renewed: %v then %v", first.Spec.RenewTime, renewed.Spec.RenewTime)
	}

	// A pod bound to the node runs, with an IP from the pod CIDR.
	pods := client.For[*core.Pod](s.Client)
	pod := &core.Pod{ObjectMeta: meta.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: core.PodSpec{NodeName: "node-1", InitContainers: []core.Container{{Name: "setup", Image: "kobune.local/busybox:1.35"}},
			Containers: []core.Container{{Name: "app", Image: "kobune.local/labapp:1.0"}}}}
	if _, err := pods.Create(ctx, pod); err != nil {
		t.Fatal(err)
	}
	running := waitPod(t, ctx, s, "web", 0, func(p *core.Pod, _ bool) bool { return p.Status.Phase == core.PodRunning })
	if running.Status.PodIP != "10.244.1.2" || running.Status.HostIP != "192.0.2.10" || running.Status.StartTime == nil {
		t.Errorf("status: podIP %q hostIP %q", running.Status.PodIP, running.Status.HostIP)
	}
	if len(running.Status.ContainerStatuses) != 1 || running.Status.ContainerStatuses[0].State.Running == nil || !running.Status.ContainerStatuses[0].Ready {
		t.Errorf("container statuses: %+v", running.Status.ContainerStatuses)
	}
	// An init container that ran to success is ready (as the kubelet says).
	if len(running.Status.InitContainerStatuses) != 1 || running.Status.InitContainerStatuses[0].State.Terminated == nil || !running.Status.InitContainerStatuses[0].Ready {
		t.Errorf("init container statuses: %+v", running.Status.InitContainerStatuses)
	}
	conds := map[core.PodConditionType]meta.ConditionStatus{}
	for _, c := range running.Status.Conditions {
		conds[c.Type] = c.Status
	}
	for _, c := range []core.PodConditionType{core.PodInitialized, core.ContainersReady, core.PodReady} {
		if conds[c] != meta.ConditionTrue {
			t.Errorf("condition %s = %q, want True", c, conds[c])
		}
	}

	// A restarted agent adopts the pod: same IP, no status change.
	stop()
	stop = startAgent(t, ctx, s, rt)
	defer func() { stop() }()
	time.Sleep(500 * time.Millisecond) // give the new agent a resync's worth of time to (wrongly) rewrite status
	again, err := pods.Get(ctx, "default", "web")
	if err != nil {
		t.Fatal(err)
	}
	if again.ResourceVersion != running.ResourceVersion {
		t.Errorf("restarted agent rewrote a steady pod's status (rv %s -> %s)", running.ResourceVersion, again.ResourceVersion)
	}

	// Deleting the pod: the agent stops it and confirms; the pod disappears.
	if err := pods.Delete(ctx, "default", "web", client.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// Watch from before the delete, so the DELETED event cannot be missed.
	waitPod(t, ctx, s, "web", client.ResourceVersion(again), func(_ *core.Pod, deleted bool) bool { return deleted })
	if left, _ := rt.Pods(ctx); len(left) != 0 {
		t.Errorf("runtime still runs %d pods after deletion", len(left))
	}
}

func waitLease(ctx context.Context, leases *client.Typed[*coordination.Lease]) (*coordination.Lease, error) {
	w, err := leases.Watch(ctx, node.LeaseNamespace, client.ListOptions{FieldSelector: "metadata.name=node-1"}, 0)
	if err != nil {
		return nil, err
	}
	ev := <-w.Events
	return ev.Object, w.Err()
}

func TestAgentMetrics(t *testing.T) {
	s := testserver.New(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rt, _ := runtime.NewFake("10.244.9.0/24")
	m := agent.NewMetrics()
	cfg := agent.Config{LeaseInterval: time.Second, DisableProbes: true, Metrics: m, Logf: t.Logf}
	cfg.Node = node.Config{Name: "node-1", Capacity: mustResources(t, "cpu=1,memory=1Gi,pods=10"), PodCIDR: "10.244.9.0/24"}
	defer runAgent(t, ctx, cfg, s, rt)()
	pods := client.For[*core.Pod](s.Client)
	if _, err := pods.Create(ctx, &core.Pod{ObjectMeta: meta.ObjectMeta{Name: "p", Namespace: "default"},
		Spec: core.PodSpec{NodeName: "node-1", Containers: []core.Container{{Name: "c", Image: "i"}}}}); err != nil {
		t.Fatal(err)
	}
	waitPod(t, ctx, s, "p", 0, func(p *core.Pod, _ bool) bool { return p.Status.Phase == core.PodRunning })
	var gauge, calls dto.Metric
	if err := m.RunningPods.Write(&gauge); err != nil || gauge.Gauge.GetValue() != 1 {
		t.Errorf("running pods = %v (%v), want 1", gauge.Gauge.GetValue(), err)
	}
	if err := m.RuntimeCalls.WithLabelValues("run_pod").(prometheus.Histogram).Write(&calls); err != nil || calls.Histogram.GetSampleCount() == 0 {
		t.Errorf("no run_pod latency observed (%v)", err)
	}
	var hist dto.Metric
	if err := m.PodStart.Write(&hist); err != nil || hist.Histogram.GetSampleCount() != 1 {
		t.Errorf("pod start observations = %d (%v), want 1", hist.Histogram.GetSampleCount(), err)
	}
}

// A pod that has run to completion gives its address back at once (the
// kubelet stops a terminated pod's sandbox) and keeps its dead containers
// for its logs until it is deleted.
func TestFinishedPodGivesBackItsAddress(t *testing.T) {
	s, ctx, rt := fakeNode(t, "10.244.1.0/30") // one address for pods: 10.244.1.2
	stop := startAgent(t, ctx, s, rt)
	defer stop()
	pods := client.For[*core.Pod](s.Client)
	job := &core.Pod{ObjectMeta: meta.ObjectMeta{Name: "job", Namespace: "default"},
		Spec: core.PodSpec{NodeName: "node-1", RestartPolicy: core.RestartPolicyNever,
			Containers: []core.Container{{Name: "work", Image: "kobune.local/busybox:1.35", Command: []string{"exit", "0"}}}}}
	if _, err := pods.Create(ctx, job); err != nil {
		t.Fatal(err)
	}
	done := waitPod(t, ctx, s, "job", 0, func(p *core.Pod, _ bool) bool { return p.Status.Phase == core.PodSucceeded })
	if done.Status.PodIP != "10.244.1.2" {
		t.Fatalf("job ran at %q, want 10.244.1.2", done.Status.PodIP)
	}
	web := &core.Pod{ObjectMeta: meta.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: core.PodSpec{NodeName: "node-1", Containers: []core.Container{{Name: "app", Image: "kobune.local/labapp:1.0"}}}}
	if _, err := pods.Create(ctx, web); err != nil {
		t.Fatal(err)
	}
	// Without the release the range stays full and web never runs.
	running := waitPod(t, ctx, s, "web", 0, func(p *core.Pod, _ bool) bool { return p.Status.Phase == core.PodRunning })
	if running.Status.PodIP != "10.244.1.2" {
		t.Errorf("the next pod got %q, want 10.244.1.2, the finished pod's", running.Status.PodIP)
	}
	left, _ := rt.Pods(ctx)
	kept := false
	for _, p := range left {
		kept = kept || (p.UID == done.UID && len(p.Containers) == 1 && !p.Containers[0].Running)
	}
	if !kept {
		t.Errorf("the finished pod's dead container is gone before the pod is deleted: %+v", left)
	}
}

// A pod whose RuntimeClass names a handler this node lacks gets no
// sandbox (FailedCreatePodSandBox, naming the handler); one of a runc
// class runs.
func TestRuntimeClassHandlers(t *testing.T) {
	s, ctx, rt := fakeNode(t, "10.244.1.0/24")
	for _, rc := range []*nodev1.RuntimeClass{{ObjectMeta: meta.ObjectMeta{Name: "gvisor"}, Handler: "runsc"}, {ObjectMeta: meta.ObjectMeta{Name: "plain"}, Handler: "runc"}} {
		if _, err := client.For[*nodev1.RuntimeClass](s.Client).Create(ctx, rc); err != nil {
			t.Fatal(err)
		}
	}
	defer startAgent(t, ctx, s, rt)()
	pods := client.For[*core.Pod](s.Client)
	for name, class := range map[string]string{"sandboxed": "gvisor", "plain": "plain"} {
		if _, err := pods.Create(ctx, &core.Pod{ObjectMeta: meta.ObjectMeta{Namespace: "default", Name: name},
			Spec: core.PodSpec{NodeName: "node-1", RuntimeClassName: &class, Containers: []core.Container{{Name: "app", Image: "busybox"}}}}); err != nil {
			t.Fatal(err)
		}
	}
	waitPod(t, ctx, s, "plain", 0, func(p *core.Pod, _ bool) bool { return p.Status.Phase == core.PodRunning })
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		evs, _, _ := client.For[*core.Event](s.Client).List(ctx, "default", client.ListOptions{FieldSelector: "involvedObject.name=sandboxed,reason=FailedCreatePodSandBox"})
		if len(evs) > 0 {
			if !strings.Contains(evs[0].Message, `no runtime for "runsc" is configured`) {
				t.Errorf("event: %s", evs[0].Message)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no FailedCreatePodSandBox event for a pod of handler runsc")
		}
	}
	if p, _ := pods.Get(ctx, "default", "sandboxed"); p.Status.Phase != core.PodPending {
		t.Errorf("the pod of handler runsc: %s, want Pending", p.Status.Phase)
	}
}

// A pod asking for a sysctl that is not among the kubelet's safe ones
// fails at once (SysctlForbidden, naming it); one with a safe sysctl runs.
func TestUnsafeSysctlsAreForbidden(t *testing.T) {
	s, ctx, rt := fakeNode(t, "10.244.1.0/24")
	defer startAgent(t, ctx, s, rt)()
	pods := client.For[*core.Pod](s.Client)
	for name, sysctl := range map[string]string{"unsafe": "kernel.msgmax", "safe": "kernel/shm_rmid_forced"} {
		if _, err := pods.Create(ctx, &core.Pod{ObjectMeta: meta.ObjectMeta{Namespace: "default", Name: name},
			Spec: core.PodSpec{NodeName: "node-1", SecurityContext: &core.PodSecurityContext{Sysctls: []core.Sysctl{{Name: sysctl, Value: "1"}}},
				Containers: []core.Container{{Name: "app", Image: "busybox"}}}}); err != nil {
			t.Fatal(err)
		}
	}
	p := waitPod(t, ctx, s, "unsafe", 0, func(p *core.Pod, _ bool) bool { return p.Status.Phase == core.PodFailed })
	if p.Status.Reason != "SysctlForbidden" || p.Status.Message != `Pod forbidden sysctl: "kernel.msgmax" not allowlisted` {
		t.Errorf("the pod with an unsafe sysctl: %s %q", p.Status.Reason, p.Status.Message)
	}
	waitPod(t, ctx, s, "safe", 0, func(p *core.Pod, _ bool) bool { return p.Status.Phase == core.PodRunning })
}

// TestFailedInitContainerFailsANeverRestartedPod: under restartPolicy
// Never an init container that fails ends the pod (Failed), as the
// kubelet does; every container of the spec has a status — those never
// made wait with PodInitializing — and Initialized says which init
// container is incomplete, in the kubelet's words.
func TestFailedInitContainerFailsANeverRestartedPod(t *testing.T) {
	s, ctx, rt := fakeNode(t, "10.244.1.0/24")
	defer startAgent(t, ctx, s, rt)()
	pod := &core.Pod{ObjectMeta: meta.ObjectMeta{Name: "init-fails", Namespace: "default"},
		Spec: core.PodSpec{NodeName: "node-1", RestartPolicy: core.RestartPolicyNever,
			InitContainers: []core.Container{{Name: "init1", Image: "busybox", Command: []string{"exit", "0"}}, {Name: "init2", Image: "busybox", Command: []string{"exit", "1"}}},
			Containers:     []core.Container{{Name: "run1", Image: "busybox"}}}}
	if _, err := client.For[*core.Pod](s.Client).Create(ctx, pod); err != nil {
		t.Fatal(err)
	}
	p := waitPod(t, ctx, s, "init-fails", 0, func(p *core.Pod, _ bool) bool { return p.Status.Phase == core.PodFailed })
	st := p.Status
	if len(st.InitContainerStatuses) != 2 || !st.InitContainerStatuses[0].Ready || st.InitContainerStatuses[1].Ready ||
		st.InitContainerStatuses[1].State.Terminated == nil || st.InitContainerStatuses[1].State.Terminated.ExitCode != 1 {
		t.Errorf("init container statuses: %+v", st.InitContainerStatuses)
	}
	if len(st.ContainerStatuses) != 1 || st.ContainerStatuses[0].State.Waiting == nil || st.ContainerStatuses[0].State.Waiting.Reason != "PodInitializing" {
		t.Errorf("container statuses: %+v; want run1 waiting with PodInitializing", st.ContainerStatuses)
	}
	for _, c := range st.Conditions {
		switch c.Type {
		case core.PodInitialized:
			if c.Status != meta.ConditionFalse || c.Reason != "ContainersNotInitialized" || c.Message != "containers with incomplete status: [init2]" {
				t.Errorf("Initialized: %+v", c)
			}
		case core.PodReady:
			if c.Status != meta.ConditionFalse || c.Reason != "PodFailed" {
				t.Errorf("Ready: %+v", c)
			}
		}
	}
}

// TestActiveDeadlineSeconds: a pod running longer than its
// activeDeadlineSeconds is killed and Failed with reason DeadlineExceeded,
// as the kubelet does — also when the deadline is set while it runs; the
// deadline may be shortened, not lengthened.
func TestActiveDeadlineSeconds(t *testing.T) {
	s, ctx, rt := fakeNode(t, "10.244.1.0/24")
	defer startAgent(t, ctx, s, rt)()
	pods := client.For[*core.Pod](s.Client)
	if _, err := pods.Create(ctx, &core.Pod{ObjectMeta: meta.ObjectMeta{Name: "runs", Namespace: "default"},
		Spec: core.PodSpec{NodeName: "node-1", Containers: []core.Container{{Name: "app", Image: "busybox"}}}}); err != nil {
		t.Fatal(err)
	}
	p := waitPod(t, ctx, s, "runs", 0, func(p *core.Pod, _ bool) bool { return p.Status.Phase == core.PodRunning })
	ten, one := int64(10), int64(1)
	p.Spec.ActiveDeadlineSeconds = &ten
	if p, err := pods.Update(ctx, p); err != nil {
		t.Fatal(err)
	} else {
		longer := int64(20)
		p.Spec.ActiveDeadlineSeconds = &longer
		if _, err := pods.Update(ctx, p); !client.IsInvalid(err) || !strings.Contains(client.Message(err), "spec.activeDeadlineSeconds") {
			t.Errorf("lengthening activeDeadlineSeconds: %v; want Invalid", err)
		}
		var err error
		for range 20 { // the agent writes the status between (observedGeneration)
			if p, err = pods.Get(ctx, "default", "runs"); err != nil {
				t.Fatal(err)
			}
			p.Spec.ActiveDeadlineSeconds = &one
			if _, err = pods.Update(ctx, p); !client.IsConflict(err) {
				break
			}
		}
		if err != nil {
			t.Fatalf("shortening activeDeadlineSeconds: %v", err)
		}
	}
	p = waitPod(t, ctx, s, "runs", 0, func(p *core.Pod, _ bool) bool { return p.Status.Phase == core.PodFailed })
	if p.Status.Reason != "DeadlineExceeded" || !strings.Contains(p.Status.Message, "longer than the specified deadline") ||
		len(p.Status.ContainerStatuses) != 1 || p.Status.ContainerStatuses[0].State.Terminated == nil {
		t.Errorf("status after the deadline: %+v", p.Status)
	}
}
