package core

import (
	"slices"
	"strings"

	"github.com/kobune/kobune/api/resource"
	v "github.com/kobune/kobune/api/validation"
)

var accessModes = []string{string(ReadWriteOnce), string(ReadOnlyMany), string(ReadWriteMany), string(ReadWriteOncePod)}

func validateAccessModes(modes []PersistentVolumeAccessMode, p *Path) v.ErrorList {
	var errs v.ErrorList
	if len(modes) == 0 {
		errs = append(errs, v.NewRequired(p, "at least 1 access mode is required"))
	}
	for i, m := range modes {
		if !in(string(m), accessModes) {
			errs = append(errs, v.NewNotSupported(p.Index(i), string(m), accessModes))
		}
		if m == ReadWriteOncePod && len(modes) > 1 {
			errs = append(errs, v.NewForbidden(p, "may not use ReadWriteOncePod with other access modes"))
		}
	}
	return errs
}

func validateVolumeMode(m *string, p *Path) v.ErrorList {
	if m != nil && *m != "Filesystem" {
		return v.ErrorList{v.NewNotSupported(p, *m, []string{"Filesystem"})}
	}
	return nil
}

// ValidatePersistentVolume checks a volume: capacity, access modes, one
// source, the reclaim policy.
func ValidatePersistentVolume(pv *PersistentVolume) v.ErrorList {
	errs := v.ValidateObjectMeta(&pv.ObjectMeta, false, v.IsDNS1123Subdomain, v.NewPath("metadata"))
	sp := v.NewPath("spec")
	errs = append(errs, validateAccessModes(pv.Spec.AccessModes, sp.Child("accessModes"))...)
	st, ok := pv.Spec.Capacity[resource.Name("storage")]
	switch {
	case !ok:
		errs = append(errs, v.NewRequired(sp.Child("capacity", "storage"), ""))
	case st.Sign() <= 0:
		errs = append(errs, v.NewInvalid(sp.Child("capacity", "storage"), st.String(), "must be greater than zero"))
	}
	for name := range pv.Spec.Capacity {
		if name != "storage" {
			errs = append(errs, v.NewNotSupported(sp.Child("capacity").Key(string(name)), string(name), []string{"storage"}))
		}
	}
	n := 0
	for _, set := range []bool{pv.Spec.HostPath != nil, pv.Spec.Local != nil, pv.Spec.CSI != nil} {
		if set {
			n++
		}
	}
	switch {
	case n == 0:
		errs = append(errs, v.NewRequired(sp, "must specify a volume type: one of hostPath, local, csi"))
	case n > 1:
		errs = append(errs, v.NewForbidden(sp, "may not specify more than 1 volume type"))
	}
	if h := pv.Spec.HostPath; h != nil && (!strings.HasPrefix(h.Path, "/") || hasDotDot(h.Path)) {
		errs = append(errs, v.NewInvalid(sp.Child("hostPath", "path"), h.Path, "must be an absolute path without '..'"))
	}
	if l := pv.Spec.Local; l != nil {
		if !strings.HasPrefix(l.Path, "/") || hasDotDot(l.Path) {
			errs = append(errs, v.NewInvalid(sp.Child("local", "path"), l.Path, "must be an absolute path without '..'"))
		}
		if pv.Spec.NodeAffinity == nil || pv.Spec.NodeAffinity.Required == nil {
			errs = append(errs, v.NewRequired(sp.Child("nodeAffinity"), "a local volume must say which node has it"))
		}
	}
	if c := pv.Spec.CSI; c != nil {
		if c.Driver == "" {
			errs = append(errs, v.NewRequired(sp.Child("csi", "driver"), ""))
		}
		if c.VolumeHandle == "" {
			errs = append(errs, v.NewRequired(sp.Child("csi", "volumeHandle"), ""))
		}
	}
	if a := pv.Spec.NodeAffinity; a != nil && a.Required != nil {
		for i := range a.Required.NodeSelectorTerms {
			errs = append(errs, validateNodeSelectorTerm(&a.Required.NodeSelectorTerms[i], sp.Child("nodeAffinity", "required", "nodeSelectorTerms").Index(i))...)
		}
	}
	if p := pv.Spec.PersistentVolumeReclaimPolicy; p != "" && p != ReclaimRetain && p != ReclaimDelete {
		errs = append(errs, v.NewNotSupported(sp.Child("persistentVolumeReclaimPolicy"), string(p), []string{string(ReclaimRetain), string(ReclaimDelete)}))
	}
	if c := pv.Spec.StorageClassName; c != "" {
		if msg := v.IsDNS1123Subdomain(c); msg != "" {
			errs = append(errs, v.NewInvalid(sp.Child("storageClassName"), c, msg))
		}
	}
	return append(errs, validateVolumeMode(pv.Spec.VolumeMode, sp.Child("volumeMode"))...)
}

