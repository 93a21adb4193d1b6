package core

import (
	"github.com/kobune/kobune/api/meta"
	v "github.com/kobune/kobune/api/validation"
)

// PodTemplate is a pod template stored on its own (core/v1 PodTemplate):
// as in Kubernetes, no controller acts on it; tools keep templates there
// for others to read. The template is defaulted and validated as a
// workload's is.
type PodTemplate struct {
	meta.TypeMeta   `json:",inline"`
	meta.ObjectMeta `json:"metadata"`
	Template        PodTemplateSpec `json:"template,omitzero"`
}

// SetDefaultsPodTemplate defaults the template's pod spec.
func SetDefaultsPodTemplate(t *PodTemplate) { SetDefaultsPodSpec(&t.Template.Spec) }

// ValidatePodTemplate checks the name, the template's labels and its pod
// spec (which needs a container, as a pod's).
func ValidatePodTemplate(t *PodTemplate) v.ErrorList {
	errs := v.ValidateObjectMeta(&t.ObjectMeta, true, v.IsDNS1123Subdomain, v.NewPath("metadata"))
	tp := v.NewPath("template")
	errs = append(errs, v.ValidateLabels(t.Template.Labels, tp.Child("metadata", "labels"))...)
	return append(errs, ValidatePodSpec(&t.Template.Spec, tp.Child("spec"))...)
}
