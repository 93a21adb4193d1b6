package dra

import (
	"encoding/json"
	"fmt"
	"sync"

	"cel.dev/cel-go/cel"

	"github.com/kobune/kobune/api/selector"
	v "github.com/kobune/kobune/api/validation"
)

// Kubernetes' bounds on DRA objects.
const (
	maxRequests        = 32
	maxSubRequests     = 8
	maxSelectors       = 32
	maxConfigs         = 32
	maxConstraints     = 32
	maxTolerations     = 16
	maxDevicesPerSlice = 128
	maxAttributes      = 32
	maxReservedFor     = 256
	maxParametersBytes = 10 * 1024
	maxExpressionBytes = 10 * 1024
)

// SetDefaultsResourceClaim gives each request Kubernetes' defaults:
// allocationMode ExactCount, count 1, tolerations' operator Equal.
func SetDefaultsResourceClaim(c *ResourceClaim) { defaultClaimSpec(&c.Spec) }

// SetDefaultsResourceClaimTemplate defaults the template's claim.
func SetDefaultsResourceClaimTemplate(t *ResourceClaimTemplate) { defaultClaimSpec(&t.Spec.Spec) }

func defaultClaimSpec(s *ResourceClaimSpec) {
	mode := func(m *string, count *int64) {
		if *m == "" {
			*m = ExactCount
		}
		if *m == ExactCount && *count == 0 {
			*count = 1
		}
	}
	tolerations := func(ts []DeviceToleration) {
		for i := range ts {
			if ts[i].Operator == "" {
				ts[i].Operator = "Equal"
			}
		}
	}
	for i := range s.Devices.Requests {
		r := &s.Devices.Requests[i]
		if e := r.Exactly; e != nil {
			mode(&e.AllocationMode, &e.Count)
			tolerations(e.Tolerations)
		}
		for j := range r.FirstAvailable {
			sr := &r.FirstAvailable[j]
			mode(&sr.AllocationMode, &sr.Count)
			tolerations(sr.Tolerations)
		}
	}
}

// ValidateDeviceClass checks a class: its selectors compile as CEL, its
// configuration names a driver.
func ValidateDeviceClass(c *DeviceClass) v.ErrorList {
	errs := v.ValidateObjectMeta(&c.ObjectMeta, false, v.IsDNS1123Subdomain, v.NewPath("metadata"))
	sp := v.NewPath("spec")
	errs = append(errs, validateSelectors(c.Spec.Selectors, sp.Child("selectors"))...)
	if len(c.Spec.Config) > maxConfigs {
		errs = append(errs, v.NewTooMany(sp.Child("config"), len(c.Spec.Config), maxConfigs))
	}
	for i := range c.Spec.Config {
		errs = append(errs, validateConfiguration(c.Spec.Config[i].DeviceConfiguration, sp.Child("config").Index(i))...)
	}
	if n := c.Spec.ExtendedResourceName; n != nil {
		if msg := qualifiedName(*n); msg != "" {
			errs = append(errs, v.NewInvalid(sp.Child("extendedResourceName"), *n, msg))
		}
	}
	return errs
}

// ValidateResourceClaim checks a claim's requests.
func ValidateResourceClaim(c *ResourceClaim) v.ErrorList {
	errs := v.ValidateObjectMeta(&c.ObjectMeta, true, v.IsDNS1123Subdomain, v.NewPath("metadata"))
	return append(errs, validateClaimSpec(&c.Spec, v.NewPath("spec"))...)
}

// ValidateResourceClaimUpdate: the spec cannot change.
func ValidateResourceClaimUpdate(n, o *ResourceClaim) v.ErrorList {
	return immutable(n.Spec, o.Spec, v.NewPath("spec"))
}

