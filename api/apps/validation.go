package apps

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/api/selector"
	v "github.com/kobune/kobune/api/validation"
)

// ValidateWorkloadTemplate checks what every controller-with-a-template
// shares: a non-empty selector, template labels that the selector matches,
// the pod template itself, and (unless other policies are allowed) restart
// policy Always. Jobs reuse it with their own restart policies.
func ValidateWorkloadTemplate(sel *meta.LabelSelector, tmpl *core.PodTemplateSpec, spec *v.Path, restartPolicies ...core.RestartPolicy) v.ErrorList {
	var errs v.ErrorList
	if sel == nil {
		errs = append(errs, v.NewRequired(spec.Child("selector"), ""))
	} else {
		errs = append(errs, v.ValidateLabelSelector(sel, spec.Child("selector"))...)
		if len(sel.MatchLabels)+len(sel.MatchExpressions) == 0 {
			errs = append(errs, v.NewInvalid(spec.Child("selector"), "", "empty selector is invalid for a workload"))
		} else if s, err := selector.FromLabelSelector(sel); err == nil && !s.Matches(tmpl.Labels) {
			errs = append(errs, v.NewInvalid(spec.Child("template", "metadata", "labels"), formatLabels(tmpl.Labels),
				fmt.Sprintf("`selector` (%s) does not match template `labels`", s.String())))
		}
	}
	tp := spec.Child("template")
	errs = append(errs, v.ValidateLabels(tmpl.Labels, tp.Child("metadata", "labels"))...)
	errs = append(errs, core.ValidatePodSpec(&tmpl.Spec, tp.Child("spec"))...)
	if len(restartPolicies) == 0 {
		restartPolicies = []core.RestartPolicy{core.RestartPolicyAlways}
	}
	ok := false
	names := make([]string, len(restartPolicies))
	for i, rp := range restartPolicies {
		ok = ok || tmpl.Spec.RestartPolicy == rp
		names[i] = string(rp)
	}
	if !ok && tmpl.Spec.RestartPolicy != "" {
		errs = append(errs, v.NewNotSupported(tp.Child("spec", "restartPolicy"), string(tmpl.Spec.RestartPolicy), names))
	}
	return errs
}

func formatLabels(l map[string]string) string {
	if len(l) == 0 {
		return "<none>"
	}
	return selector.SelectorFromSet(l).String()
}

func validateReplicas(r *int32, p *v.Path) v.ErrorList {
	if r == nil {
		return nil
	}
	return v.ValidateNonnegative(int64(*r), p)
}

// ValidateReplicaSet checks a ReplicaSet.
func ValidateReplicaSet(rs *ReplicaSet) v.ErrorList {
	errs := v.ValidateObjectMeta(&rs.ObjectMeta, true, v.IsDNS1123Subdomain, v.NewPath("metadata"))
	sp := v.NewPath("spec")
	errs = append(errs, validateReplicas(rs.Spec.Replicas, sp.Child("replicas"))...)
	errs = append(errs, v.ValidateNonnegative(int64(rs.Spec.MinReadySeconds), sp.Child("minReadySeconds"))...)
	return append(errs, ValidateWorkloadTemplate(rs.Spec.Selector, &rs.Spec.Template, sp)...)
}

// ValidateReplicationController checks a ReplicationController (core/v1)
// with the ReplicaSet's rules, its equality selector read as matchLabels.
func ValidateReplicationController(rc *core.ReplicationController) v.ErrorList {
	errs := v.ValidateObjectMeta(&rc.ObjectMeta, true, v.IsDNS1123Subdomain, v.NewPath("metadata"))
	sp := v.NewPath("spec")
	errs = append(errs, validateReplicas(rc.Spec.Replicas, sp.Child("replicas"))...)
	errs = append(errs, v.ValidateNonnegative(int64(rc.Spec.MinReadySeconds), sp.Child("minReadySeconds"))...)
	if rc.Spec.Template == nil {
		return append(errs, v.NewRequired(sp.Child("template"), ""))
	}
	return append(errs, ValidateWorkloadTemplate(&meta.LabelSelector{MatchLabels: rc.Spec.Selector}, rc.Spec.Template, sp)...)
}

