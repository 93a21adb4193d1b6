package ctl_test

import (
	"context"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/api/policy"
	"github.com/kobune/kobune/client"
	"github.com/kobune/kobune/ctl/drain"
	testcluster "github.com/kobune/kobune/test/cluster"
)

// TestDisruptionBudgetsAndDrain, on a cluster of two simulated nodes with
// kobune-controller and the scheduler: the disruption controller counts
// budgets (an integer minAvailable, a percentage, maxUnavailable); the
// eviction subresource refuses with 429 and the budget named when the
// budget would break, and lets a pod go when it allows; kobectl drain
// refuses DaemonSet pods and bare pods without its flags, then evicts
// node-1's pods one budget step at a time — never fewer than minAvailable
// Ready pods at any change a watch sees — and leaves the node cordoned.
func TestDisruptionBudgetsAndDrain(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cl := testcluster.Start(t, ctx, testcluster.Options{Nodes: 2})
	s, c := cl.Server, cl.Client
	drain.RetryInterval = 200 * time.Millisecond
	if r := kobectl(t, s, "", "create", "deployment", "web", "--image=kobune.local/labapp:1.0", "--replicas=4"); r.code != 0 {
		t.Fatalf("create deployment: %+v", r)
	}
	// kubectl create pdb's flags, each wrong one named; nothing stored.
	for _, bad := range []struct{ args []string }{
		{[]string{"--min-available=3"}},
		{[]string{"--selector=app=web"}},
		{[]string{"--selector=app=web", "--min-available=3", "--max-unavailable=1"}},
		{[]string{"--selector=app in (web", "--min-available=3"}},
		{[]string{"--selector=app=web", "--max-unavailable=half"}},
		{[]string{"--selector=app=web", "--min-available=-1"}},
	} {
		if r := kobectl(t, s, "", append([]string{"create", "pdb", "web"}, bad.args...)...); r.code == 0 ||
			!regexp.MustCompile(`--selector|--min-available|--max-unavailable`).MatchString(r.stderr) {
			t.Errorf("create pdb %v: %+v, want the flag named", bad.args, r)
		}
	}
	if r := kobectl(t, s, "", "get", "pdb"); r.code != 0 || strings.Contains(r.stdout, "web") {
		t.Errorf("a refused create pdb stored a budget: %+v", r)
	}
	if r := kobectl(t, s, "", "create", "pdb", "web", "--selector=app=web", "--min-available=3", "--dry-run=client", "-o", "yaml"); r.code != 0 ||
		!strings.Contains(r.stdout, "minAvailable: 3\n") || !strings.Contains(r.stdout, "matchLabels:\n      app: web") {
		t.Errorf("create pdb --dry-run=client -o yaml: %+v", r)
	}
	if r := kobectl(t, s, "", "create", "pdb", "web", "--selector=app=web", "--min-available=3"); r.code != 0 || r.stdout != "poddisruptionbudget.policy/web created\n" {
		t.Fatalf("create pdb: %+v", r)
	}
	if r := kobectl(t, s, "", "create", "poddisruptionbudget", "half", "--selector=app in (nobody),!canary", "--min-available=50%"); r.code != 0 {
		t.Fatalf("create poddisruptionbudget: %+v", r)
	}
	if r := kobectl(t, s, "apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {name: bad}\nspec: {minAvailable: 1, maxUnavailable: \"120%\"}\n", "apply", "-f", "-"); r.code == 0 ||
		!strings.Contains(r.stderr, "minAvailable and maxUnavailable cannot be both set") || !strings.Contains(r.stderr, "must not be greater than 100%") {
		t.Errorf("an invalid budget: %+v", r)
	}
	pdbs := client.For[*policy.PodDisruptionBudget](c)
	b, err := client.WaitFor(ctx, pdbs, "default", "web", 0, func(b *policy.PodDisruptionBudget, _ bool) bool { return b.Status.CurrentHealthy == 4 })
	if err != nil {
		t.Fatalf("the budget never counted 4 healthy pods: %v", err)
	}
	if b.Status.ExpectedPods != 4 || b.Status.DesiredHealthy != 3 || b.Status.DisruptionsAllowed != 1 {
		t.Errorf("minAvailable 3 of 4: %+v", b.Status)
	}
	// describe: kubectl's sections, the selector in its string form.
	if r := kobectl(t, s, "", "describe", "pdb", "web"); !regexp.MustCompile(`(?s)Min available:\s+3\n.*Selector:\s+app=web\n.*Allowed disruptions:\s+1\n\s+Current:\s+4\n\s+Desired:\s+3\n\s+Total:\s+4\n`).MatchString(r.stdout) {
		t.Errorf("describe pdb web:\n%s%s", r.stdout, r.stderr)
	}
	if r := kobectl(t, s, "", "describe", "pdb", "half"); !regexp.MustCompile(`Min available:\s+50%\nSelector:\s+app in \(nobody\),!canary\n`).MatchString(r.stdout) {
		t.Errorf("describe pdb half:\n%s%s", r.stdout, r.stderr)
	}
	// maxUnavailable 50% of the Deployment's 4 replicas: 2 must stay.
	if r := kobectl(t, s, "", "patch", "pdb", "web", "--type=merge", "-p", `{"spec":{"minAvailable":null,"maxUnavailable":"50%"}}`); r.code != 0 {
		t.Fatalf("patch budget: %+v", r)
	}
	if _, err := client.WaitFor(ctx, pdbs, "default", "web", 0, func(b *policy.PodDisruptionBudget, _ bool) bool {
		return b.Status.DesiredHealthy == 2 && b.Status.DisruptionsAllowed == 2 && b.Status.ObservedGeneration == b.Generation
	}); err != nil {
		t.Fatalf("maxUnavailable 50%% of 4: %v", err)
	}
	if r := kobectl(t, s, "", "patch", "pdb", "web", "--type=merge", "-p", `{"spec":{"maxUnavailable":null,"minAvailable":3}}`); r.code != 0 {
		t.Fatalf("patch budget back: %+v", r)
	}
	if _, err := client.WaitFor(ctx, pdbs, "default", "web", 0, func(b *policy.PodDisruptionBudget, _ bool) bool {
		return b.Status.DesiredHealthy == 3 && b.Status.DisruptionsAllowed == 1 && b.Status.ObservedGeneration == b.Generation
	}); err != nil {
		t.Fatalf("back to minAvailable 3: %v", err)
	}

	// The eviction subresource: the first one is allowed, a second one at
	// once is not (the replacement is not Ready yet).
	pods := client.For[*core.Pod](c)
	list, _, _ := pods.List(ctx, "default", client.ListOptions{LabelSelector: "app=web"})
	if len(list) != 4 {
		t.Fatalf("%d pods", len(list))
	}
	if err := c.Evict(ctx, "default", list[0].Name, nil); err != nil {
		t.Fatalf("first eviction: %v", err)
	}
	err = c.Evict(ctx, "default", list[1].Name, nil)
	if !client.IsTooManyRequests(err) || !strings.Contains(err.Error(), "Cannot evict pod as it would violate the pod's disruption budget.") || !strings.Contains(err.Error(), "the disruption budget web needs 3 healthy pods") {
		t.Errorf("second eviction at once: %v, want 429 naming the budget", err)
	}
	if p, err := pods.Get(ctx, "default", list[1].Name); err != nil || p.DeletionTimestamp != nil {
		t.Errorf("the refused pod was touched: %v %+v", err, p)
	}

	// Drain refuses what it must not evict without its flags.
	if r := kobectl(t, s, "apiVersion: v1\nkind: Pod\nmetadata: {name: bare}\nspec: {nodeName: node-1, containers: [{name: app, image: kobune.local/labapp:1.0}]}\n", "apply", "-f", "-"); r.code != 0 {
		t.Fatalf("bare pod: %+v", r)
	}
	r := kobectl(t, s, "", "drain", "node-1")
	if r.code == 0 || !strings.Contains(r.stderr, "cannot delete Pods that declare no controller (use --force to override): default/bare") {
		t.Errorf("drain without --force: %+v", r)
	}
	// Watch Ready web pods while node-1 drains: never below 3.
	var mu sync.Mutex
	ready := map[string]bool{}
	lowest := 100
	w, err := pods.Watch(ctx, "default", client.ListOptions{LabelSelector: "app=web"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	watching := make(chan struct{})
	go func() {
		defer close(watching)
		for ev := range w.Events {
			p := ev.Object
			mu.Lock()
			ready[p.Name] = ev.Type != "DELETED" && p.DeletionTimestamp == nil && podIsReady(p)
			n := 0
			for _, r := range ready {
				if r {
					n++
				}
			}
			if n < lowest && len(ready) >= 4 {
				lowest = n
			}
			mu.Unlock()
		}
	}()
	if _, err := client.WaitFor(ctx, pdbs, "default", "web", 0, func(b *policy.PodDisruptionBudget, _ bool) bool { return b.Status.CurrentHealthy == 4 }); err != nil {
		t.Fatalf("the evicted pod's replacement never became healthy: %v", err)
	}
	r = kobectl(t, s, "", "drain", "node-1", "--force", "--timeout=90s")
	if r.code != 0 || !strings.Contains(r.stdout, "node/node-1 drained") || !strings.Contains(r.stdout, "evicting pod default/") {
		t.Fatalf("drain: %+v", r)
	}
	t.Logf("drain:\n%s%s", r.stdout, r.stderr)
	left, _, _ := pods.List(ctx, "", client.ListOptions{FieldSelector: "spec.nodeName=node-1"})
	for _, p := range left {
		if p.DeletionTimestamp == nil {
			t.Errorf("pod %s/%s still on the drained node", p.Namespace, p.Name)
		}
	}
	if n, _ := client.For[*core.Node](c).Get(ctx, "", "node-1"); !n.Spec.Unschedulable {
		t.Error("the drained node is not cordoned")
	}
	time.Sleep(500 * time.Millisecond)
	mu.Lock()
	if lowest < 3 {
		t.Errorf("during the drain only %d web pods were Ready at one point; the budget says 3", lowest)
	}
	mu.Unlock()
	cancel()
	<-watching
	_ = meta.ConditionTrue
}

func podIsReady(p *core.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == core.PodReady {
			return c.Status == meta.ConditionTrue
		}
	}
	return false
}
