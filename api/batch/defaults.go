package batch

import (
	"math"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
)

func int32Ptr(i int32) *int32 { return &i }

// SetDefaultsJob applies Kubernetes' defaults: 1 completion, parallelism 1,
// backoffLimit 6 (unlimited with backoffLimitPerIndex), podReplacementPolicy
// TerminatingOrFailed (Failed with a podFailurePolicy), and a generated selector on the job's controller-uid label
// (set by the API server, which knows the uid).
func SetDefaultsJob(j *Job) {
	if j.Spec.Completions == nil && j.Spec.Parallelism == nil {
		j.Spec.Completions = int32Ptr(1)
	}
	if j.Spec.Parallelism == nil {
		j.Spec.Parallelism = int32Ptr(1)
	}
	if j.Spec.BackoffLimit == nil {
		if j.Spec.BackoffLimitPerIndex != nil {
			j.Spec.BackoffLimit = int32Ptr(math.MaxInt32) // the per-index limit decides
		} else {
			j.Spec.BackoffLimit = int32Ptr(6)
		}
	}
	if j.Spec.PodReplacementPolicy == nil {
		p := TerminatingOrFailed
		if j.Spec.PodFailurePolicy != nil {
			p = Failed
		}
		j.Spec.PodReplacementPolicy = &p
	}
	if f := j.Spec.PodFailurePolicy; f != nil {
		for i := range f.Rules {
			for k := range f.Rules[i].OnPodConditions {
				if c := &f.Rules[i].OnPodConditions[k]; c.Status == "" {
					c.Status = meta.ConditionTrue
				}
			}
		}
	}
	if j.Spec.CompletionMode == nil {
		m := CompletionModeNonIndexed
		j.Spec.CompletionMode = &m
	}
	if j.Spec.Template.Spec.RestartPolicy == "" {
		// Kubernetes requires the field; Kobune would reject "Always" anyway.
		j.Spec.Template.Spec.RestartPolicy = core.RestartPolicyNever
	}
	core.SetDefaultsPodSpec(&j.Spec.Template.Spec)
}

// SetDefaultsCronJob defaults concurrencyPolicy Allow, suspend false and
// history limits 3 successful, 1 failed.
func SetDefaultsCronJob(c *CronJob) {
	if c.Spec.ConcurrencyPolicy == "" {
		c.Spec.ConcurrencyPolicy = "Allow"
	}
	if c.Spec.Suspend == nil {
		f := false
		c.Spec.Suspend = &f
	}
	if c.Spec.SuccessfulJobsHistoryLimit == nil {
		c.Spec.SuccessfulJobsHistoryLimit = int32Ptr(3)
	}
	if c.Spec.FailedJobsHistoryLimit == nil {
		c.Spec.FailedJobsHistoryLimit = int32Ptr(1)
	}
	j := Job{Spec: c.Spec.JobTemplate.Spec}
	SetDefaultsJob(&j)
	c.Spec.JobTemplate.Spec = j.Spec
}
