package batch

import (
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
