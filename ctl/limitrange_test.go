package ctl_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/kobune/kobune/apiserver/testserver"
)

// TestLimitRanges: a LimitRange is validated with Kubernetes' messages;
// its Container defaults fill in what a new pod's containers name none
// of (a default request from the default limit when none is given); a
// container outside min and max, over the limit-to-request ratio, a pod
// over a Pod range and a claim over a PersistentVolumeClaim range are
// refused with every violation named, and nothing is stored.
func TestLimitRanges(t *testing.T) {
	s := testserver.New(t)
	if r := kobectl(t, s, "apiVersion: v1\nkind: Namespace\nmetadata: {name: team}\n", "apply", "-f", "-"); r.code != 0 {
		t.Fatalf("namespace: %+v", r)
	}
	bad := "apiVersion: v1\nkind: LimitRange\nmetadata: {name: bad, namespace: team}\nspec:\n  limits:\n  - {type: Container, min: {cpu: 2}, max: {cpu: 1}}\n  - {type: Pod, default: {cpu: 1}}\n  - {type: Node}\n"
	r := kobectl(t, s, bad, "apply", "-f", "-")
	for _, want := range []string{`spec.limits[0].min[cpu]: Invalid value: "2": min value 2 is greater than max value 1`,
		"spec.limits[1].default: Forbidden: may not be specified when `type` is 'Pod'", `spec.limits[2].type: Unsupported value: "Node"`} {
		if r.code == 0 || !strings.Contains(r.stderr, want) {
			t.Errorf("an invalid LimitRange: %d, want %q in %q", r.code, want, r.stderr)
		}
	}
	ranges := `apiVersion: v1
kind: LimitRange
metadata: {name: containers, namespace: team}
spec:
  limits:
  - type: Container
    default: {cpu: 500m, memory: 128Mi}
    defaultRequest: {cpu: 100m}
    min: {cpu: 50m}
    max: {cpu: "1"}
    maxLimitRequestRatio: {memory: "2"}
  - type: Pod
    max: {cpu: 1500m}
  - type: PersistentVolumeClaim
    max: {storage: 1Gi}
`
	if r := kobectl(t, s, ranges, "apply", "-f", "-"); r.code != 0 {
		t.Fatalf("apply LimitRange: %+v", r)
	}
	// Kubernetes' defaulting of the range itself: defaultRequest.memory
	// from default, as the API shows it.
	if r := kobectl(t, s, "", "get", "limits", "containers", "-n", "team", "-o", "jsonpath={.spec.limits[0].defaultRequest.memory}"); r.stdout != "128Mi" {
		t.Errorf("defaultRequest.memory after defaulting: %+v", r)
	}
	// describe prints kubectl's table (compared with runs of spaces as one).
	r = kobectl(t, s, "", "describe", "limitrange", "containers", "-n", "team")
	flat := regexp.MustCompile(` +`).ReplaceAllString(r.stdout, " ")
	for _, want := range []string{"Type Resource Min Max Default Request Default Limit Max Limit/Request Ratio",
		"Container cpu 50m 1 100m 500m -", "Container memory - - 128Mi 128Mi 2", "Pod cpu - 1500m - - -", "PersistentVolumeClaim storage - 1Gi - - -"} {
		if r.code != 0 || !strings.Contains(flat, want) {
			t.Errorf("describe limitrange lacks %q:\n%s%s", want, r.stdout, r.stderr)
		}
	}
	// describe namespace: its limit ranges under Resource Limits (and no
	// quota), as kubectl shows them.
	r = kobectl(t, s, "", "describe", "namespace", "team")
	flat = regexp.MustCompile(` +`).ReplaceAllString(r.stdout, " ")
	for _, want := range []string{"Status: Active\n", "\nNo resource quota.\n", "\nResource Limits\n Type Resource Min Max Default Request Default Limit Max Limit/Request Ratio\n",
		"\n Container cpu 50m 1 100m 500m -\n", "\n PersistentVolumeClaim storage - 1Gi - - -\n"} {
		if r.code != 0 || !strings.Contains(flat, want) {
			t.Errorf("describe namespace lacks %q:\n%s%s", want, r.stdout, r.stderr)
		}
	}
	pod := func(name, resources string, extra ...string) string {
		y := "apiVersion: v1\nkind: Pod\nmetadata: {name: " + name + ", namespace: team}\nspec:\n  containers:\n  - {name: app, image: kobune.local/labapp:1.0" + resources + "}\n"
		for i, e := range extra {
			y += "  - {name: extra" + string(rune('a'+i)) + ", image: kobune.local/labapp:1.0" + e + "}\n"
		}
		return y
	}
	if r := kobectl(t, s, pod("plain", ""), "apply", "-f", "-"); r.code != 0 {
		t.Fatalf("a pod naming no resources: %+v", r)
	}
	r = kobectl(t, s, "", "get", "pod", "plain", "-n", "team", "-o", "jsonpath={.spec.containers[0].resources}")
	for _, want := range []string{`"limits":{"cpu":"500m","memory":"128Mi"}`, `"requests":{"cpu":"100m","memory":"128Mi"}`} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("the defaulted container's resources lack %s: %s", want, r.stdout)
		}
	}
	for _, tc := range []struct {
		name, yaml, want string
	}{
		{"big", pod("big", ", resources: {limits: {cpu: 2}}"), `pods "big" is forbidden: [maximum cpu usage per Container is 1, but limit is 2`},
		{"tiny", pod("tiny", ", resources: {requests: {cpu: 10m}}"), "minimum cpu usage per Container is 50m, but request is 10m"},
		{"ratio", pod("ratio", ", resources: {requests: {memory: 32Mi}, limits: {memory: 128Mi}}"), "memory max limit to request ratio per Container is 2, but provided ratio is 4.000000"},
		{"sum", pod("sum", ", resources: {limits: {cpu: 800m}}", ", resources: {limits: {cpu: 800m}}"), "maximum cpu usage per Pod is 1500m, but limit is 1600m"},
		{"claim", "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: claim, namespace: team}\nspec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 2Gi}}}\n",
			`persistentvolumeclaims "claim" is forbidden: [maximum storage usage per PersistentVolumeClaim is 1Gi, but request is 2Gi]`},
	} {
		r := kobectl(t, s, tc.yaml, "apply", "-f", "-")
		if r.code == 0 || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("%s: %d %q, want %q", tc.name, r.code, r.stderr, tc.want)
		}
		kind := "pod"
		if tc.name == "claim" {
			kind = "pvc"
		}
		if g := kobectl(t, s, "", "get", kind, tc.name, "-n", "team"); g.code == 0 {
			t.Errorf("%s was stored although refused", tc.name)
		}
	}
}
