package admission

import (
	"context"
	"strings"
	"testing"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/api/resource"
	"github.com/kobune/kobune/api/scheme"
)

// quotaViews is a QuotaLister with a cached and a fresh view.
type quotaViews struct{ cached, fresh []*core.ResourceQuota }

func (v quotaViews) Quotas(_ context.Context, _ string, fresh bool) ([]*core.ResourceQuota, int64, error) {
	if fresh {
		return v.fresh, 20, nil
	}
	return v.cached, 10, nil
}

func rl(kv ...string) resource.List {
	l := resource.List{}
	for i := 0; i < len(kv); i += 2 {
		l[resource.Name(kv[i])] = resource.MustParse(kv[i+1])
	}
	return l
}

func quota(name string, hard, used resource.List, scopes ...string) *core.ResourceQuota {
	return &core.ResourceQuota{ObjectMeta: meta.ObjectMeta{Name: name, Namespace: "ns", ResourceVersion: "7"},
		Spec: core.ResourceQuotaSpec{Hard: hard, Scopes: scopes}, Status: core.ResourceQuotaStatus{Hard: hard, Used: used}}
}

func quotaPod(cpu string, mutate ...func(*core.Pod)) *core.Pod {
	p := &core.Pod{ObjectMeta: meta.ObjectMeta{Name: "p", Namespace: "ns"}, Spec: core.PodSpec{Containers: []core.Container{{Name: "app"}}}}
	if cpu != "" {
		p.Spec.Containers[0].Resources = core.ResourceRequirements{Requests: rl("cpu", cpu, "memory", "64Mi"), Limits: rl("cpu", cpu, "memory", "64Mi")}
	}
	for _, m := range mutate {
		m(p)
	}
	return p
}

