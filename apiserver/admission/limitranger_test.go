package admission

import (
	"context"
	"testing"

	"google.golang.org/grpc/status"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/api/resource"
)

// rangeList is a LimitRangeLister of fixed ranges.
type rangeList []*core.LimitRange

func (r rangeList) LimitRanges(context.Context, string) ([]*core.LimitRange, error) { return r, nil }

func limitRange(items ...core.LimitRangeItem) rangeList {
	return rangeList{{ObjectMeta: meta.ObjectMeta{Name: "limits", Namespace: "ns"}, Spec: core.LimitRangeSpec{Limits: items}}}
}

// limitPod is a pod of one container (and an init container when init
// is set) with the requests and limits given.
func limitPod(req, lim resource.List, init bool) *core.Pod {
	p := &core.Pod{ObjectMeta: meta.ObjectMeta{Name: "p", Namespace: "ns"},
		Spec: core.PodSpec{Containers: []core.Container{{Name: "app", Resources: core.ResourceRequirements{Requests: req, Limits: lim}}}}}
	if init {
		p.Spec.InitContainers = []core.Container{{Name: "setup"}}
	}
	return p
}

// TestLimitRangerAdmission: the LimitRanger table — the defaults a
// container gets (Admit) and what is refused, in Kubernetes' words, once
// they are applied (Validate).
func TestLimitRangerAdmission(t *testing.T) {
	container := func(it core.LimitRangeItem) core.LimitRangeItem { it.Type = core.LimitTypeContainer; return it }
	tests := []struct {
		name    string
		ranges  rangeList
		op      Operation
		obj     meta.Object
		wantErr string
		// want: the app container's requests and limits after admission.
		wantReq, wantLim resource.List
	}{
		{"defaults fill what the container names none of", limitRange(container(core.LimitRangeItem{Default: rl("cpu", "500m", "memory", "256Mi"), DefaultRequest: rl("cpu", "100m", "memory", "128Mi")})),
			Create, limitPod(nil, nil, true), "", rl("cpu", "100m", "memory", "128Mi"), rl("cpu", "500m", "memory", "256Mi")},
		{"what the container names stays", limitRange(container(core.LimitRangeItem{Default: rl("cpu", "500m", "memory", "256Mi"), DefaultRequest: rl("cpu", "100m", "memory", "128Mi")})),
			Create, limitPod(rl("cpu", "200m"), rl("cpu", "400m"), false), "", rl("cpu", "200m", "memory", "128Mi"), rl("cpu", "400m", "memory", "256Mi")},
		{"within min and max", limitRange(container(core.LimitRangeItem{Min: rl("cpu", "100m"), Max: rl("cpu", "1")})),
			Create, limitPod(rl("cpu", "100m"), rl("cpu", "1"), false), "", rl("cpu", "100m"), rl("cpu", "1")},
		{"under min", limitRange(container(core.LimitRangeItem{Min: rl("cpu", "100m")})),
			Create, limitPod(rl("cpu", "50m"), nil, false), `pods "p" is forbidden: [minimum cpu usage per Container is 100m, but request is 50m]`, nil, nil},
		{"min and no request", limitRange(container(core.LimitRangeItem{Min: rl("memory", "64Mi")})),
			Create, limitPod(nil, nil, false), `pods "p" is forbidden: [minimum memory usage per Container is 64Mi.  No request is specified]`, nil, nil},
		{"over max", limitRange(container(core.LimitRangeItem{Max: rl("cpu", "1")})),
			Create, limitPod(nil, rl("cpu", "2"), false), `pods "p" is forbidden: [maximum cpu usage per Container is 1, but limit is 2]`, nil, nil},
		{"max and no limit", limitRange(container(core.LimitRangeItem{Max: rl("memory", "1Gi")})),
			Create, limitPod(nil, nil, false), `pods "p" is forbidden: [maximum memory usage per Container is 1Gi.  No limit is specified]`, nil, nil},
		{"a default limit satisfies max", limitRange(container(core.LimitRangeItem{Max: rl("memory", "1Gi"), Default: rl("memory", "512Mi")})),
			Create, limitPod(nil, nil, false), "", nil, rl("memory", "512Mi")},
		{"ratio over maxLimitRequestRatio", limitRange(container(core.LimitRangeItem{MaxLimitRequestRatio: rl("cpu", "2")})),
			Create, limitPod(rl("cpu", "250m"), rl("cpu", "1"), false), `pods "p" is forbidden: [cpu max limit to request ratio per Container is 2, but provided ratio is 4.000000]`, nil, nil},
		{"ratio at maxLimitRequestRatio", limitRange(container(core.LimitRangeItem{MaxLimitRequestRatio: rl("cpu", "2")})),
			Create, limitPod(rl("cpu", "500m"), rl("cpu", "1"), false), "", rl("cpu", "500m"), rl("cpu", "1")},
		{"ratio and no limit", limitRange(container(core.LimitRangeItem{MaxLimitRequestRatio: rl("memory", "2")})),
			Create, limitPod(rl("memory", "64Mi"), nil, false), `pods "p" is forbidden: [memory max limit to request ratio per Container is 2, but no limit is specified]`, nil, nil},
		{"every violation named, the init container's too", limitRange(container(core.LimitRangeItem{Min: rl("cpu", "100m")})),
			Create, limitPod(rl("cpu", "50m"), nil, true), `pods "p" is forbidden: [minimum cpu usage per Container is 100m.  No request is specified, minimum cpu usage per Container is 100m, but request is 50m]`, nil, nil},
		{"Pod range: the containers' sums", limitRange(core.LimitRangeItem{Type: core.LimitTypePod, Max: rl("memory", "1Gi")}),
			Create, func() *core.Pod {
				p := limitPod(nil, rl("memory", "768Mi"), false)
				p.Spec.Containers = append(p.Spec.Containers, core.Container{Name: "side", Resources: core.ResourceRequirements{Limits: rl("memory", "512Mi")}})
				return p
			}(), `pods "p" is forbidden: [maximum memory usage per Pod is 1Gi, but limit is 1280Mi]`, nil, nil},
		{"claim over the PersistentVolumeClaim max", limitRange(core.LimitRangeItem{Type: core.LimitTypePersistentVolumeClaim, Min: rl("storage", "1Gi"), Max: rl("storage", "10Gi")}),
			Create, &core.PersistentVolumeClaim{ObjectMeta: meta.ObjectMeta{Name: "data", Namespace: "ns"}, Spec: core.PersistentVolumeClaimSpec{Resources: core.VolumeResourceRequirements{Requests: rl("storage", "20Gi")}}},
			`persistentvolumeclaims "data" is forbidden: [maximum storage usage per PersistentVolumeClaim is 10Gi, but request is 20Gi]`, nil, nil},
		{"updates are not judged", limitRange(container(core.LimitRangeItem{Min: rl("cpu", "100m")})),
			Update, limitPod(rl("cpu", "50m"), nil, false), "", rl("cpu", "50m"), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := LimitRanger{Ranges: tt.ranges}
			a := &Attributes{Operation: tt.op, Object: tt.obj}
			err := l.Admit(context.Background(), a)
			if err == nil {
				err = l.Validate(context.Background(), a)
			}
			switch {
			case tt.wantErr != "" && (err == nil || status.Convert(err).Message() != tt.wantErr):
				t.Fatalf("error %v\nwant %s", err, tt.wantErr)
			case tt.wantErr == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			}
			pod, ok := tt.obj.(*core.Pod)
			if tt.wantErr != "" || !ok {
				return
			}
			got := pod.Spec.Containers[0].Resources
			if !equalList(got.Requests, tt.wantReq) || !equalList(got.Limits, tt.wantLim) {
				t.Errorf("requests %v limits %v, want %v %v", got.Requests, got.Limits, tt.wantReq, tt.wantLim)
			}
			if init := pod.Spec.InitContainers; len(init) == 1 && !equalList(init[0].Resources.Limits, tt.wantLim) && len(tt.ranges[0].Spec.Limits[0].Default) > 0 {
				t.Errorf("init container limits %v: the defaults apply to init containers too", init[0].Resources.Limits)
			}
		})
	}
}

func equalList(a, b resource.List) bool {
	if len(a) != len(b) {
		return false
	}
	for n, q := range a {
		if o, ok := b[n]; !ok || q.Cmp(o) != 0 {
			return false
		}
	}
	return true
}
