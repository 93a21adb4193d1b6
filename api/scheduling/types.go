package scheduling

import (
	"strings"

	"github.com/kobune/kobune/api/meta"
	v "github.com/kobune/kobune/api/validation"
)

// PriorityClass maps a name to a pod priority.
type PriorityClass struct {
	meta.TypeMeta    `json:",inline"`
	meta.ObjectMeta  `json:"metadata"`
	Value            int32   `json:"value"`
	GlobalDefault    bool    `json:"globalDefault,omitempty" kobune:"unsupported"` // pods that name no class get priority 0 (docs/differences.md)
	Description      string  `json:"description,omitempty"`
	PreemptionPolicy *string `json:"preemptionPolicy,omitempty"`
}

// HighestUserDefinablePriority is the largest value a user may give; larger
// values are reserved for system classes.
const HighestUserDefinablePriority = 1_000_000_000

// SetDefaultsPriorityClass defaults preemptionPolicy to PreemptLowerPriority.
func SetDefaultsPriorityClass(pc *PriorityClass) {
	if pc.PreemptionPolicy == nil {
		p := "PreemptLowerPriority"
		pc.PreemptionPolicy = &p
	}
}

// ValidatePriorityClass checks the value range and the policy.
func ValidatePriorityClass(pc *PriorityClass) v.ErrorList {
	errs := v.ValidateObjectMeta(&pc.ObjectMeta, false, v.IsDNS1123Subdomain, v.NewPath("metadata"))
	if pc.Value > HighestUserDefinablePriority && !strings.HasPrefix(pc.Name, "system-") {
		errs = append(errs, v.NewForbidden(v.NewPath("value"), "maximum allowed value of a user defined priority is 1000000000"))
	}
	if p := pc.PreemptionPolicy; p != nil && *p != "PreemptLowerPriority" && *p != "Never" {
		errs = append(errs, v.NewNotSupported(v.NewPath("preemptionPolicy"), *p, []string{"PreemptLowerPriority", "Never"}))
	}
	return errs
}