// ValidateResourceClaimStatus checks what a scheduler or driver writes:
// results name the claim's requests, consumers are named once each.
func ValidateResourceClaimStatus(n, _ *ResourceClaim) v.ErrorList {
	var errs v.ErrorList
	sp := v.NewPath("status")
	requests := map[string]bool{}
	for _, r := range n.Spec.Devices.Requests {
		requests[r.Name] = true
		for _, sr := range r.FirstAvailable {
			requests[r.Name+"/"+sr.Name] = true
		}
	}
	if a := n.Status.Allocation; a != nil {
		rp := sp.Child("allocation", "devices", "results")
		for i, r := range a.Devices.Results {
			if !requests[r.Request] {
				errs = append(errs, v.NewInvalid(rp.Index(i).Child("request"), r.Request, "must be the name of a request in the claim or the name of a request and its subrequest separated by '/'"))
			}
			for _, f := range []struct{ name, value string }{{"driver", r.Driver}, {"pool", r.Pool}, {"device", r.Device}} {
				if f.value == "" {
					errs = append(errs, v.NewRequired(rp.Index(i).Child(f.name), ""))
				}
			}
		}
	}
	if len(n.Status.ReservedFor) > maxReservedFor {
		errs = append(errs, v.NewTooMany(sp.Child("reservedFor"), len(n.Status.ReservedFor), maxReservedFor))
	}
	uids := map[string]bool{}
	for i, r := range n.Status.ReservedFor {
		rp := sp.Child("reservedFor").Index(i)
		if r.Resource == "" {
			errs = append(errs, v.NewRequired(rp.Child("resource"), ""))
		}
		if r.Name == "" {
			errs = append(errs, v.NewRequired(rp.Child("name"), ""))
		}
		if r.UID == "" {
			errs = append(errs, v.NewRequired(rp.Child("uid"), ""))
		} else if uids[r.UID] {
			errs = append(errs, v.NewDuplicate(rp.Child("uid"), r.UID))
		}
		uids[r.UID] = true
	}
	for i, d := range n.Status.Devices {
		errs = append(errs, v.Conditions(d.Conditions, sp.Child("devices").Index(i).Child("conditions"))...)
	}
	return errs
}

// ValidateResourceClaimTemplate checks the template's claim.
func ValidateResourceClaimTemplate(t *ResourceClaimTemplate) v.ErrorList {
	errs := v.ValidateObjectMeta(&t.ObjectMeta, true, v.IsDNS1123Subdomain, v.NewPath("metadata"))
	return append(errs, validateClaimSpec(&t.Spec.Spec, v.NewPath("spec", "spec"))...)
}

// ValidateResourceClaimTemplateUpdate: the spec cannot change.
func ValidateResourceClaimTemplateUpdate(n, o *ResourceClaimTemplate) v.ErrorList {
	return immutable(n.Spec, o.Spec, v.NewPath("spec"))
}

func validateClaimSpec(s *ResourceClaimSpec, p *v.Path) v.ErrorList {
	var errs v.ErrorList
	dp := p.Child("devices")
	reqs := s.Devices.Requests
	if len(reqs) > maxRequests {
		errs = append(errs, v.NewTooMany(dp.Child("requests"), len(reqs), maxRequests))
	}
	names := map[string]bool{}
	for i := range reqs {
		r := &reqs[i]
		rp := dp.Child("requests").Index(i)
		errs = append(errs, validateName(r.Name, names, rp.Child("name"))...)
		switch {
		case (r.Exactly == nil) == (len(r.FirstAvailable) == 0):
			errs = append(errs, v.NewRequired(rp, "exactly one of `exactly` or `firstAvailable` is required"))
		case r.Exactly != nil:
			e := r.Exactly
			errs = append(errs, validateRequest(e.DeviceClassName, e.Selectors, e.AllocationMode, e.Count, e.Tolerations, rp.Child("exactly"))...)
		default:
			if len(r.FirstAvailable) > maxSubRequests {
				errs = append(errs, v.NewTooMany(rp.Child("firstAvailable"), len(r.FirstAvailable), maxSubRequests))
			}
			subs := map[string]bool{}
			for j := range r.FirstAvailable {
				sr := &r.FirstAvailable[j]
				sp := rp.Child("firstAvailable").Index(j)
				errs = append(errs, validateName(sr.Name, subs, sp.Child("name"))...)
				errs = append(errs, validateRequest(sr.DeviceClassName, sr.Selectors, sr.AllocationMode, sr.Count, sr.Tolerations, sp)...)
			}
		}
	}
	refs := func(rs []string, p *v.Path) v.ErrorList {
		var errs v.ErrorList
		for i, r := range rs {
			if !names[r] {
				errs = append(errs, v.NewInvalid(p.Index(i), r, "must be the name of a request in the claim"))
			}
		}
		return errs
	}
	if len(s.Devices.Constraints) > maxConstraints {
		errs = append(errs, v.NewTooMany(dp.Child("constraints"), len(s.Devices.Constraints), maxConstraints))
	}
	for i, c := range s.Devices.Constraints {
		cp := dp.Child("constraints").Index(i)
		errs = append(errs, refs(c.Requests, cp.Child("requests"))...)
		if (c.MatchAttribute == nil) == (c.DistinctAttribute == nil) {
			errs = append(errs, v.NewRequired(cp, "exactly one of `matchAttribute` or `distinctAttribute` is required"))
		}
	}
	if len(s.Devices.Config) > maxConfigs {
		errs = append(errs, v.NewTooMany(dp.Child("config"), len(s.Devices.Config), maxConfigs))
	}
	for i, c := range s.Devices.Config {
		cp := dp.Child("config").Index(i)
		errs = append(errs, refs(c.Requests, cp.Child("requests"))...)
		errs = append(errs, validateConfiguration(c.DeviceConfiguration, cp)...)
	}
	return errs
}