// ValidateDeployment checks a Deployment.
func ValidateDeployment(d *Deployment) v.ErrorList {
	errs := v.ValidateObjectMeta(&d.ObjectMeta, true, v.IsDNS1123Subdomain, v.NewPath("metadata"))
	sp := v.NewPath("spec")
	errs = append(errs, validateReplicas(d.Spec.Replicas, sp.Child("replicas"))...)
	errs = append(errs, v.ValidateNonnegative(int64(d.Spec.MinReadySeconds), sp.Child("minReadySeconds"))...)
	errs = append(errs, ValidateWorkloadTemplate(d.Spec.Selector, &d.Spec.Template, sp)...)
	st := d.Spec.Strategy
	stp := sp.Child("strategy")
	switch st.Type {
	case RecreateDeploymentStrategyType:
		if st.RollingUpdate != nil {
			errs = append(errs, v.NewForbidden(stp.Child("rollingUpdate"), "may not be specified when strategy `type` is 'Recreate'"))
		}
	case RollingUpdateDeploymentStrategyType:
		if ru := st.RollingUpdate; ru != nil {
			errs = append(errs, validateSurgeUnavailable(ru.MaxSurge, ru.MaxUnavailable, stp.Child("rollingUpdate"))...)
		}
	default:
		errs = append(errs, v.NewNotSupported(stp.Child("type"), st.Type, []string{RecreateDeploymentStrategyType, RollingUpdateDeploymentStrategyType}))
	}
	if d.Spec.RevisionHistoryLimit != nil {
		errs = append(errs, v.ValidateNonnegative(int64(*d.Spec.RevisionHistoryLimit), sp.Child("revisionHistoryLimit"))...)
	}
	if pd := d.Spec.ProgressDeadlineSeconds; pd != nil && *pd <= d.Spec.MinReadySeconds {
		errs = append(errs, v.NewInvalid(sp.Child("progressDeadlineSeconds"), *pd, "must be greater than minReadySeconds"))
	}
	return errs
}

func validateSurgeUnavailable(surge, unavailable *meta.IntOrString, p *v.Path) v.ErrorList {
	var errs v.ErrorList
	zero := func(x *meta.IntOrString) bool {
		return x == nil || (!x.IsString && x.IntVal == 0) || (x.IsString && x.StrVal == "0%")
	}
	for name, val := range map[string]*meta.IntOrString{"maxSurge": surge, "maxUnavailable": unavailable} {
		if val == nil {
			continue
		}
		if err := validateIntOrPercent(*val); err != "" {
			errs = append(errs, v.NewInvalid(p.Child(name), val.String(), err))
		}
	}
	if zero(surge) && zero(unavailable) {
		errs = append(errs, v.NewInvalid(p.Child("maxUnavailable"), "0", "may not be 0 when `maxSurge` is 0"))
	}
	return errs
}

func validateIntOrPercent(x meta.IntOrString) string { return x.PercentError() }

// ValidateDaemonSet checks a DaemonSet.
func ValidateDaemonSet(ds *DaemonSet) v.ErrorList {
	errs := v.ValidateObjectMeta(&ds.ObjectMeta, true, v.IsDNS1123Subdomain, v.NewPath("metadata"))
	sp := v.NewPath("spec")
	errs = append(errs, ValidateWorkloadTemplate(ds.Spec.Selector, &ds.Spec.Template, sp)...)
	u := ds.Spec.UpdateStrategy
	switch u.Type {
	case "RollingUpdate":
		if ru := u.RollingUpdate; ru != nil {
			errs = append(errs, validateSurgeUnavailable(ru.MaxSurge, ru.MaxUnavailable, sp.Child("updateStrategy", "rollingUpdate"))...)
		}
	case "OnDelete":
	default:
		errs = append(errs, v.NewNotSupported(sp.Child("updateStrategy", "type"), u.Type, []string{"RollingUpdate", "OnDelete"}))
	}
	return errs
}

// ValidateStatefulSet checks a StatefulSet.
func ValidateStatefulSet(ss *StatefulSet) v.ErrorList {
	errs := v.ValidateObjectMeta(&ss.ObjectMeta, true, v.IsDNS1123Label, v.NewPath("metadata"))
	sp := v.NewPath("spec")
	errs = append(errs, validateReplicas(ss.Spec.Replicas, sp.Child("replicas"))...)
	// The pods also get a volume per claim template: mounts may name them.
	tmpl := ss.Spec.Template
	tmpl.Spec.Volumes = append([]core.Volume(nil), tmpl.Spec.Volumes...)
	for _, c := range ss.Spec.VolumeClaimTemplates {
		if !slices.ContainsFunc(tmpl.Spec.Volumes, func(v core.Volume) bool { return v.Name == c.Name }) {
			tmpl.Spec.Volumes = append(tmpl.Spec.Volumes, core.Volume{Name: c.Name, VolumeSource: core.VolumeSource{
				PersistentVolumeClaim: &core.PersistentVolumeClaimVolumeSource{ClaimName: c.Name}}})
		}
	}
	errs = append(errs, ValidateWorkloadTemplate(ss.Spec.Selector, &tmpl, sp)...)
	if p := ss.Spec.PodManagementPolicy; p != "OrderedReady" && p != "Parallel" {
		errs = append(errs, v.NewNotSupported(sp.Child("podManagementPolicy"), p, []string{"OrderedReady", "Parallel"}))
	}
	u := ss.Spec.UpdateStrategy
	switch u.Type {
	case "RollingUpdate":
		if ru := u.RollingUpdate; ru != nil && ru.Partition != nil {
			errs = append(errs, v.ValidateNonnegative(int64(*ru.Partition), sp.Child("updateStrategy", "rollingUpdate", "partition"))...)
		}
	case "OnDelete":
	default:
		errs = append(errs, v.NewNotSupported(sp.Child("updateStrategy", "type"), u.Type, []string{"RollingUpdate", "OnDelete"}))
	}
	return append(errs, validateClaimTemplates(ss, sp)...)
}