// TestResourceQuotaAdmission: the quota admission table — what is
// refused with which message, and what is charged.
func TestResourceQuotaAdmission(t *testing.T) {
	pods, _ := scheme.ByResource("pods")
	services, _ := scheme.ByResource("services")
	configMaps, _ := scheme.ByResource("configmaps")
	hour := int64(3600)
	compute := quota("compute", rl("pods", "2", "requests.cpu", "1", "limits.memory", "1Gi"), rl("pods", "1", "requests.cpu", "500m", "limits.memory", "0"))
	tests := []struct {
		name    string
		kind    *scheme.Kind
		op      Operation
		obj     meta.Object
		old     meta.Object
		quotas  quotaViews
		wantErr string
		charged map[string]string // quota name → used after, as QuotaList prints it
	}{
		{"fits: charged", pods, Create, quotaPod("400m"), nil, quotaViews{cached: []*core.ResourceQuota{compute}},
			"", map[string]string{"compute": "limits.memory=64Mi,pods=2,requests.cpu=900m"}},
		{"over requests.cpu", pods, Create, quotaPod("600m"), nil, quotaViews{cached: []*core.ResourceQuota{compute}, fresh: []*core.ResourceQuota{compute}},
			`pods "p" is forbidden: exceeded quota: compute, requested: requests.cpu=600m, used: requests.cpu=500m, limited: requests.cpu=1`, nil},
		{"refused on the cache, fits on the store: charged on the fresh view", pods, Create, quotaPod("600m"), nil,
			quotaViews{cached: []*core.ResourceQuota{compute}, fresh: []*core.ResourceQuota{quota("compute", compute.Spec.Hard, rl("pods", "0", "requests.cpu", "0", "limits.memory", "0"))}},
			"", map[string]string{"compute": "limits.memory=64Mi,pods=1,requests.cpu=600m"}},
		{"no requests named", pods, Create, quotaPod(""), nil, quotaViews{cached: []*core.ResourceQuota{compute}, fresh: []*core.ResourceQuota{compute}},
			"failed quota: compute: must specify limits.memory for: app; requests.cpu for: app", nil},
		{"not counted yet", pods, Create, quotaPod("100m"), nil, quotaViews{cached: []*core.ResourceQuota{quota("new", rl("pods", "2"), nil)}, fresh: []*core.ResourceQuota{quota("new", rl("pods", "2"), nil)}},
			"status unknown for quota: new, resources: pods", nil},
		{"BestEffort scope skips a Burstable pod", pods, Create, quotaPod("100m"), nil,
			quotaViews{cached: []*core.ResourceQuota{quota("be", rl("pods", "0"), rl("pods", "0"), core.ScopeBestEffort)}}, "", map[string]string{}},
		{"BestEffort scope counts a BestEffort pod", pods, Create, quotaPod(""), nil,
			quotaViews{cached: []*core.ResourceQuota{quota("be", rl("pods", "0"), rl("pods", "0"), core.ScopeBestEffort)}, fresh: []*core.ResourceQuota{quota("be", rl("pods", "0"), rl("pods", "0"), core.ScopeBestEffort)}},
			"exceeded quota: be, requested: pods=1, used: pods=0, limited: pods=0", nil},
		{"Terminating scope counts a pod with a deadline", pods, Create, quotaPod("", func(p *core.Pod) { p.Spec.ActiveDeadlineSeconds = &hour }), nil,
			quotaViews{cached: []*core.ResourceQuota{quota("t", rl("pods", "5"), rl("pods", "1"), core.ScopeTerminating), quota("nt", rl("pods", "5"), rl("pods", "3"), core.ScopeNotTerminating)}},
			"", map[string]string{"t": "pods=2"}},
		{"other kinds untouched by a compute quota", configMaps, Create, &core.ConfigMap{ObjectMeta: meta.ObjectMeta{Name: "c", Namespace: "ns"}}, nil,
			quotaViews{cached: []*core.ResourceQuota{compute}}, "", map[string]string{}},
		{"configmaps counted", configMaps, Create, &core.ConfigMap{ObjectMeta: meta.ObjectMeta{Name: "c", Namespace: "ns"}}, nil,
			quotaViews{cached: []*core.ResourceQuota{quota("objs", rl("configmaps", "3", "count/configmaps", "3"), rl("configmaps", "1", "count/configmaps", "1"))}},
			"", map[string]string{"objs": "configmaps=2,count/configmaps=2"}},
		{"a Service made NodePort is charged its ports", services, Update,
			&core.Service{ObjectMeta: meta.ObjectMeta{Name: "s", Namespace: "ns"}, Spec: core.ServiceSpec{Type: core.ServiceTypeNodePort, Ports: []core.ServicePort{{Port: 80}, {Port: 81}}}},
			&core.Service{ObjectMeta: meta.ObjectMeta{Name: "s", Namespace: "ns"}, Spec: core.ServiceSpec{Type: core.ServiceTypeClusterIP, Ports: []core.ServicePort{{Port: 80}, {Port: 81}}}},
			quotaViews{cached: []*core.ResourceQuota{quota("np", rl("services", "5", "services.nodeports", "1"), rl("services", "1", "services.nodeports", "0"))},
				fresh: []*core.ResourceQuota{quota("np", rl("services", "5", "services.nodeports", "1"), rl("services", "1", "services.nodeports", "0"))}},
			"exceeded quota: np, requested: services.nodeports=2, used: services.nodeports=0, limited: services.nodeports=1", nil},
		{"an unchanged update charges nothing", services, Update,
			&core.Service{ObjectMeta: meta.ObjectMeta{Name: "s", Namespace: "ns"}, Spec: core.ServiceSpec{Type: core.ServiceTypeClusterIP}},
			&core.Service{ObjectMeta: meta.ObjectMeta{Name: "s", Namespace: "ns"}, Spec: core.ServiceSpec{Type: core.ServiceTypeClusterIP}},
			quotaViews{cached: []*core.ResourceQuota{quota("np", rl("services", "1"), rl("services", "1"))}}, "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, charges := WithQuotaCharges(context.Background(), false)
			err := ResourceQuota{Quotas: tt.quotas}.Validate(ctx, &Attributes{Operation: tt.op, Kind: tt.kind, Object: tt.obj, OldObject: tt.old})
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tt.charged == nil {
				if charges.Revision != 0 {
					t.Errorf("charged %+v, want nothing judged", charges)
				}
				return
			}
			got := map[string]string{}
			for _, q := range charges.Quotas {
				got[q.Name] = core.QuotaList(q.Status.Used)
			}
			if len(got) != len(tt.charged) {
				t.Errorf("charged %v, want %v", got, tt.charged)
			}
			for n, want := range tt.charged {
				if got[n] != want {
					t.Errorf("quota %s used after %q, want %q", n, got[n], want)
				}
			}
		})
	}
}
