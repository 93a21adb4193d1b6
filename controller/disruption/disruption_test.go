package disruption

import (
	"context"
	"testing"

	"github.com/kobune/kobune/api/apps"
	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/api/policy"
	"github.com/kobune/kobune/client"
	"github.com/kobune/kobune/controller"
	"github.com/kobune/kobune/controller/controllertest"
)

// TestBudgetArithmetic: the budget's numbers for each way of writing it,
// over 5 replicas of a Deployment of which 4 pods are Ready (one just
// evicted, one not ready).
func TestBudgetArithmetic(t *testing.T) {
	five := int32(5)
	d := &apps.Deployment{ObjectMeta: meta.ObjectMeta{Name: "web", Namespace: "default", UID: "d"}, Spec: apps.DeploymentSpec{Replicas: &five}}
	yes := true
	rs := &apps.ReplicaSet{ObjectMeta: meta.ObjectMeta{Name: "web-1", Namespace: "default", UID: "rs",
		OwnerReferences: []meta.OwnerReference{{Kind: "Deployment", Name: "web", UID: "d", Controller: &yes}}}, Spec: apps.ReplicaSetSpec{Replicas: &five}}
	pod := func(name string, ready meta.ConditionStatus) *core.Pod {
		return &core.Pod{ObjectMeta: meta.ObjectMeta{Name: name, Namespace: "default", Labels: map[string]string{"app": "web"},
			OwnerReferences: []meta.OwnerReference{{Kind: "ReplicaSet", Name: "web-1", UID: "rs", Controller: &yes}}},
			Status: core.PodStatus{Phase: core.PodRunning, Conditions: []core.PodCondition{{Type: core.PodReady, Status: ready}}}}
	}
	pods := []*core.Pod{pod("a", meta.ConditionTrue), pod("b", meta.ConditionTrue), pod("c", meta.ConditionTrue), pod("d", meta.ConditionTrue), pod("e", meta.ConditionFalse)}
	for _, tt := range []struct {
		name                               string
		minA, maxU                         *meta.IntOrString
		expected, desired, healthy, allows int32
	}{
		{"minAvailable 2 (pods present)", ptr(meta.FromInt(2)), nil, 5, 2, 3, 1},
		{"minAvailable 50% of the scale, rounded up", ptr(meta.FromString("50%")), nil, 5, 3, 3, 0},
		{"maxUnavailable 1", nil, ptr(meta.FromInt(1)), 5, 4, 3, 0},
		{"maxUnavailable 40% (2 of 5)", nil, ptr(meta.FromString("40%")), 5, 3, 3, 0},
		{"minAvailable 0", ptr(meta.FromInt(0)), nil, 5, 0, 3, 3},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, api := controllertest.NewClient()
			inf := controller.NewInformers(c)
			inf.Deployments.Seed(d)
			inf.ReplicaSets.Seed(rs)
			inf.Pods.Seed(pods...)
			b := &policy.PodDisruptionBudget{ObjectMeta: meta.ObjectMeta{Name: "web", Namespace: "default", Generation: 1},
				Spec: policy.PodDisruptionBudgetSpec{MinAvailable: tt.minA, MaxUnavailable: tt.maxU, Selector: &meta.LabelSelector{MatchLabels: map[string]string{"app": "web"}}},
				// d was just evicted: disrupted, not healthy.
				Status: policy.PodDisruptionBudgetStatus{DisruptedPods: map[string]meta.Time{"d": meta.Now()}}}
			inf.PDBs.Seed(b)
			dc := New(c, inf, client.NewAsyncRecorder(&client.Recorder{Client: c, Component: Name}, 10))
			if _, err := dc.Reconcile(context.Background(), "default/web"); err != nil {
				t.Fatal(err)
			}
			up := api.Filter("updatestatus", "poddisruptionbudgets")
			if len(up) != 1 {
				t.Fatalf("status writes: %v", api.Actions())
			}
			st := controllertest.Decode[policy.PodDisruptionBudget](up[0]).Status
			if st.ExpectedPods != tt.expected || st.DesiredHealthy != tt.desired || st.CurrentHealthy != tt.healthy || st.DisruptionsAllowed != tt.allows {
				t.Errorf("expected %d desired %d healthy %d allowed %d; want %d %d %d %d", st.ExpectedPods, st.DesiredHealthy, st.CurrentHealthy, st.DisruptionsAllowed,
					tt.expected, tt.desired, tt.healthy, tt.allows)
			}
			if _, kept := st.DisruptedPods["d"]; !kept {
				t.Errorf("the recent eviction of d was dropped: %v", st.DisruptedPods)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }
