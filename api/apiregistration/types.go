package apiregistration

import (
	"fmt"

	"github.com/kobune/kobune/api/meta"
	v "github.com/kobune/kobune/api/validation"
)

// APIService is one group version of the API.
type APIService struct {
	meta.TypeMeta   `json:",inline"`
	meta.ObjectMeta `json:"metadata"`
	Spec            APIServiceSpec   `json:"spec"`
	Status          APIServiceStatus `json:"status,omitempty"`
}

// APIServiceSpec is the group version, its priorities and, for an
// aggregated one, the Service that serves it.
type APIServiceSpec struct {
	// Service is where an aggregated group version is served: Kobune
	// serves none (it must be empty).
	Service               *ServiceReference `json:"service,omitempty"`
	Group                 string            `json:"group,omitempty"`
	Version               string            `json:"version,omitempty"`
	InsecureSkipTLSVerify bool              `json:"insecureSkipTLSVerify,omitempty" kobune:"unsupported"` // for a Service, which Kobune refuses
	CABundle              []byte            `json:"caBundle,omitempty"`
	// GroupPriorityMinimum orders groups (higher first), VersionPriority
	// the versions of a group.
	GroupPriorityMinimum int32 `json:"groupPriorityMinimum"`
	VersionPriority      int32 `json:"versionPriority"`
}

// ServiceReference names the Service of an aggregated API.
type ServiceReference struct {
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name,omitempty"`
	Port      *int32 `json:"port,omitempty"`
}

// APIServiceStatus says whether the group version is available.
type APIServiceStatus struct {
	Conditions []APIServiceCondition `json:"conditions,omitempty"`
}

// APIServiceCondition is one condition (Available).
type APIServiceCondition struct {
	Type               string    `json:"type"`
	Status             string    `json:"status"`
	LastTransitionTime meta.Time `json:"lastTransitionTime,omitempty"`
	Reason             string    `json:"reason,omitempty"`
	Message            string    `json:"message,omitempty"`
}

// Available is the condition every APIService carries.
const Available = "Available"

// NameOf is an APIService's name: version.group ("v1." for the core group).
func NameOf(group, version string) string { return version + "." + group }

// ValidateAPIService checks an APIService as kube-aggregator does, and
// refuses what Kobune cannot serve: a group version behind a Service.
func ValidateAPIService(a *APIService) v.ErrorList {
	errs := v.ValidateObjectMeta(&a.ObjectMeta, false, func(string) string { return "" }, v.NewPath("metadata"))
	spec := v.NewPath("spec")
	s := &a.Spec
	if a.Name != NameOf(s.Group, s.Version) {
		errs = append(errs, v.NewInvalid(v.NewPath("metadata", "name"), a.Name, fmt.Sprintf("must be spec.version+\".\"+spec.group: %q", NameOf(s.Group, s.Version))))
	}
	if s.Group != "" {
		if msg := v.IsDNS1123Subdomain(s.Group); msg != "" {
			errs = append(errs, v.NewInvalid(spec.Child("group"), s.Group, msg))
		}
	}
	if s.Version == "" {
		errs = append(errs, v.NewRequired(spec.Child("version"), ""))
	} else if msg := v.IsDNS1123Label(s.Version); msg != "" {
		errs = append(errs, v.NewInvalid(spec.Child("version"), s.Version, msg))
	}
	if s.GroupPriorityMinimum <= 0 || s.GroupPriorityMinimum > 20000 {
		errs = append(errs, v.NewInvalid(spec.Child("groupPriorityMinimum"), s.GroupPriorityMinimum, "must be positive and less than 20000"))
	}
	if s.VersionPriority <= 0 || s.VersionPriority > 1000 {
		errs = append(errs, v.NewInvalid(spec.Child("versionPriority"), s.VersionPriority, "must be positive and less than 1000"))
	}
	if s.Service != nil {
		errs = append(errs, v.NewForbidden(spec.Child("service"),
			"kobune has no aggregation layer: an APIService may only name a group version the API server serves itself (leave spec.service empty)"))
	} else {
		if len(s.CABundle) > 0 {
			errs = append(errs, v.NewInvalid(spec.Child("caBundle"), fmt.Sprintf("%d bytes", len(s.CABundle)), "local APIServices may not have a caBundle"))
		}
		if s.InsecureSkipTLSVerify {
			errs = append(errs, v.NewInvalid(spec.Child("insecureSkipTLSVerify"), true, "local APIServices may not have insecureSkipTLSVerify"))
		}
	}
	return errs
}
