package ctl_test

import (
	"strings"
	"testing"

	"github.com/kobune/kobune/apiserver/testserver"
)

// TestAutoscale: kobectl autoscale writes the HorizontalPodAutoscaler
// kubectl would (autoscaling/v2, Kubernetes' defaults for the behavior),
// get hpa prints kubectl's columns, and the metric types Kobune does not
// serve are refused with the field named.
func TestAutoscale(t *testing.T) {
	s := testserver.New(t)
	if r := kobectl(t, s, "", "create", "deployment", "web", "--image=kobune.local/labapp:1.0"); r.code != 0 {
		t.Fatalf("create deployment: %+v", r)
	}
	if r := kobectl(t, s, "", "autoscale", "deployment/web", "--min=2", "--max=5", "--cpu=50%", "--memory=256Mi"); r.code != 0 || r.stdout != "horizontalpodautoscaler.autoscaling/web autoscaled\n" {
		t.Fatalf("autoscale: %+v", r)
	}
	r := kobectl(t, s, "", "get", "hpa", "web", "-o", "jsonpath={.spec.minReplicas} {.spec.metrics[0].resource.target.averageUtilization} {.spec.metrics[1].resource.target.averageValue} {.spec.behavior.scaleDown.stabilizationWindowSeconds} {.spec.behavior.scaleUp.policies[0].value}")
	if r.stdout != "2 50 256Mi 300 4" {
		t.Errorf("the autoscaler as stored: %q %s", r.stdout, r.stderr)
	}
	r = kobectl(t, s, "", "get", "hpa")
	for _, want := range []string{"REFERENCE", "TARGETS", "Deployment/web", "cpu: <unknown>/50%, memory: <unknown>/256Mi"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("get hpa lacks %q:\n%s", want, r.stdout)
		}
	}
	if r := kobectl(t, s, "", "autoscale", "deployment/web", "--name=bad", "--max=0"); r.code == 0 || !strings.Contains(r.stderr, "--max is required") {
		t.Errorf("--max=0: %+v", r)
	}
	bad := "apiVersion: autoscaling/v2\nkind: HorizontalPodAutoscaler\nmetadata: {name: custom}\nspec:\n  scaleTargetRef: {kind: Deployment, name: web}\n  minReplicas: 3\n  maxReplicas: 2\n  metrics:\n  - type: Pods\n    pods: {metric: {name: requests_per_second}, target: {type: AverageValue, averageValue: 10}}\n"
	r = kobectl(t, s, bad, "apply", "-f", "-")
	for _, want := range []string{`spec.metrics[0].type: Invalid value: "Pods": not supported by Kobune`, "spec.maxReplicas: Invalid value: 2: must be greater than or equal to `minReplicas`"} {
		if r.code == 0 || !strings.Contains(r.stderr, want) {
			t.Errorf("an autoscaler with a Pods metric: want %q in %q", want, r.stderr)
		}
	}
}
