package e2e

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/api/resource"
	"github.com/kobune/kobune/client"
)

// TestMemoryPressureEvictsInTheKubeletsOrder: a node of 1 GiB whose
// agent evicts below 924Mi available (so 100 MiB of pods cross it) runs a
// BestEffort, a Burstable and a Guaranteed pod; once all three run, each
// is asked to allocate (POST /alloc: the BestEffort one first, so that
// whatever sample the agent takes in between, the BestEffort pod ranks
// first — with allocations timed from each container's start, a pod that
// started late under load made the Burstable one the first over the
// threshold); the agent reports MemoryPressure and evicts them
// one by one — the BestEffort pod first, then the Burstable one over its
// request, the Guaranteed one last — each Failed with reason Evicted and
// the kubelet's message; afterwards MemoryPressure goes back to False.
func TestMemoryPressureEvictsInTheKubeletsOrder(t *testing.T) {
	requireRoot(t)
	srv, nodes := startCluster(t, 1)
	nodes[0].startAgent(t, "10.244.88.0/24", "--capacity", "cpu=2,memory=1Gi,pods=110", "--eviction-hard", "memory.available<924Mi",
		"--eviction-pressure-transition-period", "5s")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	pods := client.For[*core.Pod](srv.Client)
	mi := resource.MustParse
	specs := []struct {
		name      string
		mb        string
		resources core.ResourceRequirements
	}{
		{"guaranteed", "110", core.ResourceRequirements{Requests: resource.List{resource.CPU: mi("100m"), resource.Memory: mi("150Mi")}, Limits: resource.List{resource.CPU: mi("100m"), resource.Memory: mi("150Mi")}}},
		{"burstable", "80", core.ResourceRequirements{Requests: resource.List{resource.Memory: mi("10Mi")}, Limits: resource.List{resource.Memory: mi("200Mi")}}},
		{"besteffort", "120", core.ResourceRequirements{}},
	}
	for _, s := range specs {
		if _, err := pods.Create(ctx, &core.Pod{ObjectMeta: meta.ObjectMeta{Name: s.name, Namespace: "default"}, Spec: core.PodSpec{NodeName: "node-1", RestartPolicy: core.RestartPolicyNever,
			Containers: []core.Container{{Name: "app", Image: "kobune.local/labapp:1.0", ImagePullPolicy: core.PullNever, Resources: s.resources}}}}); err != nil {
			t.Fatal(err)
		}
	}
	ips := map[string]string{}
	for _, s := range specs {
		p := waitForPod(t, ctx, pods, s.name, 0, func(p *core.Pod, _ bool) bool { return p.Status.Phase == core.PodRunning && p.Status.PodIP != "" })
		ips[s.name] = p.Status.PodIP
	}
	// Record when each pod is seen Evicted, and whether the node said
	// MemoryPressure meanwhile.
	var mu sync.Mutex
	evicted := map[string]time.Time{}
	messages := map[string]string{}
	w, err := pods.Watch(ctx, "default", client.ListOptions{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		for ev := range w.Events {
			p := ev.Object
			if p.Status.Reason == "Evicted" {
				mu.Lock()
				if _, seen := evicted[p.Name]; !seen {
					evicted[p.Name], messages[p.Name] = time.Now(), p.Status.Message
				}
				mu.Unlock()
			}
		}
	}()
	pressure := func() meta.ConditionStatus {
		n, err := client.For[*core.Node](srv.Client).Get(ctx, "", "node-1")
		if err != nil {
			return ""
		}
		for _, c := range n.Status.Conditions {
			if c.Type == core.NodeMemoryPressure {
				return c.Status
			}
		}
		return ""
	}
	// BestEffort first, then Burstable, then Guaranteed (specs lists them the other way).
	for i := len(specs) - 1; i >= 0; i-- {
		s := specs[i]
		url := "http://" + ips[s.name] + ":8080/alloc?mb=" + s.mb
		if out, err := nodes[0].exec(ctx, "timeout", "60", "busybox", "wget", "-q", "-O", "-", "--post-data", "", url); err != nil || !strings.Contains(out, "holding") {
			t.Fatalf("POST %s: %v %q", url, err, out)
		}
	}
	sawPressure := false
	for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); time.Sleep(500 * time.Millisecond) {
		sawPressure = sawPressure || pressure() == meta.ConditionTrue
		mu.Lock()
		n := len(evicted)
		mu.Unlock()
		if n == 3 {
			break
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(evicted) != 3 {
		t.Fatalf("evicted %v, want all three", evicted)
	}
	if !(evicted["besteffort"].Before(evicted["burstable"]) && evicted["burstable"].Before(evicted["guaranteed"])) {
		t.Errorf("eviction order: besteffort %v, burstable %v, guaranteed %v; want BestEffort, then Burstable over its request, then Guaranteed",
			evicted["besteffort"].Format("15:04:05.000"), evicted["burstable"].Format("15:04:05.000"), evicted["guaranteed"].Format("15:04:05.000"))
	}
	for name, msg := range messages {
		if !strings.Contains(msg, "The node was low on resource: memory. Threshold quantity: 924Mi") {
			t.Errorf("%s: message %q", name, msg)
		}
		if p, _ := pods.Get(ctx, "default", name); p.Status.Phase != core.PodFailed {
			t.Errorf("%s: phase %s after eviction", name, p.Status.Phase)
		}
	}
	if !sawPressure {
		t.Error("the node never reported MemoryPressure True")
	}
	// Nothing left to evict: the condition clears after the transition period.
	cleared := false
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(500 * time.Millisecond) {
		if pressure() == meta.ConditionFalse {
			cleared = true
			break
		}
	}
	if !cleared {
		t.Error("MemoryPressure stayed True after every pod was gone")
	}
}

// TestDiskPressureCollectsImagesThenEvicts: a pod that ran to completion
// gives its network back at once, its exited task goes (no shim is left
// running for it), and it keeps its dead container (and logs);
// then an agent whose nodefs threshold is always crossed
// (nodefs.available<99.99%) reports DiskPressure, first removes the dead
// container (writable layer, logs; the pod stays Succeeded), then deletes
// the images no container uses (the running pod's stays, the finished
// pod's goes), and only then evicts the running pod, for ephemeral-storage.
func TestDiskPressureCollectsImagesThenEvicts(t *testing.T) {
	requireRoot(t)
	srv, nodes := startCluster(t, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	pods := client.For[*core.Pod](srv.Client)
	ctr := nodes[0].ctr
	// First without pressure: a pod that runs to completion (16 MiB in its
	// writable layer) and one that keeps running.
	if _, err := pods.Create(ctx, &core.Pod{ObjectMeta: meta.ObjectMeta{Name: "done", Namespace: "default"}, Spec: core.PodSpec{NodeName: "node-1", RestartPolicy: core.RestartPolicyNever,
		Containers: []core.Container{{Name: "work", Image: "kobune.local/busybox:1.35", ImagePullPolicy: core.PullNever,
			Command: []string{"sh", "-c", "dd if=/dev/zero of=/filler bs=1M count=16 2>/dev/null; echo finished"}}}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := pods.Create(ctx, &core.Pod{ObjectMeta: meta.ObjectMeta{Name: "app", Namespace: "default"}, Spec: core.PodSpec{NodeName: "node-1", RestartPolicy: core.RestartPolicyNever,
		Containers: []core.Container{{Name: "app", Image: "kobune.local/labapp:1.0", ImagePullPolicy: core.PullNever}}}}); err != nil {
		t.Fatal(err)
	}
	nodes[0].startAgent(t, "10.244.94.0/24")
	done := waitForPod(t, ctx, pods, "done", 0, func(p *core.Pod, _ bool) bool { return p.Status.Phase == core.PodSucceeded })
	waitForPod(t, ctx, pods, "app", 0, func(p *core.Pod, _ bool) bool { return p.Status.Phase == core.PodRunning })
	// The finished pod gives its network back at once and keeps its dead
	// container (for its logs) until something collects it.
	netns := "/run/netns/kobune-" + done.UID[:12]
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		if _, err := os.Stat(netns); os.IsNotExist(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the finished pod's network namespace %s is still there after 20 s", netns)
		}
	}
	if c := ctr("containers", "ls", "-q"); !strings.Contains(c, done.UID+"-work") {
		t.Fatalf("the finished pod's dead container is gone before any pressure:\n%s", c)
	}
	if tasks := ctr("tasks", "ls"); strings.Contains(tasks, done.UID) {
		t.Errorf("the finished pod's exited task (and its shim) is still there:\n%s", tasks)
	}
	if out, err := podLogs(ctx, srv.Client, "done"); err != nil || out != "finished\n" {
		t.Errorf("logs of the finished pod: %q, %v; want \"finished\"", out, err)
	}

	// Then the agent comes back with a threshold this disk always meets.
	nodes[0].killAgent()
	logStart := 0
	if b, err := os.ReadFile(filepath.Join(nodes[0].dir, "agent.log")); err == nil {
		logStart = len(b)
	}
	nodes[0].startAgent(t, "10.244.94.0/24", "--eviction-hard", "nodefs.available<99.99%", "--eviction-pressure-transition-period", "5s")
	evicted := waitForPod(t, ctx, pods, "app", 0, func(p *core.Pod, _ bool) bool { return p.Status.Reason == "Evicted" })
	if !strings.Contains(evicted.Status.Message, "The node was low on resource: ephemeral-storage.") {
		t.Errorf("eviction message %q", evicted.Status.Message)
	}
	b, _ := os.ReadFile(filepath.Join(nodes[0].dir, "agent.log"))
	log := string(b[logStart:])
	at := func(s string) int {
		i := strings.Index(log, s)
		if i < 0 {
			t.Errorf("the agent never logged %q:\n%s", s, log)
		}
		return i
	}
	line := func(i int) string { return log[i : i+strings.Index(log[i:], "\n")] }
	// The kubelet's order: dead containers, then images, then pods.
	cgc := at("container garbage collection: removing the dead containers of finished pods default/done")
	gc := at("image garbage collection removed")
	ev := at("evicting default/app")
	if t.Failed() {
		return
	}
	if cgc > gc || gc > ev {
		t.Errorf("want container garbage collection, then image garbage collection, then the eviction:\n%s", log)
	}
	if l := line(gc); !strings.Contains(l, "kobune.local/ingress:1.0") || !strings.Contains(l, "kobune.local/busybox:1.35") || strings.Contains(l, "kobune.local/labapp:1.0") {
		t.Errorf("collected: %s, want the unused images (busybox too, once the finished pod's container is gone) and not the running pod's", l)
	}
	if imgs := ctr("images", "ls", "-q"); strings.Contains(imgs, "kobune.local/ingress:1.0") {
		t.Errorf("the unused ingress image is still there:\n%s", imgs)
	}
	if c := ctr("containers", "ls", "-q"); strings.Contains(c, done.UID) {
		t.Errorf("the finished pod's dead container is still there:\n%s", c)
	}
	if s := ctr("snapshots", "ls"); strings.Contains(s, done.UID) {
		t.Errorf("the finished pod's writable layer is still there:\n%s", s)
	}
	// The pod itself stays, with its status; its logs went with its container.
	if p, err := pods.Get(ctx, "default", "done"); err != nil || p.Status.Phase != core.PodSucceeded {
		t.Errorf("finished pod after the collection: %v, %v", p, err)
	}
	if out, err := podLogs(ctx, srv.Client, "done"); err == nil || !strings.Contains(err.Error(), "were removed after it finished") {
		t.Errorf("logs of the collected pod: %q, %v; want an error saying its containers were removed", out, err)
	}
	n, err := client.For[*core.Node](srv.Client).Get(ctx, "", "node-1")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range n.Status.Conditions {
		if c.Type == core.NodeDiskPressure && c.Status != meta.ConditionTrue {
			t.Errorf("DiskPressure %s while the threshold holds", c.Status)
		}
	}
}

// podLogs reads a pod's whole log.
func podLogs(ctx context.Context, c *client.Client, name string) (string, error) {
	r, err := c.PodLogs(ctx, "default", name, client.LogOptions{})
	if err != nil {
		return "", err
	}
	b, err := io.ReadAll(r)
	return string(b), err
}
