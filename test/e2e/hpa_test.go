package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/kobune/kobune/api/apps"
	"github.com/kobune/kobune/api/autoscaling"
	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/api/resource"
	"github.com/kobune/kobune/client"
	"github.com/kobune/kobune/controller/controllermanager"
	"github.com/kobune/kobune/controller/podautoscaler"
	"github.com/kobune/kobune/scheduler"
)

// TestHorizontalPodAutoscalerOnARealNode: a Deployment of one labapp pod
// (100m requested) behind a Service, an autoscaler at 50 % CPU between 1
// and 3 replicas (scale-down window 20 s); a pod inside the cluster asks
// the Service to burn CPU without pause: the Deployment grows to 3 Ready
// pods, with SuccessfulRescale events and the utilization in status and
// kobectl get hpa; when the load stops it shrinks back to 1, and not
// before the stabilization window has passed.
func TestHorizontalPodAutoscalerOnARealNode(t *testing.T) {
	requireRoot(t)
	srv, _, ctx := startWithControllerConfig(t, 6*time.Minute, controllermanager.Config{HPA: podautoscaler.Config{SyncPeriod: 2 * time.Second}}, "10.244.87.0/24")
	go scheduler.New(scheduler.Config{Logf: func(string, ...any) {}}, componentClient(t, srv, "scheduler")).Run(ctx)
	c := srv.Client
	one := int32(1)
	labels := map[string]string{"app": "web"}
	_, err := client.For[*apps.Deployment](c).Create(ctx, &apps.Deployment{ObjectMeta: meta.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: apps.DeploymentSpec{Replicas: &one, Selector: &meta.LabelSelector{MatchLabels: labels},
			Template: core.PodTemplateSpec{ObjectMeta: meta.ObjectMeta{Labels: labels}, Spec: core.PodSpec{Containers: []core.Container{{Name: "app",
				Image: "kobune.local/labapp:1.0", ImagePullPolicy: core.PullNever,
				Resources: core.ResourceRequirements{Requests: resource.List{resource.CPU: resource.MustParse("100m")}, Limits: resource.List{resource.CPU: resource.MustParse("300m")}}}}}}}})
	if err != nil {
		t.Fatal(err)
	}
	svc, err := client.For[*core.Service](c).Create(ctx, &core.Service{ObjectMeta: meta.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: core.ServiceSpec{Selector: labels, Ports: []core.ServicePort{{Port: 80, TargetPort: meta.FromInt(8080)}}}})
	if err != nil {
		t.Fatal(err)
	}
	window, fifty := int32(20), int32(50)
	hpas := client.For[*autoscaling.HorizontalPodAutoscaler](c)
	_, err = hpas.Create(ctx, &autoscaling.HorizontalPodAutoscaler{ObjectMeta: meta.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: autoscaling.HorizontalPodAutoscalerSpec{ScaleTargetRef: autoscaling.CrossVersionObjectReference{Kind: "Deployment", Name: "web", APIVersion: "apps/v1"},
			MinReplicas: &one, MaxReplicas: 3,
			Metrics: []autoscaling.MetricSpec{{Type: autoscaling.ResourceMetricSourceType, Resource: &autoscaling.ResourceMetricSource{Name: resource.CPU,
				Target: autoscaling.MetricTarget{Type: autoscaling.UtilizationMetricType, AverageUtilization: &fifty}}}},
			Behavior: &autoscaling.HorizontalPodAutoscalerBehavior{ScaleDown: &autoscaling.HPAScalingRules{StabilizationWindowSeconds: &window}}}})
	if err != nil {
		t.Fatal(err)
	}
	// Idle first: the autoscaler finds a metric and keeps 1.
	idle, err := client.WaitFor(ctx, hpas, "default", "web", 0, func(h *autoscaling.HorizontalPodAutoscaler, _ bool) bool {
		return hpaCondition(h, autoscaling.ScalingActive) == meta.ConditionTrue && len(h.Status.CurrentMetrics) == 1
	})
	if err != nil {
		t.Fatalf("the autoscaler never found its metric: %v", err)
	}
	if u := idle.Status.CurrentMetrics[0].Resource.Current.AverageUtilization; u == nil || *u > 40 || idle.Status.DesiredReplicas != 1 {
		t.Errorf("idle: utilization %v, desired %d", u, idle.Status.DesiredReplicas)
	}

	// Load from inside the cluster: burn requests to the Service, without pause.
	pods := client.For[*core.Pod](c)
	// Two loops: with three replicas the load still stays above the target
	// when other work on the machine slows the burn down, so the autoscaler
	// keeps wanting 3 until the load stops (what the window check needs).
	loop := "while true; do wget -q -O /dev/null --post-data= http://" + svc.Spec.ClusterIP + "/burn?seconds=1; done"
	loadCmd := "(" + loop + ") & " + loop
	if _, err := pods.Create(ctx, &core.Pod{ObjectMeta: meta.ObjectMeta{Name: "load", Namespace: "default"}, Spec: core.PodSpec{Containers: []core.Container{{Name: "load",
		Image: "kobune.local/busybox:1.35", ImagePullPolicy: core.PullNever, Command: []string{"sh", "-c", loadCmd},
		Resources: core.ResourceRequirements{Limits: resource.List{resource.CPU: resource.MustParse("100m")}}}}}}); err != nil {
		t.Fatal(err)
	}
	// The status that asks for more replicas carries the utilization that
	// made it ask (once the new pods run, the average is what it is).
	busy, err := client.WaitFor(ctx, hpas, "default", "web", 0, func(h *autoscaling.HorizontalPodAutoscaler, _ bool) bool { return h.Status.DesiredReplicas > 1 })
	if err != nil {
		t.Fatalf("the autoscaler never asked for more replicas under load: %v", err)
	}
	if u := busy.Status.CurrentMetrics[0].Resource.Current.AverageUtilization; u == nil || *u <= 55 {
		t.Errorf("the autoscaler asked for %d replicas at a utilization of %v, want above the 50%% target", busy.Status.DesiredReplicas, u)
	}
	deployments := client.For[*apps.Deployment](c)
	if _, err := client.WaitFor(ctx, deployments, "default", "web", 0, func(d *apps.Deployment, _ bool) bool { return d.Status.ReadyReplicas == 3 }); err != nil {
		t.Fatalf("the Deployment never reached 3 ready replicas under load: %v", err)
	}
	busy, _ = hpas.Get(ctx, "default", "web")
	if busy.Status.LastScaleTime == nil {
		t.Errorf("no lastScaleTime after scaling: %+v", busy.Status)
	}
	out, errOut, _ := kobectl(ctx, srv.Addr(), "get", "hpa", "web")
	if !strings.Contains(out, "Deployment/web") || !strings.Contains(out, "/50%") {
		t.Errorf("get hpa:\n%s%s", out, errOut)
	}
	out, _, _ = kobectl(ctx, srv.Addr(), "describe", "hpa", "web")
	for _, want := range []string{"SuccessfulRescale", "New size: ", "cpu resource utilization (percentage of request) above target", "AbleToScale", "ScalingActive"} {
		if !strings.Contains(out, want) {
			t.Errorf("describe hpa lacks %q:\n%s", want, out)
		}
	}

	// The load stops: back to 1, after the window.
	zero := int64(0)
	if err := pods.Delete(ctx, "default", "load", client.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatal(err)
	}
	stopped := time.Now()
	if _, err := client.WaitFor(ctx, deployments, "default", "web", 0, func(d *apps.Deployment, _ bool) bool { return d.Spec.Replicas != nil && *d.Spec.Replicas == 1 }); err != nil {
		t.Fatalf("the Deployment never shrank back to 1 after the load stopped: %v", err)
	}
	if waited := time.Since(stopped); waited < time.Duration(window)*time.Second {
		t.Errorf("scaled down %v after the load stopped, within the %ds stabilization window", waited, window)
	} else {
		t.Logf("scaled down %v after the load stopped (window %ds)", waited.Round(time.Second), window)
	}
}

func hpaCondition(h *autoscaling.HorizontalPodAutoscaler, typ string) meta.ConditionStatus {
	for _, c := range h.Status.Conditions {
		if c.Type == typ {
			return c.Status
		}
	}
	return ""
}