func validateRequest(class string, sels []DeviceSelector, mode string, count int64, tols []DeviceToleration, p *v.Path) v.ErrorList {
	var errs v.ErrorList
	if class == "" {
		errs = append(errs, v.NewRequired(p.Child("deviceClassName"), ""))
	} else if msg := v.IsDNS1123Subdomain(class); msg != "" {
		errs = append(errs, v.NewInvalid(p.Child("deviceClassName"), class, msg))
	}
	errs = append(errs, validateSelectors(sels, p.Child("selectors"))...)
	switch mode {
	case ExactCount:
		if count <= 0 {
			errs = append(errs, v.NewInvalid(p.Child("count"), count, "must be greater than zero"))
		}
	case All:
		if count != 0 {
			errs = append(errs, v.NewInvalid(p.Child("count"), count, "must not be specified when allocationMode is 'All'"))
		}
	default:
		errs = append(errs, v.NewNotSupported(p.Child("allocationMode"), mode, []string{All, ExactCount}))
	}
	if len(tols) > maxTolerations {
		errs = append(errs, v.NewTooMany(p.Child("tolerations"), len(tols), maxTolerations))
	}
	for i, t := range tols {
		tp := p.Child("tolerations").Index(i)
		if t.Key != "" {
			if msg := qualifiedName(t.Key); msg != "" {
				errs = append(errs, v.NewInvalid(tp.Child("key"), t.Key, msg))
			}
		}
		switch t.Operator {
		case "Equal":
		case "Exists":
			if t.Value != "" {
				errs = append(errs, v.NewInvalid(tp.Child("value"), t.Value, "must be empty for operator `Exists`"))
			}
		default:
			errs = append(errs, v.NewNotSupported(tp.Child("operator"), t.Operator, []string{"Equal", "Exists"}))
		}
		if t.Effect != "" && t.Effect != TaintNoSchedule && t.Effect != TaintNoExecute {
			errs = append(errs, v.NewNotSupported(tp.Child("effect"), t.Effect, []string{TaintNoExecute, TaintNoSchedule}))
		}
	}
	return errs
}

// celEnv compiles selector expressions: `device` is the device (its
// driver, attributes and capacity), typed dynamically as Kubernetes'
// environment types the maps.
var celEnv = sync.OnceValues(func() (*cel.Env, error) {
	return cel.NewEnv(cel.Variable("device", cel.DynType))
})

