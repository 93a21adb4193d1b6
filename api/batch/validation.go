package batch

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/kobune/kobune/api/apps"
	"github.com/kobune/kobune/api/core"
	v "github.com/kobune/kobune/api/validation"
)

// ValidateJob checks a Job.
func ValidateJob(j *Job) v.ErrorList {
	errs := v.ValidateObjectMeta(&j.ObjectMeta, true, v.IsDNS1123Subdomain, v.NewPath("metadata"))
	return append(errs, validateJobSpec(&j.Spec, v.NewPath("spec"))...)
}

func validateJobSpec(s *JobSpec, sp *v.Path) v.ErrorList {
	var errs v.ErrorList
	for name, val := range map[string]*int32{"parallelism": s.Parallelism, "completions": s.Completions, "backoffLimit": s.BackoffLimit, "ttlSecondsAfterFinished": s.TTLSecondsAfterFinished} {
		if val != nil {
			errs = append(errs, v.ValidateNonnegative(int64(*val), sp.Child(name))...)
		}
	}
	if m := s.CompletionMode; m != nil {
		switch *m {
		case CompletionModeNonIndexed:
		case CompletionModeIndexed:
			if s.Completions == nil {
				errs = append(errs, v.NewRequired(sp.Child("completions"), "when completion mode is Indexed"))
			} else if *s.Completions > 100000 {
				errs = append(errs, v.NewInvalid(sp.Child("completions"), *s.Completions, "must be less than or equal to 100000 when completion mode is Indexed"))
			}
		default:
			errs = append(errs, v.NewNotSupported(sp.Child("completionMode"), *m, []string{CompletionModeNonIndexed, CompletionModeIndexed}))
		}
	}
	errs = append(errs, validateFailureAndSuccess(s, sp)...)
	if s.ActiveDeadlineSeconds != nil && *s.ActiveDeadlineSeconds <= 0 {
		errs = append(errs, v.NewInvalid(sp.Child("activeDeadlineSeconds"), *s.ActiveDeadlineSeconds, "must be greater than 0"))
	}
	if s.Selector != nil {
		errs = append(errs, apps.ValidateWorkloadTemplate(s.Selector, &s.Template, sp, core.RestartPolicyOnFailure, core.RestartPolicyNever)...)
	} else {
		tp := sp.Child("template")
		errs = append(errs, core.ValidatePodSpec(&s.Template.Spec, tp.Child("spec"))...)
		if rp := s.Template.Spec.RestartPolicy; rp != core.RestartPolicyOnFailure && rp != core.RestartPolicyNever {
			errs = append(errs, v.NewNotSupported(tp.Child("spec", "restartPolicy"), string(rp), []string{"OnFailure", "Never"}))
		}
	}
	return errs
}

// ValidateCronJob checks a CronJob's schedule shape and its job template.
func ValidateCronJob(c *CronJob) v.ErrorList {
	errs := v.ValidateObjectMeta(&c.ObjectMeta, true, v.IsDNS1123Subdomain, v.NewPath("metadata"))
	if len(c.Name) > 52 {
		errs = append(errs, v.NewInvalid(v.NewPath("metadata", "name"), c.Name, "must be no more than 52 characters"))
	}
	sp := v.NewPath("spec")
	if c.Spec.Schedule == "" {
		errs = append(errs, v.NewRequired(sp.Child("schedule"), ""))
	} else if _, err := ParseSchedule(c.Spec.Schedule); err != nil {
		errs = append(errs, v.NewInvalid(sp.Child("schedule"), c.Spec.Schedule, err.Error()))
	}
	policies := []string{"Allow", "Forbid", "Replace"}
	ok := false
	for _, p := range policies {
		ok = ok || p == c.Spec.ConcurrencyPolicy
	}
	if !ok {
		errs = append(errs, v.NewNotSupported(sp.Child("concurrencyPolicy"), c.Spec.ConcurrencyPolicy, policies))
	}
	if c.Spec.StartingDeadlineSeconds != nil {
		errs = append(errs, v.ValidateNonnegative(*c.Spec.StartingDeadlineSeconds, sp.Child("startingDeadlineSeconds"))...)
	}
	return append(errs, validateJobSpec(&c.Spec.JobTemplate.Spec, sp.Child("jobTemplate", "spec"))...)
}

