package storage

import (
	"strings"
	"testing"

	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/api/resource"
	v "github.com/kobune/kobune/api/validation"
)

func has(errs v.ErrorList, want string) bool {
	return strings.Contains(errs.ToError().Error(), want)
}

// TestCSIDriverDefaultsAndRules: Kubernetes' defaults fill every
// yes-or-no field; a name longer than 63 characters, an unknown lifecycle
// mode or fsGroup policy are refused by field; attachRequired and
// volumeLifecycleModes may not change, podInfoOnMount may.
func TestCSIDriverDefaultsAndRules(t *testing.T) {
	d := &CSIDriver{ObjectMeta: meta.ObjectMeta{Name: "csi.example.com"}}
	if errs := ValidateCSIDriver(d); !has(errs, "spec.attachRequired: Required") {
		t.Fatalf("undefaulted: %v", errs)
	}
	SetDefaultsCSIDriver(d)
	if !*d.Spec.AttachRequired || *d.Spec.PodInfoOnMount || *d.Spec.StorageCapacity || *d.Spec.FSGroupPolicy != ReadWriteOnceWithFSTypeFSGroupPolicy ||
		!d.Spec.Mode(VolumeLifecyclePersistent) || d.Spec.Mode(VolumeLifecycleEphemeral) {
		t.Fatalf("defaults: %+v", d.Spec)
	}
	if errs := ValidateCSIDriver(d); len(errs) != 0 {
		t.Fatalf("a defaulted driver: %v", errs)
	}
	bad := *d
	bad.Name = strings.Repeat("a", 64)
	bad.Spec.VolumeLifecycleModes = []VolumeLifecycleMode{"Forever"}
	policy := FSGroupPolicy("Sometimes")
	bad.Spec.FSGroupPolicy = &policy
	errs := ValidateCSIDriver(&bad)
	for _, want := range []string{"metadata.name", "spec.volumeLifecycleModes[0]: Unsupported value: \"Forever\"", "spec.fsGroupPolicy: Unsupported value"} {
		if !has(errs, want) {
			t.Errorf("want %q in %v", want, errs)
		}
	}
	n := *d
	no, yes := false, true
	n.Spec.AttachRequired, n.Spec.PodInfoOnMount = &no, &yes
	n.Spec.VolumeLifecycleModes = []VolumeLifecycleMode{VolumeLifecycleEphemeral}
	errs = ValidateCSIDriverUpdate(&n, d)
	if !has(errs, "spec.attachRequired: Invalid value: \"false\": field is immutable") || !has(errs, "spec.volumeLifecycleModes") || has(errs, "podInfoOnMount") {
		t.Errorf("update: %v", errs)
	}
}

// TestCSIStorageCapacityFitsAndRules: maximumVolumeSize, where set, bounds
// a volume; else capacity does; unset capacity fits nothing. A negative
// capacity is refused; topology and class may not change, capacity may.
func TestCSIStorageCapacityFitsAndRules(t *testing.T) {
	q := func(s string) *resource.Quantity { x := resource.MustParse(s); return &x }
	c := &CSIStorageCapacity{ObjectMeta: meta.ObjectMeta{Namespace: "kube-system", Name: "c"}, StorageClassName: "fast", Capacity: q("10Gi"),
		NodeTopology: &meta.LabelSelector{MatchLabels: map[string]string{"zone": "a"}}}
	if !c.Fits(resource.MustParse("10Gi")) || c.Fits(resource.MustParse("11Gi")) {
		t.Error("capacity 10Gi: fits 10Gi, not 11Gi")
	}
	c.MaximumVolumeSize = q("1Gi")
	if c.Fits(resource.MustParse("2Gi")) {
		t.Error("maximumVolumeSize 1Gi fits 2Gi")
	}
	if (&CSIStorageCapacity{}).Fits(resource.MustParse("1")) {
		t.Error("no capacity fits a volume")
	}
	if errs := ValidateCSIStorageCapacity(c); len(errs) != 0 {
		t.Fatal(errs)
	}
	neg := *c
	neg.Capacity, neg.StorageClassName = q("-1"), ""
	if errs := ValidateCSIStorageCapacity(&neg); !has(errs, "capacity: Invalid value") || !has(errs, "storageClassName: Required") {
		t.Errorf("negative capacity, no class: %v", errs)
	}
	n := *c
	n.Capacity, n.StorageClassName = q("5Gi"), "slow"
	if errs := ValidateCSIStorageCapacityUpdate(&n, c); len(errs) != 1 || !has(errs, "storageClassName: Invalid value: \"slow\": field is immutable") {
		t.Errorf("update: %v", errs)
	}
}

// TestVolumeAttachmentRules: a source is required, the attacher is a CSI
// driver name, the spec may not change while the status may, and an
// attacher's error message is bounded.
func TestVolumeAttachmentRules(t *testing.T) {
	pv := "pv-1"
	a := &VolumeAttachment{ObjectMeta: meta.ObjectMeta{Name: "va"}, Spec: VolumeAttachmentSpec{Attacher: "csi.example.com", NodeName: "node-1",
		Source: VolumeAttachmentSource{PersistentVolumeName: &pv}}}
	if errs := ValidateVolumeAttachment(a); len(errs) != 0 {
		t.Fatal(errs)
	}
	bad := &VolumeAttachment{ObjectMeta: meta.ObjectMeta{Name: "va"}, Spec: VolumeAttachmentSpec{Attacher: "Not_A_Driver", NodeName: "node-1"}}
	errs := ValidateVolumeAttachment(bad)
	if !has(errs, "spec.attacher: Invalid value") || !has(errs, "spec.source: Required") {
		t.Errorf("bad: %v", errs)
	}
	n := *a
	other := "pv-2"
	n.Spec.Source.PersistentVolumeName = &other
	n.Status.Attached = true
	if errs := ValidateVolumeAttachmentUpdate(&n, a); !has(errs, "spec: Invalid value") {
		t.Errorf("spec changed: %v", errs)
	}
	n.Spec = a.Spec
	if errs := ValidateVolumeAttachmentUpdate(&n, a); len(errs) != 0 {
		t.Errorf("status changed: %v", errs)
	}
	n.Status.AttachError = &VolumeError{Message: strings.Repeat("x", 2000)}
	if errs := ValidateVolumeAttachmentStatus(&n, a); !has(errs, "status.attachError.message") {
		t.Errorf("long message: %v", errs)
	}
}

// TestVolumeAttributesClassRules: the driver's name is required; driver
// and parameters may not change, labels may.
func TestVolumeAttributesClassRules(t *testing.T) {
	c := &VolumeAttributesClass{ObjectMeta: meta.ObjectMeta{Name: "gold"}, DriverName: "csi.example.com", Parameters: map[string]string{"iops": "100"}}
	if errs := ValidateVolumeAttributesClass(c); len(errs) != 0 {
		t.Fatal(errs)
	}
	if errs := ValidateVolumeAttributesClass(&VolumeAttributesClass{ObjectMeta: meta.ObjectMeta{Name: "x"}}); !has(errs, "driverName: Required") {
		t.Errorf("no driver: %v", errs)
	}
	n := *c
	n.Labels = map[string]string{"tier": "1"}
	if errs := ValidateVolumeAttributesClassUpdate(&n, c); len(errs) != 0 {
		t.Errorf("labels: %v", errs)
	}
	n.Parameters = map[string]string{"iops": "200"}
	if errs := ValidateVolumeAttributesClassUpdate(&n, c); !has(errs, "parameters: Forbidden") {
		t.Errorf("parameters: %v", errs)
	}
}