func validateSelectors(sels []DeviceSelector, p *v.Path) v.ErrorList {
	var errs v.ErrorList
	if len(sels) > maxSelectors {
		errs = append(errs, v.NewTooMany(p, len(sels), maxSelectors))
	}
	for i, s := range sels {
		sp := p.Index(i)
		if s.CEL == nil {
			errs = append(errs, v.NewRequired(sp.Child("cel"), ""))
			continue
		}
		ep := sp.Child("cel", "expression")
		expr := s.CEL.Expression
		switch {
		case expr == "":
			errs = append(errs, v.NewRequired(ep, ""))
			continue
		case len(expr) > maxExpressionBytes:
			errs = append(errs, v.NewTooLong(ep, "", maxExpressionBytes))
			continue
		}
		env, err := celEnv()
		if err != nil {
			errs = append(errs, v.NewInvalid(ep, expr, "the CEL environment: "+err.Error()))
			continue
		}
		if _, iss := env.Compile(expr); iss.Err() != nil {
			errs = append(errs, v.NewInvalid(ep, expr, fmt.Sprintf("compilation failed: %v", iss.Err())))
		}
	}
	return errs
}

func validateConfiguration(c DeviceConfiguration, p *v.Path) v.ErrorList {
	if c.Opaque == nil {
		return v.ErrorList{v.NewRequired(p.Child("opaque"), "")}
	}
	var errs v.ErrorList
	op := p.Child("opaque")
	if c.Opaque.Driver == "" {
		errs = append(errs, v.NewRequired(op.Child("driver"), ""))
	} else if msg := v.IsDNS1123Subdomain(c.Opaque.Driver); msg != "" {
		errs = append(errs, v.NewInvalid(op.Child("driver"), c.Opaque.Driver, msg))
	}
	var obj map[string]any
	switch {
	case len(c.Opaque.Parameters) == 0:
		errs = append(errs, v.NewRequired(op.Child("parameters"), ""))
	case len(c.Opaque.Parameters) > maxParametersBytes:
		errs = append(errs, v.NewTooLong(op.Child("parameters"), "", maxParametersBytes))
	case json.Unmarshal(c.Opaque.Parameters, &obj) != nil:
		errs = append(errs, v.NewInvalid(op.Child("parameters"), "<value omitted>", "must be a JSON object"))
	}
	return errs
}

// ValidateResourceSlice checks a slice: its driver and pool, where its
// devices are (exactly one way), and its devices.
func ValidateResourceSlice(s *ResourceSlice) v.ErrorList {
	errs := v.ValidateObjectMeta(&s.ObjectMeta, false, v.IsDNS1123Subdomain, v.NewPath("metadata"))
	sp := v.NewPath("spec")
	if s.Spec.Driver == "" {
		errs = append(errs, v.NewRequired(sp.Child("driver"), ""))
	} else if msg := v.IsDNS1123Subdomain(s.Spec.Driver); msg != "" {
		errs = append(errs, v.NewInvalid(sp.Child("driver"), s.Spec.Driver, msg))
	}
	pp := sp.Child("pool")
	if s.Spec.Pool.Name == "" {
		errs = append(errs, v.NewRequired(pp.Child("name"), ""))
	}
	if s.Spec.Pool.Generation < 0 {
		errs = append(errs, v.NewInvalid(pp.Child("generation"), s.Spec.Pool.Generation, "must be greater than or equal to 0"))
	}
	if s.Spec.Pool.ResourceSliceCount <= 0 {
		errs = append(errs, v.NewInvalid(pp.Child("resourceSliceCount"), s.Spec.Pool.ResourceSliceCount, "must be greater than zero"))
	}
	set := 0
	for _, ok := range []bool{s.Spec.NodeName != nil, s.Spec.NodeSelector != nil, s.Spec.AllNodes != nil && *s.Spec.AllNodes,
		s.Spec.PerDeviceNodeSelection != nil && *s.Spec.PerDeviceNodeSelection} {
		if ok {
			set++
		}
	}
	if set != 1 {
		errs = append(errs, v.NewInvalid(sp, "", "exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required"))
	}
	if n := s.Spec.NodeName; n != nil {
		if msg := v.IsDNS1123Subdomain(*n); msg != "" {
			errs = append(errs, v.NewInvalid(sp.Child("nodeName"), *n, msg))
		}
	}
	if len(s.Spec.Devices) > maxDevicesPerSlice {
		errs = append(errs, v.NewTooMany(sp.Child("devices"), len(s.Spec.Devices), maxDevicesPerSlice))
	}
	names := map[string]bool{}
	for i, d := range s.Spec.Devices {
		dp := sp.Child("devices").Index(i)
		errs = append(errs, validateName(d.Name, names, dp.Child("name"))...)
		if len(d.Attributes)+len(d.Capacity) > maxAttributes {
			errs = append(errs, v.NewTooMany(dp.Child("attributes"), len(d.Attributes)+len(d.Capacity), maxAttributes))
		}
		for name, a := range d.Attributes {
			n := 0
			for _, ok := range []bool{a.Int != nil, a.Bool != nil, a.String != nil, a.Version != nil, a.Ints != nil, a.Bools != nil, a.Strings != nil, a.Versions != nil} {
				if ok {
					n++
				}
			}
			if n != 1 {
				errs = append(errs, v.NewInvalid(dp.Child("attributes").Key(name), "", "exactly one value must be specified"))
			}
		}
		for j, t := range d.Taints {
			errs = append(errs, validateTaint(t, dp.Child("taints").Index(j))...)
		}
	}
	return errs
}