// validateFailureAndSuccess checks backoffLimitPerIndex, maxFailedIndexes,
// podFailurePolicy, successPolicy and podReplacementPolicy, with
// Kubernetes' rules and messages.
func validateFailureAndSuccess(s *JobSpec, sp *v.Path) v.ErrorList {
	var errs v.ErrorList
	indexed := s.CompletionMode != nil && *s.CompletionMode == CompletionModeIndexed
	if b := s.BackoffLimitPerIndex; b != nil {
		errs = append(errs, v.ValidateNonnegative(int64(*b), sp.Child("backoffLimitPerIndex"))...)
		if !indexed {
			errs = append(errs, v.NewInvalid(sp.Child("backoffLimitPerIndex"), *b, "requires indexed completion mode"))
		}
	}
	if m := s.MaxFailedIndexes; m != nil {
		errs = append(errs, v.ValidateNonnegative(int64(*m), sp.Child("maxFailedIndexes"))...)
		switch {
		case s.BackoffLimitPerIndex == nil:
			errs = append(errs, v.NewRequired(sp.Child("backoffLimitPerIndex"), "when maxFailedIndexes is specified"))
		case s.Completions != nil && *m > *s.Completions:
			errs = append(errs, v.NewInvalid(sp.Child("maxFailedIndexes"), *m, "must be less than or equal to completions"))
		case *m > 100000:
			errs = append(errs, v.NewInvalid(sp.Child("maxFailedIndexes"), *m, "must be less than or equal to 100000"))
		}
	}
	if f := s.PodFailurePolicy; f != nil {
		fp := sp.Child("podFailurePolicy")
		if rp := s.Template.Spec.RestartPolicy; rp != core.RestartPolicyNever {
			errs = append(errs, v.NewInvalid(sp.Child("template", "spec", "restartPolicy"), string(rp), `only "Never" is supported when podFailurePolicy is specified`))
		}
		if len(f.Rules) > 20 {
			errs = append(errs, v.NewInvalid(fp.Child("rules"), len(f.Rules), "must have at most 20 items"))
		}
		for i := range f.Rules {
			errs = append(errs, validatePodFailurePolicyRule(s, &f.Rules[i], fp.Child("rules").Index(i))...)
		}
	}
	if p := s.PodReplacementPolicy; p != nil {
		switch {
		case s.PodFailurePolicy != nil && *p != Failed:
			errs = append(errs, v.NewNotSupported(sp.Child("podReplacementPolicy"), *p, []string{Failed}))
		case *p != TerminatingOrFailed && *p != Failed:
			errs = append(errs, v.NewNotSupported(sp.Child("podReplacementPolicy"), *p, []string{TerminatingOrFailed, Failed}))
		}
	}
	if sucp := s.SuccessPolicy; sucp != nil {
		pp := sp.Child("successPolicy")
		if !indexed {
			errs = append(errs, v.NewInvalid(sp.Child("completionMode"), "", "requires indexed completion mode"))
		}
		if len(sucp.Rules) == 0 || len(sucp.Rules) > 20 {
			errs = append(errs, v.NewInvalid(pp.Child("rules"), len(sucp.Rules), "must have between 1 and 20 items"))
		}
		for i, r := range sucp.Rules {
			rp := pp.Child("rules").Index(i)
			if r.SucceededIndexes == nil && r.SucceededCount == nil {
				errs = append(errs, v.NewRequired(rp, "at least one of succeededCount or succeededIndexes must be specified"))
			}
			n := int32(-1)
			if r.SucceededIndexes != nil && s.Completions != nil {
				set, err := ParseIndexes(*r.SucceededIndexes, int(*s.Completions))
				if err != nil {
					errs = append(errs, v.NewInvalid(rp.Child("succeededIndexes"), *r.SucceededIndexes, err.Error()))
				}
				n = int32(len(set))
			}
			if c := r.SucceededCount; c != nil {
				switch {
				case *c < 0:
					errs = append(errs, v.ValidateNonnegative(int64(*c), rp.Child("succeededCount"))...)
				case s.Completions != nil && *c > *s.Completions:
					errs = append(errs, v.NewInvalid(rp.Child("succeededCount"), *c, fmt.Sprintf("must be less than or equal to %d (the number of specified completions)", *s.Completions)))
				case n >= 0 && *c > n:
					errs = append(errs, v.NewInvalid(rp.Child("succeededCount"), *c, fmt.Sprintf("must be less than or equal to %d (the number of indexes in the specified succeededIndexes field)", n)))
				}
			}
		}
	}
	return errs
}

