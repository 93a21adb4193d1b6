package core

import (
	"fmt"
	"sort"

	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/api/resource"
	v "github.com/kobune/kobune/api/validation"
)

// LimitRange sets, for the pods and claims of its namespace, the requests
// and limits a container gets when it names none, and the least and most
// it may name (enforced by the LimitRanger admission plugin when a pod or
// claim is created).
type LimitRange struct {
	meta.TypeMeta   `json:",inline"`
	meta.ObjectMeta `json:"metadata"`
	Spec            LimitRangeSpec `json:"spec"`
}

// LimitRangeSpec is a list of limits, each for one type of object.
type LimitRangeSpec struct {
	Limits []LimitRangeItem `json:"limits"`
}

// LimitRangeItem bounds one type: Container (each container's requests
// and limits; defaults apply here), Pod (the sums over its containers),
// PersistentVolumeClaim (requests.storage).
type LimitRangeItem struct {
	Type                 string        `json:"type"`
	Max                  resource.List `json:"max,omitempty"`
	Min                  resource.List `json:"min,omitempty"`
	Default              resource.List `json:"default,omitempty"`
	DefaultRequest       resource.List `json:"defaultRequest,omitempty"`
	MaxLimitRequestRatio resource.List `json:"maxLimitRequestRatio,omitempty"`
}

// LimitRange types.
const (
	LimitTypePod                   = "Pod"
	LimitTypeContainer             = "Container"
	LimitTypePersistentVolumeClaim = "PersistentVolumeClaim"
)

// SetDefaultsLimitRange fills a Container item's defaults as Kubernetes
// does: a default limit from max, a default request from the default
// limit, else from min.
func SetDefaultsLimitRange(lr *LimitRange) {
	for i := range lr.Spec.Limits {
		it := &lr.Spec.Limits[i]
		if it.Type != LimitTypeContainer {
			continue
		}
		fillFrom := func(dst *resource.List, src resource.List) {
			for n, q := range src {
				if _, ok := (*dst)[n]; ok {
					continue
				}
				if *dst == nil {
					*dst = resource.List{}
				}
				(*dst)[n] = q.Copy()
			}
		}
		fillFrom(&it.Default, it.Max)
		fillFrom(&it.DefaultRequest, it.Default)
		fillFrom(&it.DefaultRequest, it.Min)
	}
}

// ValidateLimitRange checks a LimitRange with Kubernetes' rules and
// messages: a known type; no defaults for Pod; for each resource
// min ≤ defaultRequest ≤ default ≤ max, and a ratio of at least 1.
func ValidateLimitRange(lr *LimitRange) v.ErrorList {
	errs := v.ValidateObjectMeta(&lr.ObjectMeta, true, v.IsDNS1123Subdomain, v.NewPath("metadata"))
	seen := map[string]bool{}
	for i, it := range lr.Spec.Limits {
		p := v.NewPath("spec", "limits").Index(i)
		switch it.Type {
		case LimitTypePod, LimitTypeContainer, LimitTypePersistentVolumeClaim:
		case "":
			errs = append(errs, v.NewRequired(p.Child("type"), ""))
		default:
			errs = append(errs, v.NewNotSupported(p.Child("type"), it.Type, []string{LimitTypeContainer, LimitTypePersistentVolumeClaim, LimitTypePod}))
		}
		if seen[it.Type] {
			errs = append(errs, v.NewDuplicate(p.Child("type"), it.Type))
		}
		seen[it.Type] = true
		if it.Type == LimitTypePod {
			if len(it.Default) > 0 {
				errs = append(errs, v.NewForbidden(p.Child("default"), "may not be specified when `type` is 'Pod'"))
			}
			if len(it.DefaultRequest) > 0 {
				errs = append(errs, v.NewForbidden(p.Child("defaultRequest"), "may not be specified when `type` is 'Pod'"))
			}
		}
		if it.Type == LimitTypePersistentVolumeClaim {
			for _, l := range []resource.List{it.Min, it.Max} {
				for name := range l {
					if name != resource.Storage {
						errs = append(errs, v.NewNotSupported(p.Child("max"), string(name), []string{string(resource.Storage)}))
					}
				}
			}
		}
		names := map[resource.Name]bool{}
		for _, l := range []resource.List{it.Max, it.Min, it.Default, it.DefaultRequest, it.MaxLimitRequestRatio} {
			for n := range l {
				names[n] = true
			}
		}
		var sorted []string
		for n := range names {
			sorted = append(sorted, string(n))
		}
		sort.Strings(sorted)
		for _, s := range sorted {
			n := resource.Name(s)
			min, hasMin := it.Min[n]
			max, hasMax := it.Max[n]
			def, hasDef := it.Default[n]
			req, hasReq := it.DefaultRequest[n]
			ratio, hasRatio := it.MaxLimitRequestRatio[n]
			for _, q := range []struct {
				l    resource.List
				what string
			}{{it.Max, "max"}, {it.Min, "min"}, {it.Default, "default"}, {it.DefaultRequest, "defaultRequest"}} {
				if x, ok := q.l[n]; ok && x.Sign() < 0 {
					errs = append(errs, v.NewInvalid(p.Child(q.what).Key(s), x.String(), "must be greater than or equal to 0"))
				}
			}
			if hasMin && hasMax && min.Cmp(max) > 0 {
				errs = append(errs, v.NewInvalid(p.Child("min").Key(s), min.String(), fmt.Sprintf("min value %s is greater than max value %s", min.String(), max.String())))
			}
			if hasReq && hasMin && min.Cmp(req) > 0 {
				errs = append(errs, v.NewInvalid(p.Child("defaultRequest").Key(s), req.String(), fmt.Sprintf("min value %s is greater than default request value %s", min.String(), req.String())))
			}
			if hasReq && hasMax && req.Cmp(max) > 0 {
				errs = append(errs, v.NewInvalid(p.Child("defaultRequest").Key(s), req.String(), fmt.Sprintf("default request value %s is greater than max value %s", req.String(), max.String())))
			}
			if hasReq && hasDef && req.Cmp(def) > 0 {
				errs = append(errs, v.NewInvalid(p.Child("defaultRequest").Key(s), req.String(), fmt.Sprintf("default request value %s is greater than default limit value %s", req.String(), def.String())))
			}
			if hasDef && hasMin && min.Cmp(def) > 0 {
				errs = append(errs, v.NewInvalid(p.Child("default").Key(s), def.String(), fmt.Sprintf("min value %s is greater than default value %s", min.String(), def.String())))
			}
			if hasDef && hasMax && def.Cmp(max) > 0 {
				errs = append(errs, v.NewInvalid(p.Child("default").Key(s), def.String(), fmt.Sprintf("default value %s is greater than max value %s", def.String(), max.String())))
			}
			if hasRatio && ratio.Cmp(resource.MustParse("1")) < 0 {
				errs = append(errs, v.NewInvalid(p.Child("maxLimitRequestRatio").Key(s), ratio.String(), fmt.Sprintf("ratio %s is less than 1", ratio.String())))
			}
			if hasRatio && hasMin && hasMax {
				// max / min must allow the ratio: Kubernetes' check.
				if ratio.MilliValue()*min.MilliValue() > max.MilliValue()*1000 && min.Sign() > 0 {
					errs = append(errs, v.NewInvalid(p.Child("maxLimitRequestRatio").Key(s), ratio.String(),
						fmt.Sprintf("ratio %s is greater than max/min = %f", ratio.String(), float64(max.MilliValue())/float64(min.MilliValue()))))
				}
			}
		}
	}
	return errs
}
