package controllermanager_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/kobune/kobune/api/apps"
	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/client"
	testcluster "github.com/kobune/kobune/test/cluster"
)

// TestRolloutsInQuickSuccession changes the template 40 times, often
// before the previous rollout finished, and checks every pod change
// against replicas + maxSurge. (It caught a stale ReplicaSet status that
// made the clean-up of unavailable replicas scale an old ReplicaSet back
// up, so that it created pods mid-rollout.)
func TestRolloutsInQuickSuccession(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cl := testcluster.Start(t, ctx, testcluster.Options{Nodes: 3})
	c := cl.Client
	d := newDeployment("quick", 6, "kobune.local/labapp:v0", meta.FromInt(2), meta.FromInt(1))
	if _, err := client.For[*apps.Deployment](c).Create(ctx, d); err != nil {
		t.Fatal(err)
	}
	rolledOut(t, ctx, c, "quick")
	_, rev, err := client.For[*core.Pod](c).List(ctx, "default", client.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := client.For[*core.Pod](c).Watch(ctx, "default", client.ListOptions{LabelSelector: "app=quick"}, rev)
	if err != nil {
		t.Fatal(err)
	}
	state := map[string]*core.Pod{}
	for _, p := range activePods(t, ctx, c, "quick") {
		state[p.Name] = p
	}
	var mu sync.Mutex
	var viol []string
	go func() {
		for ev := range w.Events {
			mu.Lock()
			if ev.Type == "DELETED" || ev.Object.DeletionTimestamp != nil {
				delete(state, ev.Object.Name)
			} else {
				state[ev.Object.Name] = ev.Object
			}
			if len(state) > 8 {
				owners := map[string]int{}
				for _, p := range state {
					owners[meta.ControllerOf(p).Name]++
				}
				viol = append(viol, fmt.Sprintf("%d after %s %s %v", len(state), ev.Type, ev.Object.Name, owners))
			}
			mu.Unlock()
		}
	}()
	rng := rand.New(rand.NewPCG(1, 2))
	for round := 1; round <= 40; round++ {
		update(t, ctx, c, "quick", func(d *apps.Deployment) {
			d.Spec.Template.Spec.Containers[0].Image = fmt.Sprintf("kobune.local/labapp:v%d", round)
		})
		if rng.IntN(2) == 0 {
			rolledOut(t, ctx, c, "quick")
		} else {
			time.Sleep(time.Duration(rng.IntN(300)) * time.Millisecond)
		}
	}
	rolledOut(t, ctx, c, "quick")
	mu.Lock()
	defer mu.Unlock()
	if len(viol) > 0 {
		t.Errorf("%d pod changes above replicas + maxSurge (8); first: %v", len(viol), viol[:min(5, len(viol))])
	}
}