func validatePodFailurePolicyRule(s *JobSpec, r *PodFailurePolicyRule, rp *v.Path) v.ErrorList {
	var errs v.ErrorList
	actions := []string{PodFailurePolicyActionCount, PodFailurePolicyActionFailIndex, PodFailurePolicyActionFailJob, PodFailurePolicyActionIgnore}
	switch {
	case !slices.Contains(actions, r.Action):
		errs = append(errs, v.NewNotSupported(rp.Child("action"), r.Action, actions))
	case r.Action == PodFailurePolicyActionFailIndex && s.BackoffLimitPerIndex == nil:
		errs = append(errs, v.NewInvalid(rp.Child("action"), r.Action, "requires the backoffLimitPerIndex to be set"))
	}
	switch {
	case r.OnExitCodes != nil && len(r.OnPodConditions) > 0:
		errs = append(errs, v.NewInvalid(rp, "", "specifying both OnExitCodes and OnPodConditions is not supported"))
	case r.OnExitCodes == nil && len(r.OnPodConditions) == 0:
		errs = append(errs, v.NewInvalid(rp, "", "specifying one of OnExitCodes and OnPodConditions is required"))
	}
	if e := r.OnExitCodes; e != nil {
		ep := rp.Child("onExitCodes")
		if e.Operator != "In" && e.Operator != "NotIn" {
			errs = append(errs, v.NewNotSupported(ep.Child("operator"), e.Operator, []string{"In", "NotIn"}))
		}
		if e.ContainerName != nil && !hasContainer(&s.Template.Spec, *e.ContainerName) {
			errs = append(errs, v.NewInvalid(ep.Child("containerName"), *e.ContainerName, "must be one of the container or initContainer names in the pod template"))
		}
		switch {
		case len(e.Values) == 0:
			errs = append(errs, v.NewRequired(ep.Child("values"), "at least one value is required"))
		case len(e.Values) > 255:
			errs = append(errs, v.NewInvalid(ep.Child("values"), len(e.Values), "must have at most 255 items"))
		}
		for i, val := range e.Values {
			switch {
			case e.Operator == "In" && val == 0:
				errs = append(errs, v.NewInvalid(ep.Child("values").Index(i), val, "must not be 0 for the In operator"))
			case i > 0 && val == e.Values[i-1]:
				errs = append(errs, v.NewDuplicate(ep.Child("values").Index(i), val))
			case i > 0 && val < e.Values[i-1]:
				errs = append(errs, v.NewInvalid(ep.Child("values").Index(i), val, "must be ordered"))
			}
		}
	}
	for i, c := range r.OnPodConditions {
		cp := rp.Child("onPodConditions").Index(i)
		if c.Type == "" {
			errs = append(errs, v.NewRequired(cp.Child("type"), ""))
		}
		if st := string(c.Status); st != "True" && st != "False" && st != "Unknown" {
			errs = append(errs, v.NewNotSupported(cp.Child("status"), st, []string{"True", "False", "Unknown"}))
		}
	}
	return errs
}

func hasContainer(s *core.PodSpec, name string) bool {
	for _, list := range [][]core.Container{s.InitContainers, s.Containers} {
		for _, c := range list {
			if c.Name == name {
				return true
			}
		}
	}
	return false
}

// ParseIndexes reads a set of indexes written as Kubernetes writes them
// ("0,2-4"), each below n, in increasing order without overlaps.
func ParseIndexes(text string, n int) (map[int]bool, error) {
	out := map[int]bool{}
	last := -1
	for _, part := range strings.Split(text, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		b := a
		if err == nil && isRange {
			b, err = strconv.Atoi(hi)
		}
		switch {
		case err != nil:
			return nil, fmt.Errorf("cannot convert string to integer for index: %q", part)
		case a < 0 || b >= n || a > b:
			return nil, fmt.Errorf("index %q out of range 0 to %d", part, n-1)
		case a <= last:
			return nil, fmt.Errorf("non-increasing order, previous: %d, current: %d", last, a)
		}
		for i := a; i <= b; i++ {
			out[i] = true
		}
		last = b
	}
	return out, nil
}
