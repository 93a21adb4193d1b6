package ctl_test

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/api/resource"
	"github.com/kobune/kobune/client"
	testcluster "github.com/kobune/kobune/test/cluster"
)

// TestResourceQuotas, on a cluster with kobune-controller: quotas are
// validated with Kubernetes' messages; once the controller has counted a
// namespace, a pod that names no request a quota tracks, a pod over the
// compute quota, a ConfigMap, a NodePort Service and a Deployment over
// their counts are refused with Kubernetes' "exceeded quota" message and
// not stored (a dry run too); a BestEffort-scoped quota counts only
// BestEffort pods; usage shows in status, get and describe; deleting a
// pod gives its share back; and 20 concurrent creates against a quota of
// 5 pods store exactly 5.
func TestResourceQuotas(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cl := testcluster.Start(t, ctx, testcluster.Options{Nodes: 1})
	s := cl.Server
	apply := func(y string) run {
		t.Helper()
		return kobectl(t, s, y, "apply", "-f", "-")
	}
	if r := apply("apiVersion: v1\nkind: Namespace\nmetadata: {name: team}\n---\napiVersion: v1\nkind: Namespace\nmetadata: {name: race}\n"); r.code != 0 {
		t.Fatalf("namespaces: %+v", r)
	}
	c := cl.Client
	if _, err := client.WaitFor(ctx, client.For[*core.ConfigMap](c), "team", core.RootCAConfigMapName, 0, func(*core.ConfigMap, bool) bool { return true }); err != nil {
		t.Fatalf("kube-root-ca.crt in team: %v", err)
	}
	bad := "apiVersion: v1\nkind: ResourceQuota\nmetadata: {name: bad, namespace: team}\nspec:\n  hard: {gpus: 1, count/widgets: 2, services: 1, pods: 1.5}\n  scopes: [BestEffort, NotBestEffort, Sometimes]\n"
	r := apply(bad)
	for _, want := range []string{`spec.hard[gpus]: Invalid value: "gpus": not a resource Kobune's quota counts`,
		`spec.hard[count/widgets]: Invalid value: "count/widgets": count/ must name a resource the API serves`,
		`spec.hard[services]: Invalid value: "services": unsupported scope applied to resource`,
		`spec.hard[pods]: Invalid value: "1500m": must be an integer`, `spec.scopes[2]: Unsupported value: "Sometimes"`, "conflicting scopes"} {
		if r.code == 0 || !strings.Contains(r.stderr, want) {
			t.Errorf("an invalid quota: %d, want %q in %q", r.code, want, r.stderr)
		}
	}
	quotas := `apiVersion: v1
kind: ResourceQuota
metadata: {name: compute, namespace: team}
spec:
  hard: {pods: "4", requests.cpu: "1", requests.memory: 1Gi, limits.cpu: "2", limits.memory: 2Gi}
  scopes: [NotBestEffort]
---
apiVersion: v1
kind: ResourceQuota
metadata: {name: besteffort, namespace: team}
spec:
  hard: {pods: "1"}
  scopes: [BestEffort]
---
apiVersion: v1
kind: ResourceQuota
metadata: {name: objects, namespace: team}
spec:
  hard: {configmaps: "2", services.nodeports: "0", count/deployments.apps: "1", resourcequotas: "3", replicationcontrollers: "1", requests.example.com/dongle: "2"}
`
	if r := apply(quotas); r.code != 0 {
		t.Fatalf("apply quotas: %+v", r)
	}
	qs := client.For[*core.ResourceQuota](c)
	counted := func(ns, name string) *core.ResourceQuota {
		t.Helper()
		q, err := client.WaitFor(ctx, qs, ns, name, 0, func(q *core.ResourceQuota, _ bool) bool { return len(q.Status.Used) == len(q.Spec.Hard) })
		if err != nil {
			t.Fatalf("quota %s/%s never counted: %v", ns, name, err)
		}
		return q
	}
	// The namespace's kube-root-ca.crt counts as a ConfigMap.
	if q := counted("team", "objects"); q.Status.Used["configmaps"].String() != "1" {
		t.Errorf("objects used %v, want configmaps=1 (kube-root-ca.crt)", q.Status.Used)
	}
	// The quotas count themselves (Kubernetes' resourcequotas);
	// ReplicationControllers, which Kobune does not serve, are none; an
	// extended resource is the sum of the pods' requests of it (none yet).
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		q, err := qs.Get(ctx, "team", "objects")
		if err == nil && q.Status.Used["resourcequotas"].String() == "3" && q.Status.Used["replicationcontrollers"].String() == "0" &&
			q.Status.Used["requests.example.com/dongle"].String() == "0" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("objects used %v, want resourcequotas=3, replicationcontrollers=0, requests.example.com/dongle=0", q.Status.Used)
		}
	}
	counted("team", "compute")
	counted("team", "besteffort")
	pod := func(name, resources string) string {
		return "apiVersion: v1\nkind: Pod\nmetadata: {name: " + name + ", namespace: team}\nspec:\n  containers:\n  - {name: app, image: kobune.local/labapp:1.0" + resources + "}\n"
	}
	sized := func(cpu string) string {
		return ", resources: {requests: {cpu: " + cpu + ", memory: 100Mi}, limits: {cpu: " + cpu + ", memory: 100Mi}}"
	}
	refused := func(what, kind, name, y, want string, args ...string) {
		t.Helper()
		r := kobectl(t, s, y, append([]string{"apply", "-f", "-"}, args...)...)
		if r.code == 0 || !strings.Contains(r.stderr, want) {
			t.Errorf("%s: %d %q, want %q", what, r.code, r.stderr, want)
		}
		if g := kobectl(t, s, "", "get", kind, name, "-n", "team"); g.code == 0 {
			t.Errorf("%s: %s/%s was stored although refused", what, kind, name)
		}
	}
	refused("no limits", "pod", "half", pod("half", ", resources: {requests: {cpu: 100m}}"),
		`pods "half" is forbidden: failed quota: compute: must specify limits.cpu for: app; limits.memory for: app; requests.memory for: app`)
	if r := apply(pod("a", sized("600m"))); r.code != 0 {
		t.Fatalf("pod a within the quota: %+v", r)
	}
	refused("over requests.cpu", "pod", "b", pod("b", sized("600m")),
		`pods "b" is forbidden: exceeded quota: compute, requested: requests.cpu=600m, used: requests.cpu=600m, limited: requests.cpu=1`)
	refused("over, dry run", "pod", "b", pod("b", sized("600m")), "exceeded quota: compute", "--dry-run=server")
	// BestEffort pods go to their own quota only.
	if r := apply(pod("be1", "")); r.code != 0 {
		t.Fatalf("a BestEffort pod: %+v", r)
	}
	refused("second BestEffort pod", "pod", "be2", pod("be2", ""), "exceeded quota: besteffort, requested: pods=1, used: pods=1, limited: pods=1")
	refused("configmap", "configmap", "two", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: one, namespace: team}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: two, namespace: team}\n",
		`configmaps "two" is forbidden: exceeded quota: objects, requested: configmaps=1, used: configmaps=2, limited: configmaps=2`)
	refused("nodeport", "service", "np", "apiVersion: v1\nkind: Service\nmetadata: {name: np, namespace: team}\nspec: {type: NodePort, selector: {app: x}, ports: [{port: 80}]}\n",
		"exceeded quota: objects, requested: services.nodeports=1, used: services.nodeports=0, limited: services.nodeports=0")
	if r := apply("apiVersion: v1\nkind: Service\nmetadata: {name: cip, namespace: team}\nspec: {selector: {app: x}, ports: [{port: 80}]}\n"); r.code != 0 {
		t.Errorf("a ClusterIP Service under services.nodeports=0: %+v", r)
	}
	deploy := func(name string) string {
		return "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: " + name + ", namespace: team}\nspec:\n  replicas: 0\n  selector: {matchLabels: {app: " + name +
			"}}\n  template:\n    metadata: {labels: {app: " + name + "}}\n    spec: {containers: [{name: app, image: kobune.local/labapp:1.0}]}\n"
	}
	if r := apply(deploy("d1")); r.code != 0 {
		t.Fatalf("deployment d1: %+v", r)
	}
	refused("second deployment", "deployment", "d2", deploy("d2"), "exceeded quota: objects, requested: count/deployments.apps=1, used: count/deployments.apps=1, limited: count/deployments.apps=1")

	// Usage as status, get and describe show it.
	q, _ := qs.Get(ctx, "team", "compute")
	for n, want := range map[resource.Name]string{"pods": "1", "requests.cpu": "600m", "limits.memory": "100Mi"} {
		if got := q.Status.Used[n]; got.String() != want {
			t.Errorf("compute used[%s] = %s, want %s (%v)", n, got.String(), want, q.Status.Used)
		}
	}
	if r := kobectl(t, s, "", "get", "quota", "compute", "-n", "team"); !strings.Contains(r.stdout, "pods: 1/4, requests.cpu: 600m/1, requests.memory: 100Mi/1Gi") ||
		!strings.Contains(r.stdout, "limits.cpu: 600m/2, limits.memory: 100Mi/2Gi") {
		t.Errorf("get quota:\n%s%s", r.stdout, r.stderr)
	}
	r = kobectl(t, s, "", "describe", "quota", "compute", "-n", "team")
	flat := regexp.MustCompile(` +`).ReplaceAllString(r.stdout, " ")
	for _, want := range []string{"Scopes: NotBestEffort", "Resource Used Hard", "requests.cpu 600m 1", "pods 1 4"} {
		if !strings.Contains(flat, want) {
			t.Errorf("describe quota lacks %q:\n%s%s", want, r.stdout, r.stderr)
		}
	}
	// describe namespace: every quota of the namespace with its usage.
	r = kobectl(t, s, "", "describe", "ns", "team")
	flat = regexp.MustCompile(` +`).ReplaceAllString(r.stdout, " ")
	for _, want := range []string{"\nResource Quotas\n Name: besteffort\n", "\n Name: compute\n Scopes: NotBestEffort\n Resource Used Hard\n", "\n requests.cpu 600m 1\n", "\n pods 1 4\n", "\nNo LimitRange resource.\n"} {
		if r.code != 0 || !strings.Contains(flat, want) {
			t.Errorf("describe namespace lacks %q:\n%s%s", want, r.stdout, r.stderr)
		}
	}

	// Deleting pod a gives its share back (the controller's recount); then
	// b fits.
	if r := kobectl(t, s, "", "delete", "pod", "a", "-n", "team", "--grace-period=0", "--force"); r.code != 0 {
		t.Fatalf("delete a: %+v", r)
	}
	if _, err := client.WaitFor(ctx, qs, "team", "compute", 0, func(q *core.ResourceQuota, _ bool) bool {
		u := q.Status.Used["requests.cpu"]
		return u.IsZero()
	}); err != nil {
		t.Fatalf("requests.cpu never given back after the pod was deleted: %v", err)
	}
	if r := apply(pod("b", sized("600m"))); r.code != 0 {
		t.Errorf("pod b after a was deleted: %+v", r)
	}

	// Concurrent creates cannot both take the last unit.
	if r := apply("apiVersion: v1\nkind: ResourceQuota\nmetadata: {name: five, namespace: race}\nspec: {hard: {pods: \"5\"}}\n"); r.code != 0 {
		t.Fatalf("quota five: %+v", r)
	}
	counted("race", "five")
	pods := client.For[*core.Pod](c)
	var wg sync.WaitGroup
	var mu sync.Mutex
	created, refusedN := 0, 0
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := pods.Create(ctx, &core.Pod{ObjectMeta: meta.ObjectMeta{Name: fmt.Sprintf("p%d", i), Namespace: "race"},
				Spec: core.PodSpec{Containers: []core.Container{{Name: "app", Image: "kobune.local/labapp:1.0"}}}})
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				created++
			case strings.Contains(err.Error(), "exceeded quota: five"):
				refusedN++
			default:
				t.Errorf("create p%d: %v", i, err)
			}
		}()
	}
	wg.Wait()
	stored, _, _ := pods.List(ctx, "race", client.ListOptions{})
	q, _ = qs.Get(ctx, "race", "five")
	if created != 5 || refusedN != 15 || len(stored) != 5 || q.Status.Used["pods"].String() != "5" {
		t.Errorf("20 concurrent creates under pods=5: %d created, %d refused, %d stored, used %v", created, refusedN, len(stored), q.Status.Used)
	}
}
