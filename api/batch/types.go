package batch

import (
	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	v "github.com/kobune/kobune/api/validation"
)

// Labels of a Job's pods (and of its generated selector), with
// Kubernetes' names.
const (
	LabelJobName       = "batch.kubernetes.io/job-name"
	LabelControllerUID = "batch.kubernetes.io/controller-uid"
)

// Job runs pods until a number of them succeed.
type Job struct {
	meta.TypeMeta   `json:",inline"`
	meta.ObjectMeta `json:"metadata"`
	Spec            JobSpec   `json:"spec"`
	Status          JobStatus `json:"status,omitzero"`
}

// JobSpec is the desired state of a Job.
type JobSpec struct {
	Parallelism             *int32               `json:"parallelism,omitempty"`
	Completions             *int32               `json:"completions,omitempty"`
	ActiveDeadlineSeconds   *int64               `json:"activeDeadlineSeconds,omitempty"`
	BackoffLimit            *int32               `json:"backoffLimit,omitempty"`
	Selector                *meta.LabelSelector  `json:"selector,omitempty"`
	ManualSelector          *bool                `json:"manualSelector,omitempty" kobune:"unsupported"`
	Template                core.PodTemplateSpec `json:"template"`
	TTLSecondsAfterFinished *int32               `json:"ttlSecondsAfterFinished,omitempty"`
	CompletionMode          *string              `json:"completionMode,omitempty"`
	Suspend                 *bool                `json:"suspend,omitempty"`
}

// JobStatus is the observed state of a Job.
type JobStatus struct {
	Conditions     []JobCondition `json:"conditions,omitempty"`
	StartTime      *meta.Time     `json:"startTime,omitempty"`
	CompletionTime *meta.Time     `json:"completionTime,omitempty"`
	Active         int32          `json:"active,omitempty"`
	Succeeded      int32          `json:"succeeded,omitempty"`
	Failed         int32          `json:"failed,omitempty"`
	Ready          *int32         `json:"ready,omitempty"`
	// CompletedIndexes lists an Indexed Job's succeeded indexes, as
	// Kubernetes writes them: "0-2,5".
	CompletedIndexes string `json:"completedIndexes,omitempty"`
}

// Completion modes, and the annotation (and label) that carries an
// Indexed Job pod's index; JOB_COMPLETION_INDEX is read from it.
const (
	CompletionModeNonIndexed     = "NonIndexed"
	CompletionModeIndexed        = "Indexed"
	JobCompletionIndexAnnotation = "batch.kubernetes.io/job-completion-index"
)

// Indexed reports whether the Job runs one pod per index 0..completions-1.
func (j *Job) Indexed() bool {
	return j.Spec.CompletionMode != nil && *j.Spec.CompletionMode == CompletionModeIndexed
}

// JobCondition is Complete or Failed (and Suspended).
type JobCondition struct {
	Type               string               `json:"type"`
	Status             meta.ConditionStatus `json:"status"`
	LastProbeTime      meta.Time            `json:"lastProbeTime,omitzero"`
	LastTransitionTime meta.Time            `json:"lastTransitionTime,omitzero"`
	Reason             string               `json:"reason,omitempty"`
	Message            string               `json:"message,omitempty"`
}

// CronJob creates Jobs on a schedule.
type CronJob struct {
	meta.TypeMeta   `json:",inline"`
	meta.ObjectMeta `json:"metadata"`
	Spec            CronJobSpec   `json:"spec"`
	Status          CronJobStatus `json:"status,omitzero"`
}

// CronJobSpec is the desired state of a CronJob.
type CronJobSpec struct {
	Schedule                   string          `json:"schedule"`
	TimeZone                   *string         `json:"timeZone,omitempty"`
	StartingDeadlineSeconds    *int64          `json:"startingDeadlineSeconds,omitempty"`
	ConcurrencyPolicy          string          `json:"concurrencyPolicy,omitempty"`
	Suspend                    *bool           `json:"suspend,omitempty"`
	JobTemplate                JobTemplateSpec `json:"jobTemplate"`
	SuccessfulJobsHistoryLimit *int32          `json:"successfulJobsHistoryLimit,omitempty"`
	FailedJobsHistoryLimit     *int32          `json:"failedJobsHistoryLimit,omitempty"`
}

// JobTemplateSpec is the Job a CronJob creates.
type JobTemplateSpec struct {
	meta.ObjectMeta `json:"metadata,omitzero"`
	Spec            JobSpec `json:"spec"`
}

// CronJobStatus is the observed state of a CronJob.
type CronJobStatus struct {
	Active             []core.ObjectReference `json:"active,omitempty"`
	LastScheduleTime   *meta.Time             `json:"lastScheduleTime,omitempty"`
	LastSuccessfulTime *meta.Time             `json:"lastSuccessfulTime,omitempty"`
}

// ValidateJobStatus checks a Job's status write: its counts are not
// negative (kube-apiserver's Job status validation).
func ValidateJobStatus(n, _ *Job) v.ErrorList {
	s := &n.Status
	var ready int64
	if s.Ready != nil {
		ready = int64(*s.Ready)
	}
	return v.NonNegativeCounts(v.NewPath("status"), v.Count{Field: "active", Value: int64(s.Active)}, v.Count{Field: "succeeded", Value: int64(s.Succeeded)},
		v.Count{Field: "failed", Value: int64(s.Failed)}, v.Count{Field: "ready", Value: ready})
}
