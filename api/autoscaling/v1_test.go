package autoscaling

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestV1Conversion: autoscaling/v1's CPU target becomes a v2 Resource
// metric and back; what v1 cannot say (other metrics, behavior,
// conditions) survives a round trip through kube-apiserver's annotations.
func TestV1Conversion(t *testing.T) {
	v1 := `{"apiVersion":"autoscaling/v1","kind":"HorizontalPodAutoscaler","metadata":{"name":"web","annotations":{"team":"a"}},
		"spec":{"scaleTargetRef":{"kind":"Deployment","name":"web","apiVersion":"apps/v1"},"minReplicas":2,"maxReplicas":5,"targetCPUUtilizationPercentage":60},
		"status":{"currentReplicas":2,"desiredReplicas":3,"currentCPUUtilizationPercentage":90}}`
	v2, err := V1ToV2([]byte(v1))
	if err != nil {
		t.Fatal(err)
	}
	var h HorizontalPodAutoscaler
	if err := json.Unmarshal(v2, &h); err != nil {
		t.Fatal(err)
	}
	m := h.Spec.Metrics
	if h.APIVersion != "autoscaling/v2" || len(m) != 1 || m[0].Resource.Name != "cpu" || *m[0].Resource.Target.AverageUtilization != 60 ||
		*h.Status.CurrentMetrics[0].Resource.Current.AverageUtilization != 90 || *h.Spec.MinReplicas != 2 || h.Annotations["team"] != "a" {
		t.Fatalf("v1 → v2: %s", v2)
	}

	// A v2 object with more than v1 can say, read in v1 and written back.
	h.Spec.Metrics = append(h.Spec.Metrics, MetricSpec{Type: ResourceMetricSourceType, Resource: &ResourceMetricSource{Name: "memory",
		Target: MetricTarget{Type: UtilizationMetricType, AverageUtilization: ptr(int32(70))}}})
	window := int32(30)
	h.Spec.Behavior = &HorizontalPodAutoscalerBehavior{ScaleDown: &HPAScalingRules{StabilizationWindowSeconds: &window}}
	h.Status.Conditions = []HorizontalPodAutoscalerCondition{{Type: AbleToScale, Status: "True", Reason: "ReadyForNewScale"}}
	full, _ := json.Marshal(h)
	asV1, err := V2ToV1(full)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"apiVersion":"autoscaling/v1"`, `"targetCPUUtilizationPercentage":60`, `"currentCPUUtilizationPercentage":90`,
		MetricsAnnotation, BehaviorAnnotation, ConditionsAnnotation} {
		if !strings.Contains(string(asV1), want) {
			t.Errorf("v2 → v1 lacks %s: %s", want, asV1)
		}
	}
	back, err := V1ToV2(asV1)
	if err != nil {
		t.Fatal(err)
	}
	if string(back) != string(full) {
		t.Errorf("round trip v2 → v1 → v2 changed the object:\n%s\n%s", full, back)
	}
	if _, err := V1ToV2([]byte(`{"metadata":{"annotations":{"` + BehaviorAnnotation + `":"{"}}}`)); err == nil || !strings.Contains(err.Error(), BehaviorAnnotation) {
		t.Errorf("a malformed annotation: %v", err)
	}
}

func ptr[T any](v T) *T { return &v }
