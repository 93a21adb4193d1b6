package plugins

import (
	"context"
	"testing"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/api/resource"
	"github.com/kobune/kobune/api/storage"
	"github.com/kobune/kobune/scheduler/framework"
)

// fakeVolumes is a VolumeLister over fixed objects.
type fakeVolumes struct {
	claims     map[string]*core.PersistentVolumeClaim
	volumes    []*core.PersistentVolume
	classes    map[string]*storage.StorageClass
	drivers    map[string]*storage.CSIDriver
	capacities []*storage.CSIStorageCapacity
}

func (f fakeVolumes) Claim(_, name string) (*core.PersistentVolumeClaim, bool) {
	c, ok := f.claims[name]
	return c, ok
}
func (f fakeVolumes) Volume(name string) (*core.PersistentVolume, bool) {
	for _, v := range f.volumes {
		if v.Name == name {
			return v, true
		}
	}
	return nil, false
}
func (f fakeVolumes) Volumes() []*core.PersistentVolume { return f.volumes }
func (f fakeVolumes) Claims() []*core.PersistentVolumeClaim {
	var out []*core.PersistentVolumeClaim
	for _, c := range f.claims {
		out = append(out, c)
	}
	return out
}
func (f fakeVolumes) Class(name string) (*storage.StorageClass, bool) {
	c, ok := f.classes[name]
	return c, ok
}

func (f fakeVolumes) Driver(name string) (*storage.CSIDriver, bool) {
	d, ok := f.drivers[name]
	return d, ok
}
func (f fakeVolumes) Capacities() []*storage.CSIStorageCapacity { return f.capacities }

func localPV(name, node, class string) *core.PersistentVolume {
	return &core.PersistentVolume{ObjectMeta: meta.ObjectMeta{Name: name}, Spec: core.PersistentVolumeSpec{
		Capacity: resource.List{"storage": resource.MustParse("1Gi")}, AccessModes: []core.PersistentVolumeAccessMode{core.ReadWriteOnce},
		StorageClassName: class, Local: &core.LocalVolumeSource{Path: "/srv/" + name},
		NodeAffinity: &core.VolumeNodeAffinity{Required: &core.NodeSelector{NodeSelectorTerms: []core.NodeSelectorTerm{{MatchExpressions: []core.NodeSelectorRequirement{
			{Key: "kubernetes.io/hostname", Operator: "In", Values: []string{node}}}}}}}}}
}

func claim(name, class, volume string) *core.PersistentVolumeClaim {
	return &core.PersistentVolumeClaim{ObjectMeta: meta.ObjectMeta{Name: name, Namespace: "default"}, Spec: core.PersistentVolumeClaimSpec{
		AccessModes: []core.PersistentVolumeAccessMode{core.ReadWriteOnce}, StorageClassName: &class, VolumeName: volume,
		Resources: core.VolumeResourceRequirements{Requests: resource.List{"storage": resource.MustParse("500Mi")}}}}
}

func withClaims(names ...string) func(*core.Pod) {
	return func(p *core.Pod) {
		for _, n := range names {
			p.Spec.Volumes = append(p.Spec.Volumes, core.Volume{Name: n, VolumeSource: core.VolumeSource{
				PersistentVolumeClaim: &core.PersistentVolumeClaimVolumeSource{ClaimName: n}}})
		}
	}
}