// ValidatePersistentVolumeUpdate: the source is immutable.
func ValidatePersistentVolumeUpdate(n, o *PersistentVolume) v.ErrorList {
	var errs v.ErrorList
	if (n.Spec.CSI == nil) != (o.Spec.CSI == nil) || (n.Spec.CSI != nil && (n.Spec.CSI.Driver != o.Spec.CSI.Driver || n.Spec.CSI.VolumeHandle != o.Spec.CSI.VolumeHandle)) ||
		(n.Spec.Local == nil) != (o.Spec.Local == nil) || (n.Spec.Local != nil && n.Spec.Local.Path != o.Spec.Local.Path) ||
		(n.Spec.HostPath == nil) != (o.Spec.HostPath == nil) || (n.Spec.HostPath != nil && n.Spec.HostPath.Path != o.Spec.HostPath.Path) {
		errs = append(errs, v.NewForbidden(v.NewPath("spec"), "the volume's source may not be changed"))
	}
	return errs
}

// SetDefaultsPersistentVolume defaults the reclaim policy to Retain (a
// volume made by hand) and the mode to Filesystem.
func SetDefaultsPersistentVolume(pv *PersistentVolume) {
	if pv.Spec.PersistentVolumeReclaimPolicy == "" {
		pv.Spec.PersistentVolumeReclaimPolicy = ReclaimRetain
	}
	if pv.Spec.VolumeMode == nil {
		m := "Filesystem"
		pv.Spec.VolumeMode = &m
	}
	if pv.Status.Phase == "" {
		pv.Status.Phase = VolumePending
	}
}

// SetDefaultsPersistentVolumeClaim defaults the mode to Filesystem and the
// phase to Pending.
func SetDefaultsPersistentVolumeClaim(c *PersistentVolumeClaim) {
	if c.Spec.VolumeMode == nil {
		m := "Filesystem"
		c.Spec.VolumeMode = &m
	}
	if c.Status.Phase == "" {
		c.Status.Phase = ClaimPending
	}
}

// ValidatePersistentVolumeClaim checks a claim: access modes and a storage
// request.
func ValidatePersistentVolumeClaim(c *PersistentVolumeClaim) v.ErrorList {
	errs := v.ValidateObjectMeta(&c.ObjectMeta, true, v.IsDNS1123Subdomain, v.NewPath("metadata"))
	sp := v.NewPath("spec")
	errs = append(errs, validateAccessModes(c.Spec.AccessModes, sp.Child("accessModes"))...)
	st, ok := c.Spec.Resources.Requests[resource.Name("storage")]
	switch {
	case !ok:
		errs = append(errs, v.NewRequired(sp.Child("resources", "requests", "storage"), ""))
	case st.Sign() <= 0:
		errs = append(errs, v.NewInvalid(sp.Child("resources", "requests", "storage"), st.String(), "must be greater than zero"))
	}
	if c.Spec.StorageClassName != nil && *c.Spec.StorageClassName != "" {
		if msg := v.IsDNS1123Subdomain(*c.Spec.StorageClassName); msg != "" {
			errs = append(errs, v.NewInvalid(sp.Child("storageClassName"), *c.Spec.StorageClassName, msg))
		}
	}
	errs = append(errs, v.ValidateLabelSelector(c.Spec.Selector, sp.Child("selector"))...)
	return append(errs, validateVolumeMode(c.Spec.VolumeMode, sp.Child("volumeMode"))...)
}

// ValidatePersistentVolumeClaimUpdate: a claim's spec is immutable once
// made, except a larger storage request (expansion) and the binder's
// volumeName on an unbound claim.
func ValidatePersistentVolumeClaimUpdate(n, o *PersistentVolumeClaim) v.ErrorList {
	var errs v.ErrorList
	sp := v.NewPath("spec")
	if !slices.Equal(n.Spec.AccessModes, o.Spec.AccessModes) || ClaimClass(n) != ClaimClass(o) && o.Spec.StorageClassName != nil {
		errs = append(errs, v.NewForbidden(sp, "spec is immutable after creation except resources.requests and volumeName of an unbound claim"))
	}
	if o.Spec.VolumeName != "" && n.Spec.VolumeName != o.Spec.VolumeName {
		errs = append(errs, v.NewForbidden(sp.Child("volumeName"), "may not be changed once set"))
	}
	ns, os := n.Spec.Resources.Requests[resource.Name("storage")], o.Spec.Resources.Requests[resource.Name("storage")]
	if ns.Cmp(os) < 0 {
		errs = append(errs, v.NewForbidden(sp.Child("resources", "requests", "storage"), "field can not be less than previous value"))
	}
	return errs
}
