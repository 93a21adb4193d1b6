package apiserver_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/api/resource"
	"github.com/kobune/kobune/client"
)

// TestPodResizeSubresource: pods/NAME/resize changes the containers'
// requests and limits of a pod (a strategic merge patch, as kubectl and
// the conformance suite send, or a PUT of the pod), raising its
// generation and taking nothing else of what is written; the pod itself
// refuses the change; reading the subresource is the pod; the QoS class
// stays, requests and limits are not removed, only cpu and memory change;
// a resize is charged to the namespace's quota; RBAC names the
// subresource; resizePolicy is validated at creation.
func TestPodResizeSubresource(t *testing.T) {
	s := startSecured(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pods := client.For[*core.Pod](s.Client)
	req := func(cpu, mem string) core.ResourceRequirements {
		return core.ResourceRequirements{Requests: resource.List{resource.CPU: resource.MustParse(cpu), resource.Memory: resource.MustParse(mem)}}
	}
	if _, err := pods.Create(ctx, &core.Pod{ObjectMeta: meta.ObjectMeta{Name: "app", Namespace: "default"},
		Spec: core.PodSpec{Containers: []core.Container{{Name: "c1", Image: "i", Resources: req("20m", "35Mi"),
			ResizePolicy: []core.ContainerResizePolicy{{ResourceName: resource.CPU, RestartPolicy: core.ResizeNotRequired}}}}}}); err != nil {
		t.Fatal(err)
	}
	c := newRESTClient(t, s.admin, s.Addr())
	const path = "/api/v1/namespaces/default/pods/app/resize"
	smp := func(path, body string, header ...string) (int, []byte) {
		code, _, b := c.do("PATCH", path, "", body, append([]string{"Content-Type", "application/strategic-merge-patch+json"}, header...)...)
		return code, b
	}
	if code, b := smp("/api/v1/namespaces/default/pods/app", `{"spec":{"containers":[{"name":"c1","resources":{"requests":{"cpu":"25m"}}}]}}`); code != 422 || !strings.Contains(string(b), "pod updates may not change fields") {
		t.Errorf("resources changed through the pod itself: %d %s", code, b)
	}
	code, b := smp(path, `{"spec":{"containers":[{"name":"c1","image":"other","resources":{"requests":{"cpu":"25m"},"limits":{"cpu":"35m"}}}]}}`)
	var got core.Pod
	if err := json.Unmarshal(b, &got); code != http.StatusOK || err != nil {
		t.Fatalf("patch resize: %d %s", code, b)
	}
	r := got.Spec.Containers[0].Resources
	if cpu := r.Requests[resource.CPU]; cpu.String() != "25m" || r.Limits.Cpu().String() != "35m" || got.Generation != 2 || got.Spec.Containers[0].Image != "i" {
		t.Errorf("after the resize: requests %v limits %v generation %d image %q; want cpu 25m, limit 35m, generation 2, the image kept", r.Requests, r.Limits, got.Generation, got.Spec.Containers[0].Image)
	}
	if code, _, b := c.do("GET", path, "", ""); code != http.StatusOK || !strings.Contains(string(b), `"kind":"Pod"`) || !strings.Contains(string(b), `"cpu":"25m"`) {
		t.Errorf("get resize: %d %s", code, b)
	}
	// A PUT of the pod: only the resources are taken.
	got.Spec.Containers[0].Resources = req("30m", "40Mi")
	got.Spec.Containers[0].Resources.Limits = resource.List{resource.CPU: resource.MustParse("40m")}
	got.Labels = map[string]string{"sneaky": "yes"}
	body, _ := json.Marshal(got)
	code, _, b = c.do("PUT", path, "", string(body))
	got = core.Pod{}
	if err := json.Unmarshal(b, &got); code != http.StatusOK || err != nil || got.Generation != 3 || got.Spec.Containers[0].Resources.Requests.Memory().String() != "40Mi" || got.Labels["sneaky"] != "" {
		t.Errorf("put resize: %d %s", code, b)
	}
	// What a resize may not do.
	for _, tc := range []struct{ patch, want string }{
		{`{"spec":{"containers":[{"name":"c1","resources":{"requests":{"cpu":"30m","memory":"40Mi","ephemeral-storage":"1Gi"}}}]}}`, "only cpu and memory resources are mutable"},
		{`{"spec":{"containers":[{"name":"c1","resources":{"requests":{"memory":null}}}]}}`, "resource requests cannot be removed"},
		{`{"spec":{"containers":[{"name":"c1","resources":{"limits":{"cpu":"30m","memory":"40Mi"}}}]}}`, "Pod QOS Class may not change as a result of resizing"},
		{`{"spec":{"containers":[{"name":"c1","resizePolicy":[{"resourceName":"disk","restartPolicy":"NotRequired"}]}]}}`, "spec.containers[0].resizePolicy[0].resourceName: Unsupported value"},
	} {
		if code, b := smp(path, tc.patch); code != 422 || !strings.Contains(string(b), tc.want) {
			t.Errorf("resize %s: %d %s; want 422 %q", tc.patch, code, b, tc.want)
		}
	}
	if p, err := pods.Get(ctx, "default", "app"); err != nil || p.Generation != 3 {
		t.Errorf("a refused resize changed the pod: %v %v", p.Generation, err)
	}
	// resizePolicy at creation.
	if _, err := pods.Create(ctx, &core.Pod{ObjectMeta: meta.ObjectMeta{Name: "never", Namespace: "default"},
		Spec: core.PodSpec{RestartPolicy: core.RestartPolicyNever, Containers: []core.Container{{Name: "c", Image: "i",
			ResizePolicy: []core.ContainerResizePolicy{{ResourceName: resource.Memory, RestartPolicy: core.ResizeRestartContainer}}}}}}); err == nil ||
		!strings.Contains(err.Error(), "spec.containers[0].resizePolicy[0].restartPolicy: Invalid value") {
		t.Errorf("RestartContainer in a pod never restarted: %v", err)
	}
	// A resize is charged to the namespace's quota.
	quota := &core.ResourceQuota{ObjectMeta: meta.ObjectMeta{Name: "cpu", Namespace: "default"},
		Spec: core.ResourceQuotaSpec{Hard: resource.List{"requests.cpu": resource.MustParse("100m")}}}
	quotas := client.For[*core.ResourceQuota](s.Client)
	if quota, err := quotas.Create(ctx, quota); err != nil {
		t.Fatal(err)
	} else {
		// What the resourcequota controller (not running here) would say.
		quota.Status = core.ResourceQuotaStatus{Hard: quota.Spec.Hard, Used: resource.List{"requests.cpu": resource.MustParse("30m")}}
		if _, err := quotas.UpdateStatus(ctx, quota); err != nil {
			t.Fatal(err)
		}
	}
	if code, b := smp(path, `{"spec":{"containers":[{"name":"c1","resources":{"requests":{"cpu":"200m"},"limits":{"cpu":"250m"}}}]}}`); code != 403 || !strings.Contains(string(b), "exceeded quota") {
		t.Errorf("a resize over the quota: %d %s", code, b)
	}
	// And held to the namespace's LimitRanges.
	limits := &core.LimitRange{ObjectMeta: meta.ObjectMeta{Name: "max", Namespace: "default"}, Spec: core.LimitRangeSpec{Limits: []core.LimitRangeItem{
		{Type: core.LimitTypeContainer, Max: resource.List{resource.CPU: resource.MustParse("50m")}}}}}
	if _, err := client.For[*core.LimitRange](s.Client).Create(ctx, limits); err != nil {
		t.Fatal(err)
	}
	if code, b := smp(path, `{"spec":{"containers":[{"name":"c1","resources":{"limits":{"cpu":"60m"}}}]}}`); code != 403 || !strings.Contains(string(b), "maximum cpu usage per Container is 50m") {
		t.Errorf("a resize over the LimitRange: %d %s", code, b)
	}
	// RBAC: the subresource by name.
	if code, b := smp(path, `{"spec":{}}`, "Impersonate-User", "dev"); code != 403 || !strings.Contains(string(b), `cannot patch resource \"pods/resize\"`) {
		t.Errorf("patch as dev: %d %s", code, b)
	}
}