// ValidateResourceSliceUpdate: the driver and the node cannot change.
func ValidateResourceSliceUpdate(n, o *ResourceSlice) v.ErrorList {
	var errs v.ErrorList
	if n.Spec.Driver != o.Spec.Driver {
		errs = append(errs, v.NewInvalid(v.NewPath("spec", "driver"), n.Spec.Driver, "field is immutable"))
	}
	errs = append(errs, immutable(n.Spec.NodeName, o.Spec.NodeName, v.NewPath("spec", "nodeName"))...)
	return errs
}

// ValidateDeviceTaintRule checks the taint and the selector.
func ValidateDeviceTaintRule(r *DeviceTaintRule) v.ErrorList {
	errs := v.ValidateObjectMeta(&r.ObjectMeta, false, v.IsDNS1123Subdomain, v.NewPath("metadata"))
	return append(errs, validateTaint(r.Spec.Taint, v.NewPath("spec", "taint"))...)
}

// ValidateDeviceTaintRuleStatus checks the conditions.
func ValidateDeviceTaintRuleStatus(n, _ *DeviceTaintRule) v.ErrorList {
	return v.Conditions(n.Status.Conditions, v.NewPath("status", "conditions"))
}

func validateTaint(t DeviceTaint, p *v.Path) v.ErrorList {
	var errs v.ErrorList
	if t.Key == "" {
		errs = append(errs, v.NewRequired(p.Child("key"), ""))
	} else if msg := qualifiedName(t.Key); msg != "" {
		errs = append(errs, v.NewInvalid(p.Child("key"), t.Key, msg))
	}
	switch t.Effect {
	case TaintNone, TaintNoSchedule, TaintNoExecute:
	case "":
		errs = append(errs, v.NewRequired(p.Child("effect"), ""))
	default:
		errs = append(errs, v.NewNotSupported(p.Child("effect"), t.Effect, []string{TaintNoExecute, TaintNoSchedule, TaintNone}))
	}
	return errs
}

// qualifiedName is "" for a qualified name ([prefix/]name, a label key's
// syntax), or why it is not one.
func qualifiedName(s string) string {
	if err := selector.ValidLabelKey(s); err != nil {
		return err.Error()
	}
	return ""
}

func validateName(name string, seen map[string]bool, p *v.Path) v.ErrorList {
	var errs v.ErrorList
	switch {
	case name == "":
		errs = append(errs, v.NewRequired(p, ""))
	case v.IsDNS1123Label(name) != "":
		errs = append(errs, v.NewInvalid(p, name, v.IsDNS1123Label(name)))
	case seen[name]:
		errs = append(errs, v.NewDuplicate(p, name))
	}
	seen[name] = true
	return errs
}

func immutable(n, o any, p *v.Path) v.ErrorList {
	if v.JSONEqual(n, o) {
		return nil
	}
	return v.ErrorList{v.NewInvalid(p, "", "field is immutable")}
}
