package controllermanager_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/kobune/kobune/api/apps"
	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/client"
	testcluster "github.com/kobune/kobune/test/cluster"
)

// TestChaosKillControllerDuringRollouts runs the kobune-controller binary
// against an in-process cluster and, 20 times in a row, starts a rolling
// update, kills the controller with SIGKILL at a random moment, starts it
// again and waits for the rollout to converge. A watch checks every pod
// change throughout: never more than replicas + maxSurge pods, never fewer
// than replicas − maxUnavailable ready ones. After each convergence: exactly
// the replicas, all of the current template, every pod owned by a
// ReplicaSet of the Deployment, one ReplicaSet per template.
func TestChaosKillControllerDuringRollouts(t *testing.T) {
	if testing.Short() {
		t.Skip("builds kobune-controller and runs 20 rollouts")
	}
	const (
		replicas = 6
		surge    = 2
		unavail  = 1
		rounds   = 20
	)
	bin := filepath.Join(t.TempDir(), "kobune-controller")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/kobune/kobune/cmd/kobune-controller").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cl := testcluster.Start(t, ctx, testcluster.Options{Nodes: 3, NoControllers: true})
	c := cl.Client

	var mu sync.Mutex
	var current *exec.Cmd
	start := func() {
		// With leader election, as it runs for real: a new process acts
		// only once the dead one's Lease has expired, by which time the
		// requests the dead one had in flight have landed and are in the
		// new process's first lists. (Without it, a restart within
		// milliseconds can list before those land and act on them twice
		// for a moment.)
		// No health port: a lab on this host holds 127.0.0.1:10257.
		cmd := exec.Command(bin, "--kubeconfig", cl.Kubeconfig("controller"), "--metrics-listen", "", "--leader-elect",
			"--leader-elect-lease-duration", "2s", "--leader-elect-renew-deadline", "1500ms", "--leader-elect-retry-period", "300ms")
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		current = cmd
		mu.Unlock()
	}
	kill := func() {
		mu.Lock()
		defer mu.Unlock()
		_ = current.Process.Signal(syscall.SIGKILL) // our own child, by its PID
		_ = current.Wait()
	}
	t.Cleanup(kill)
	start()

	d := newDeployment("chaos", replicas, "kobune.local/labapp:v0", meta.FromInt(surge), meta.FromInt(unavail))
	if _, err := client.For[*apps.Deployment](c).Create(ctx, d); err != nil {
		t.Fatal(err)
	}
	rolledOut(t, ctx, c, "chaos")

	// Every pod change from here on is checked against the bounds.
	_, rev, err := client.For[*core.Pod](c).List(ctx, "default", client.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := client.For[*core.Pod](c).Watch(ctx, "default", client.ListOptions{LabelSelector: "app=chaos"}, rev)
	if err != nil {
		t.Fatal(err)
	}
	state := map[string]*core.Pod{}
	for _, p := range activePods(t, ctx, c, "chaos") {
		state[p.Name] = p
	}
	var violations []string
	var watchMu sync.Mutex
	events := 0
	go func() {
		for ev := range w.Events {
			watchMu.Lock()
			events++
			if ev.Type == "DELETED" || ev.Object.DeletionTimestamp != nil || ev.Object.Status.Phase == core.PodFailed {
				delete(state, ev.Object.Name)
			} else {
				state[ev.Object.Name] = ev.Object
			}
			ready := 0
			for _, p := range state {
				if isReady(p) {
					ready++
				}
			}
			if len(state) > replicas+surge || ready < replicas-unavail {
				owners := map[string]int{}
				for _, p := range state {
					if ref := meta.ControllerOf(p); ref != nil {
						owners[ref.Name]++
					}
				}
				v := fmt.Sprintf("%d pods, %d ready after %s %s (by ReplicaSet: %v)", len(state), ready, ev.Type, ev.Object.Name, owners)
				if len(violations) == 0 {
					rss, _, _ := client.For[*apps.ReplicaSet](c).List(ctx, "default", client.ListOptions{})
					for _, rs := range rss {
						if *rs.Spec.Replicas > 0 || rs.Status.Replicas > 0 {
							v += fmt.Sprintf(" [%s rev %s spec %d status %d/%d/%d gen %d/%d rv %s]", rs.Name, rs.Annotations[apps.RevisionAnnotation], *rs.Spec.Replicas,
								rs.Status.Replicas, rs.Status.ReadyReplicas, rs.Status.AvailableReplicas, rs.Generation, rs.Status.ObservedGeneration, rs.ResourceVersion)
						}
					}
				}
				violations = append(violations, v)
			}
			watchMu.Unlock()
		}
	}()

	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 5))
	for round := 1; round <= rounds; round++ {
		image := fmt.Sprintf("kobune.local/labapp:v%d", round)
		update(t, ctx, c, "chaos", func(d *apps.Deployment) { d.Spec.Template.Spec.Containers[0].Image = image })
		time.Sleep(time.Duration(rng.IntN(400)) * time.Millisecond)
		kill()
		start()
		rolledOut(t, ctx, c, "chaos")
		checkConverged(t, ctx, c, image, replicas)
	}
	watchMu.Lock()
	defer watchMu.Unlock()
	if len(violations) > 0 {
		t.Errorf("%d of %d observed pod changes left the bounds: %v", len(violations), events, violations)
	}
	t.Logf("%d rollouts, each with a SIGKILL of the controller; %d pod changes observed, all within bounds", rounds, events)
}

// checkConverged: exactly the replicas, all on the current image, each
// owned by a ReplicaSet of the Deployment; one ReplicaSet per template.
func checkConverged(t *testing.T, ctx context.Context, c *client.Client, image string, replicas int) {
	t.Helper()
	pods := activePods(t, ctx, c, "chaos")
	rss, _, err := client.For[*apps.ReplicaSet](c).List(ctx, "default", client.ListOptions{LabelSelector: "app=chaos"})
	if err != nil {
		t.Fatal(err)
	}
	d, err := client.For[*apps.Deployment](c).Get(ctx, "default", "chaos")
	if err != nil {
		t.Fatal(err)
	}
	byUID := map[string]*apps.ReplicaSet{}
	hashes := map[string]bool{}
	for _, rs := range rss {
		byUID[rs.UID] = rs
		if ref := meta.ControllerOf(rs); ref == nil || ref.UID != d.UID {
			t.Errorf("ReplicaSet %s is not owned by the Deployment", rs.Name)
		}
		h := rs.Labels[apps.PodTemplateHashLabel]
		if hashes[h] {
			t.Errorf("two ReplicaSets with template hash %s", h)
		}
		hashes[h] = true
	}
	if len(pods) != replicas {
		t.Errorf("%d pods after convergence, want %d", len(pods), replicas)
	}
	for _, p := range pods {
		ref := meta.ControllerOf(p)
		if ref == nil || byUID[ref.UID] == nil {
			t.Errorf("pod %s has no ReplicaSet of the Deployment as owner (an orphan)", p.Name)
		}
		if p.Spec.Containers[0].Image != image {
			t.Errorf("pod %s runs %s, want %s", p.Name, p.Spec.Containers[0].Image, image)
		}
	}
}
