package e2e

import (
	"context"
	"os"
	"os/exec"
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
// BestEffort, a Burstable and a Guaranteed pod that each allocate memory
// 15 s after they start; the agent reports MemoryPressure and evicts them
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
			Containers: []core.Container{{Name: "app", Image: "kobune.local/labapp:1.0", ImagePullPolicy: core.PullNever, Args: []string{"--alloc-mb", s.mb, "--alloc-after", "15s"}, Resources: s.resources}}}}); err != nil {
			t.Fatal(err)
		}
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

// TestDiskPressureCollectsImagesThenEvicts: an agent whose nodefs
// threshold is always crossed (nodefs.available<99.99%) reports
// DiskPressure, first deletes the images no container uses (the one its
// pod runs from stays), and only then evicts the pod, for
// ephemeral-storage.
func TestDiskPressureCollectsImagesThenEvicts(t *testing.T) {
	requireRoot(t)
	srv, nodes := startCluster(t, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	pods := client.For[*core.Pod](srv.Client)
	// The pod first, so that it is there when the agent starts judging.
	if _, err := pods.Create(ctx, &core.Pod{ObjectMeta: meta.ObjectMeta{Name: "app", Namespace: "default"}, Spec: core.PodSpec{NodeName: "node-1", RestartPolicy: core.RestartPolicyNever,
		Containers: []core.Container{{Name: "app", Image: "kobune.local/labapp:1.0", ImagePullPolicy: core.PullNever}}}}); err != nil {
		t.Fatal(err)
	}
	nodes[0].startAgent(t, "10.244.94.0/24", "--eviction-hard", "nodefs.available<99.99%", "--eviction-pressure-transition-period", "5s")
	images := func() string {
		out, _ := exec.Command("ctr", "-a", nodes[0].socket(), "-n", "kobune-e2e", "images", "ls", "-q").CombinedOutput()
		return string(out)
	}
	evicted := waitForPod(t, ctx, pods, "app", 0, func(p *core.Pod, _ bool) bool { return p.Status.Reason == "Evicted" })
	if !strings.Contains(evicted.Status.Message, "The node was low on resource: ephemeral-storage.") {
		t.Errorf("eviction message %q", evicted.Status.Message)
	}
	log, _ := os.ReadFile(filepath.Join(nodes[0].dir, "agent.log"))
	gc := strings.Index(string(log), "image garbage collection removed")
	ev := strings.Index(string(log), "evicting default/app")
	if gc < 0 || ev < 0 || gc > ev {
		t.Errorf("want image garbage collection before the eviction:\n%s", log)
	}
	if line := string(log)[gc:]; !strings.Contains(line[:strings.Index(line, "\n")], "kobune.local/ingress:1.0") || strings.Contains(line[:strings.Index(line, "\n")], "kobune.local/labapp:1.0") {
		t.Errorf("collected: %s, want the unused images and not the pod's", line[:strings.Index(line, "\n")])
	}
	if imgs := images(); strings.Contains(imgs, "kobune.local/ingress:1.0") {
		t.Errorf("the unused ingress image is still there:\n%s", imgs)
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