func TestVolumeBinding(t *testing.T) {
	wait, immediate := storage.WaitForFirstConsumer, storage.Immediate
	lister := fakeVolumes{
		claims: map[string]*core.PersistentVolumeClaim{
			"bound-a": claim("bound-a", "local", "pv-a"), "waits": claim("waits", "local", ""), "immediate": claim("immediate", "standard", ""),
			"dynamic": claim("dynamic", "csi", ""),
		},
		volumes: []*core.PersistentVolume{localPV("pv-a", "node-a", "local"), localPV("pv-b", "node-b", "local")},
		classes: map[string]*storage.StorageClass{
			"local":    {ObjectMeta: meta.ObjectMeta{Name: "local"}, Provisioner: "kubernetes.io/no-provisioner", VolumeBindingMode: &wait},
			"standard": {ObjectMeta: meta.ObjectMeta{Name: "standard"}, Provisioner: "kubernetes.io/no-provisioner", VolumeBindingMode: &immediate},
			"csi":      {ObjectMeta: meta.ObjectMeta{Name: "csi"}, Provisioner: "local.csi.kobune.io", VolumeBindingMode: &wait},
		},
	}
	lister.volumes[0].Spec.ClaimRef = &core.ObjectReference{Namespace: "default", Name: "bound-a"}
	a, b, c := framework.NewNodeInfo(node("node-a")), framework.NewNodeInfo(node("node-b")), framework.NewNodeInfo(node("node-c"))
	filter := func(name string, p *core.Pod, n *framework.NodeInfo, want string) {
		t.Helper()
		state := framework.NewCycleState(p, []*framework.NodeInfo{a, b, c})
		state.Volumes = lister
		st := VolumeBinding{}.PreFilter(context.Background(), state, p)
		if st.IsSuccess() {
			st = VolumeBinding{}.Filter(context.Background(), state, p, n)
		}
		if got := st.Message(); got != want {
			t.Errorf("%s: %q, want %q", name, got, want)
		}
	}
	filter("no claims", pod("", ""), a, "")
	filter("bound to node-a's volume, on node-a", pod("", "", withClaims("bound-a")), a, "")
	filter("bound to node-a's volume, on node-b", pod("", "", withClaims("bound-a")), b, "node(s) had volume node affinity conflict")
	filter("waiting, node-b has a free volume", pod("", "", withClaims("waits")), b, "")
	filter("waiting, node-a's is taken", pod("", "", withClaims("waits")), a, "node(s) didn't find available persistent volumes to bind")
	filter("waiting, node-c has none", pod("", "", withClaims("waits")), c, "node(s) didn't find available persistent volumes to bind")
	filter("waiting for a provisioner", pod("", "", withClaims("dynamic")), c, "")
	// The provisioner's driver publishes its capacity: a node needs a
	// CSIStorageCapacity of the class that selects it and fits 500Mi.
	yes := true
	lister.drivers = map[string]*storage.CSIDriver{"local.csi.kobune.io": {Spec: storage.CSIDriverSpec{StorageCapacity: &yes}}}
	atNode := func(node, size, max string) *storage.CSIStorageCapacity {
		q := resource.MustParse(size)
		sc := &storage.CSIStorageCapacity{StorageClassName: "csi", Capacity: &q,
			NodeTopology: &meta.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/hostname": node}}}
		if max != "" {
			m := resource.MustParse(max)
			sc.MaximumVolumeSize = &m
		}
		return sc
	}
	lister.capacities = []*storage.CSIStorageCapacity{atNode("node-a", "1Gi", ""), atNode("node-b", "100Mi", ""), atNode("node-c", "10Gi", "200Mi")}
	filter("capacity: node-a has 1Gi left", pod("", "", withClaims("dynamic")), a, "")
	filter("capacity: node-b has 100Mi left", pod("", "", withClaims("dynamic")), b, "node(s) did not have enough free storage")
	filter("capacity: node-c makes volumes of 200Mi at most", pod("", "", withClaims("dynamic")), c, "node(s) did not have enough free storage")
	lister.capacities = lister.capacities[:1]
	filter("capacity: none published for node-c", pod("", "", withClaims("dynamic")), c, "node(s) did not have enough free storage")
	lister.drivers = nil
	filter("capacity: a driver that does not publish it is trusted", pod("", "", withClaims("dynamic")), c, "")
	filter("unbound immediate claim", pod("", "", withClaims("immediate")), a, "pod has unbound immediate PersistentVolumeClaims")
	filter("missing claim", pod("", "", withClaims("nope")), a, `persistentvolumeclaim "nope" not found`)
	// Another claim was just selected for node-b and is not bound yet: the
	// binder will give it node-b's only free volume, so there is no room
	// for a second one until a volume is freed (or made).
	inFlight := claim("in-flight", "local", "")
	inFlight.Annotations = map[string]string{core.AnnSelectedNode: "node-b"}
	lister.claims["in-flight"] = inFlight
	filter("waiting, node-b's free volume is promised to a claim selected a moment ago", pod("", "", withClaims("waits")), b,
		"node(s) didn't find available persistent volumes to bind")
	filter("the selected claim itself still fits node-b", pod("", "", withClaims("in-flight")), b, "")
	lister.volumes = append(lister.volumes, localPV("pv-b2", "node-b", "local"))
	filter("waiting, node-b has a second free volume", pod("", "", withClaims("waits")), b, "")
	lister.volumes = lister.volumes[:2]
	delete(lister.claims, "in-flight")

	// ReadWriteOncePod: one pod at a time.
	once := claim("once", "local", "pv-b")
	once.Spec.AccessModes = []core.PersistentVolumeAccessMode{core.ReadWriteOncePod}
	lister.claims["once"] = once
	user := pod("", "", withClaims("once"), labeled("user", nil))
	user.UID = "u1"
	filter("RWOP claim unused", pod("", "", withClaims("once")), b, "")
	b = framework.NewNodeInfo(node("node-b"), user)
	filter("RWOP claim in use", pod("", "", withClaims("once")), b, "node has pod using PersistentVolumeClaim with the same name and ReadWriteOncePod access mode")
}

// TestVolumeBindingScore: a waiting claim of 500Mi scores the node whose
// free volume fits it most tightly highest; a node where it would be
// provisioned scores 0; a pod without waiting claims scores 0 everywhere.
func TestVolumeBindingScore(t *testing.T) {
	wait := storage.WaitForFirstConsumer
	big := localPV("pv-big", "node-b", "local")
	big.Spec.Capacity = resource.List{"storage": resource.MustParse("10Gi")}
	lister := fakeVolumes{
		claims:  map[string]*core.PersistentVolumeClaim{"waits": claim("waits", "local", ""), "dynamic": claim("dynamic", "csi", "")},
		volumes: []*core.PersistentVolume{localPV("pv-a", "node-a", "local"), big},
		classes: map[string]*storage.StorageClass{
			"local": {ObjectMeta: meta.ObjectMeta{Name: "local"}, Provisioner: "kubernetes.io/no-provisioner", VolumeBindingMode: &wait},
			"csi":   {ObjectMeta: meta.ObjectMeta{Name: "csi"}, Provisioner: "local.csi.kobune.io", VolumeBindingMode: &wait},
		},
	}
	nodes := []*framework.NodeInfo{framework.NewNodeInfo(node("node-a")), framework.NewNodeInfo(node("node-b"))}
	score := func(p *core.Pod) []int64 {
		state := framework.NewCycleState(p, nodes)
		state.Volumes = lister
		if st := (VolumeBinding{}).PreFilter(context.Background(), state, p); !st.IsSuccess() {
			t.Fatal(st.Message())
		}
		var out []int64
		for _, n := range nodes {
			s, _ := VolumeBinding{}.Score(context.Background(), state, p, n)
			out = append(out, s)
		}
		return out
	}
	if got := score(pod("", "", withClaims("waits"))); got[0] != 48 || got[1] != 4 {
		t.Errorf("500Mi into 1Gi on node-a, 10Gi on node-b: scores %v, want [48 4]", got)
	}
	if got := score(pod("", "", withClaims("dynamic"))); got[0] != 0 || got[1] != 0 {
		t.Errorf("provisioned: %v, want zeros", got)
	}
	if got := score(pod("", "")); got[0] != 0 || got[1] != 0 {
		t.Errorf("no claims: %v, want zeros", got)
	}
}
