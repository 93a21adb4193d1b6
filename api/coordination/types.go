package coordination

import (
	"github.com/kobune/kobune/api/meta"
	v "github.com/kobune/kobune/api/validation"
)

// Lease records who holds a lock and when they last renewed it.
type Lease struct {
	meta.TypeMeta   `json:",inline"`
	meta.ObjectMeta `json:"metadata"`
	Spec            LeaseSpec `json:"spec"`
}

// LeaseSpec is the holder, the duration and the times.
type LeaseSpec struct {
	HolderIdentity       *string         `json:"holderIdentity,omitempty"`
	LeaseDurationSeconds *int32          `json:"leaseDurationSeconds,omitempty"`
	AcquireTime          *meta.MicroTime `json:"acquireTime,omitempty"`
	RenewTime            *meta.MicroTime `json:"renewTime,omitempty"`
	LeaseTransitions     *int32          `json:"leaseTransitions,omitempty"`
}

// ValidateLease checks a Lease.
func ValidateLease(l *Lease) v.ErrorList {
	errs := v.ValidateObjectMeta(&l.ObjectMeta, true, v.IsDNS1123Subdomain, v.NewPath("metadata"))
	if d := l.Spec.LeaseDurationSeconds; d != nil && *d <= 0 {
		errs = append(errs, v.NewInvalid(v.NewPath("spec", "leaseDurationSeconds"), *d, "must be greater than 0"))
	}
	return errs
}
