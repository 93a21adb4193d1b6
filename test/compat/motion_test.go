package compat

import (
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestKubectlResourcesInMotion: the real kubectl's commands for resources
// at run time against an in-process cluster with simulated nodes — create
// quota and a refusal when a scale-up would pass it, autoscale (an
// autoscaling/v2 HorizontalPodAutoscaler and its table), create pdb and
// the budget's status, drain through the eviction API (the pods move,
// then a drain the budget forbids is refused with Kubernetes' message),
// uncordon.
func TestKubectlResourcesInMotion(t *testing.T) {
	s := newSession(t, 2)
	s.expect([]string{"create", "namespace", "shop"}, "namespace/shop created")
	s.expect([]string{"create", "quota", "objects", "-n", "shop", "--hard=pods=4,count/deployments.apps=1"}, "resourcequota/objects created")
	s.expect([]string{"create", "deployment", "web", "-n", "shop", "--image=kobune.local/labapp:1.0", "--replicas=3"}, "deployment.apps/web created")
	s.expect([]string{"rollout", "status", "deployment/web", "-n", "shop", "--timeout=60s"}, "successfully rolled out")
	if r := s.run("", "create", "deployment", "other", "-n", "shop", "--image=kobune.local/labapp:1.0"); r.code == 0 ||
		!strings.Contains(r.stderr, `deployments.apps "other" is forbidden: exceeded quota: objects, requested: count/deployments.apps=1, used: count/deployments.apps=1, limited: count/deployments.apps=1`) {
		t.Errorf("a second Deployment past the quota: exit %d, stderr %q", r.code, r.stderr)
	}
	// Scaled to 5, the fifth pod is refused: the ReplicaSet says so.
	s.expect([]string{"scale", "deployment", "web", "-n", "shop", "--replicas=5"}, "deployment.apps/web scaled")
	s.expect([]string{"wait", "--for=jsonpath={.status.used.pods}=4", "quota/objects", "-n", "shop", "--timeout=60s"}, "condition met")
	s.expect([]string{"describe", "quota", "objects", "-n", "shop"}, "Resource", "Used", "Hard", "pods")
	// Both the ReplicaSet and its Deployment say why (ReplicaFailure).
	s.expect([]string{"wait", "--for=condition=ReplicaFailure", "replicaset", "-l", "app=web", "-n", "shop", "--timeout=60s"}, "condition met")
	s.expect([]string{"wait", "--for=condition=ReplicaFailure", "deployment/web", "-n", "shop", "--timeout=60s"}, "condition met")
	s.expect([]string{"get", "deployment", "web", "-n", "shop", "-o", `jsonpath={.status.conditions[?(@.type=="ReplicaFailure")].message}`}, "forbidden: exceeded quota: objects, requested: pods=1, used: pods=4, limited: pods=4")
	s.expect([]string{"describe", "replicaset", "-l", "app=web", "-n", "shop"}, "ReplicaFailure", "FailedCreate", "exceeded quota: objects")
	s.expect([]string{"scale", "deployment", "web", "-n", "shop", "--replicas=3"}, "deployment.apps/web scaled")
	s.expect([]string{"rollout", "status", "deployment/web", "-n", "shop", "--timeout=60s"}, "successfully rolled out")
	// The condition goes once the ReplicaSet's passes succeed again.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(500 * time.Millisecond) {
		out := s.ok("", "get", "deployment,replicaset", "-l", "app=web", "-n", "shop", "-o", `jsonpath={.items[*].status.conditions[?(@.type=="ReplicaFailure")].type}`)
		if out == "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("ReplicaFailure still there 30 s after the scale-down: %q", out)
		}
	}

	// autoscale: an autoscaling/v2 HorizontalPodAutoscaler. The simulated
	// nodes measure nothing and the pods request no CPU, so it says it
	// cannot compute a utilization.
	s.expect([]string{"autoscale", "deployment", "web", "-n", "shop", "--min=2", "--max=5", "--cpu-percent=50"}, "horizontalpodautoscaler.autoscaling/web autoscaled")
	if out := s.ok("", "get", "hpa", "web", "-n", "shop"); !regexp.MustCompile(`(?m)^web\s+Deployment/web\s+.*50%\s+2\s+5\s+\d+\s+`).MatchString(out) {
		t.Errorf("kubectl get hpa:\n%s", out)
	}
	s.expect([]string{"get", "hpa", "web", "-n", "shop", "-o", "jsonpath={.apiVersion}"}, "autoscaling/v2")
	s.expect([]string{"wait", "--for=condition=ScalingActive=False", "hpa/web", "-n", "shop", "--timeout=60s"}, "condition met")
	s.expect([]string{"describe", "hpa", "web", "-n", "shop"}, "Reference:", "Deployment/web", "Min replicas:", "2", "Max replicas:", "5", "ScalingActive")
	s.expect([]string{"delete", "hpa", "web", "-n", "shop"}, `horizontalpodautoscaler.autoscaling "web" deleted`)

	// A budget of two out of three: one disruption allowed.
	s.expect([]string{"create", "pdb", "web", "-n", "shop", "--selector=app=web", "--min-available=2"}, "poddisruptionbudget.policy/web created")
	s.expect([]string{"wait", "--for=jsonpath={.status.disruptionsAllowed}=1", "pdb/web", "-n", "shop", "--timeout=60s"}, "condition met")
	if out := s.ok("", "get", "pdb", "-n", "shop"); !regexp.MustCompile(`(?m)^NAME\s+MIN AVAILABLE\s+MAX UNAVAILABLE\s+ALLOWED DISRUPTIONS\s+AGE\nweb\s+2\s+N/A\s+1\s+`).MatchString(out) {
		t.Errorf("kubectl get pdb:\n%s", out)
	}

	// drain node-1: cordoned, its pods evicted one budget-allowed step at a
	// time, all of them on node-2 afterwards.
	r := s.run("", "drain", "node-1", "--ignore-daemonsets", "--timeout=90s")
	if all := r.stdout + r.stderr; r.code != 0 || !strings.Contains(all, "node/node-1 cordoned") || !strings.Contains(all, "node/node-1 drained") {
		t.Fatalf("kubectl drain node-1: exit %d\n%s", r.code, all)
	}
	s.expect([]string{"rollout", "status", "deployment/web", "-n", "shop", "--timeout=60s"}, "successfully rolled out")
	if out := s.ok("", "get", "pods", "-n", "shop", "-o", "jsonpath={range .items[*]}{.spec.nodeName}{\"\\n\"}{end}"); strings.Contains(out, "node-1") || strings.Count(out, "node-2") != 3 {
		t.Errorf("pods' nodes after the drain of node-1:\n%s", out)
	}
	s.expect([]string{"get", "node", "node-1", "-o", "jsonpath={.spec.unschedulable}"}, "true")
	s.expect([]string{"uncordon", "node-1"}, "node/node-1 uncordoned")

	// A budget that allows nothing: draining node-2 is refused, evictions
	// retried until the timeout, each refusal in Kubernetes' words.
	s.expect([]string{"patch", "pdb", "web", "-n", "shop", "--type=merge", "-p", `{"spec":{"minAvailable":3}}`}, "poddisruptionbudget.policy/web patched")
	s.expect([]string{"wait", "--for=jsonpath={.status.disruptionsAllowed}=0", "pdb/web", "-n", "shop", "--timeout=60s"}, "condition met")
	r = s.run("", "drain", "node-2", "--ignore-daemonsets", "--timeout=8s")
	if all := r.stdout + r.stderr; r.code == 0 || !strings.Contains(all, "Cannot evict pod as it would violate the pod's disruption budget.") {
		t.Errorf("kubectl drain node-2 against a budget that allows nothing: exit %d\n%s", r.code, all)
	}
	if out := s.ok("", "get", "pods", "-n", "shop", "--no-headers"); strings.Count(out, "Running") != 3 {
		t.Errorf("pods after the refused drain: want 3 Running:\n%s", out)
	}
	s.expect([]string{"uncordon", "node-2"}, "node/node-2 uncordoned")
}