// validateClaimTemplates checks each template as the claim a pod gets
// (in the set's namespace), and the retention policy.
func validateClaimTemplates(ss *StatefulSet, sp *v.Path) v.ErrorList {
	var errs v.ErrorList
	names := map[string]bool{}
	for i := range ss.Spec.VolumeClaimTemplates {
		tp := sp.Child("volumeClaimTemplates").Index(i)
		c := ss.Spec.VolumeClaimTemplates[i]
		if msg := v.IsDNS1123Label(c.Name); c.Name == "" || msg != "" {
			errs = append(errs, v.NewInvalid(tp.Child("metadata", "name"), c.Name, "must be a DNS label (it starts the claims' names)"))
		} else if names[c.Name] {
			errs = append(errs, v.NewDuplicate(tp.Child("metadata", "name"), c.Name))
		}
		names[c.Name] = true
		c.Namespace = ss.Namespace
		for _, e := range core.ValidatePersistentVolumeClaim(&c) {
			if strings.HasPrefix(e.Field, "metadata.") {
				continue
			}
			e.Field = tp.String() + "." + e.Field
			errs = append(errs, e)
		}
	}
	if r := ss.Spec.PersistentVolumeClaimRetentionPolicy; r != nil {
		rp := sp.Child("persistentVolumeClaimRetentionPolicy")
		if r.WhenDeleted != "" && r.WhenDeleted != "Retain" && r.WhenDeleted != "Delete" {
			errs = append(errs, v.NewNotSupported(rp.Child("whenDeleted"), r.WhenDeleted, []string{"Retain", "Delete"}))
		}
		if r.WhenScaled != "" && r.WhenScaled != "Retain" && r.WhenScaled != "Delete" {
			errs = append(errs, v.NewNotSupported(rp.Child("whenScaled"), r.WhenScaled, []string{"Retain", "Delete"}))
		}
	}
	return errs
}

// ValidateSelectorImmutable forbids changing spec.selector, as apps/v1 does.
func ValidateSelectorImmutable(newSel, oldSel *meta.LabelSelector) v.ErrorList {
	return v.Immutable(v.NewPath("spec", "selector"), newSel, oldSel)
}

// ValidateControllerRevision checks a ControllerRevision: a name, data
// that is a JSON object, a revision not below zero.
func ValidateControllerRevision(r *ControllerRevision) v.ErrorList {
	errs := v.ValidateObjectMeta(&r.ObjectMeta, true, v.IsDNS1123Subdomain, v.NewPath("metadata"))
	var obj map[string]any
	if len(r.Data) == 0 || string(r.Data) == "null" {
		errs = append(errs, v.NewRequired(v.NewPath("data"), "data is mandatory"))
	} else if err := json.Unmarshal(r.Data, &obj); err != nil {
		errs = append(errs, v.NewInvalid(v.NewPath("data"), "<value omitted>", "must be a JSON object"))
	}
	return append(errs, v.ValidateNonnegative(r.Revision, v.NewPath("revision"))...)
}

// ValidateControllerRevisionUpdate refuses a change of data (a revision
// is a record; only its number moves).
func ValidateControllerRevisionUpdate(n, o *ControllerRevision) v.ErrorList {
	if !jsonEqual(n.Data, o.Data) {
		return v.ErrorList{v.NewInvalid(v.NewPath("data"), "<value omitted>", "field is immutable")}
	}
	return nil
}

func jsonEqual(a, b json.RawMessage) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return string(a) == string(b)
	}
	ca, _ := json.Marshal(x)
	cb, _ := json.Marshal(y)
	return string(ca) == string(cb)
}
