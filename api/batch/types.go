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
	// PodFailurePolicy decides, rule by rule, what a failed pod means:
	// the Job fails at once (FailJob), its index fails (FailIndex), the
	// failure does not count (Ignore), or it counts (Count, the default).
	PodFailurePolicy *PodFailurePolicy `json:"podFailurePolicy,omitempty"`
	// SuccessPolicy (Indexed Jobs) declares the Job succeeded before every
	// index has: once some indexes, or a number of them, succeeded.
	SuccessPolicy *SuccessPolicy `json:"successPolicy,omitempty"`
	// BackoffLimitPerIndex (Indexed Jobs) limits the failures of each
	// index; an index past it fails and is not retried, the others go on.
	BackoffLimitPerIndex *int32 `json:"backoffLimitPerIndex,omitempty"`
	// MaxFailedIndexes fails the whole Job once more indexes than this
	// have failed (with BackoffLimitPerIndex).
	MaxFailedIndexes *int32 `json:"maxFailedIndexes,omitempty"`
	// PodReplacementPolicy says when a pod is replaced: once it is
	// terminating or failed (TerminatingOrFailed, the default), or only
	// once it has failed (Failed; the default with a PodFailurePolicy).
	PodReplacementPolicy *string `json:"podReplacementPolicy,omitempty"`
}

// PodFailurePolicy is an ordered list of rules; the first that matches a
// failed pod decides.
type PodFailurePolicy struct {
	Rules []PodFailurePolicyRule `json:"rules"`
}

// PodFailurePolicyRule matches a failed pod by its containers' exit codes
// or by its conditions.
type PodFailurePolicyRule struct {
	Action          string                                   `json:"action"`
	OnExitCodes     *PodFailurePolicyOnExitCodesRequirement  `json:"onExitCodes,omitempty"`
	OnPodConditions []PodFailurePolicyOnPodConditionsPattern `json:"onPodConditions,omitempty"`
}

// PodFailurePolicyOnExitCodesRequirement: a container (of that name, or
// any) ended with a non-zero exit code In (or NotIn) Values.
type PodFailurePolicyOnExitCodesRequirement struct {
	ContainerName *string `json:"containerName,omitempty"`
	Operator      string  `json:"operator"`
	Values        []int32 `json:"values"`
}

// PodFailurePolicyOnPodConditionsPattern: the pod has a condition of this
// type with this status (True by default).
type PodFailurePolicyOnPodConditionsPattern struct {
	Type   string               `json:"type"`
	Status meta.ConditionStatus `json:"status"`
}

// Pod failure policy actions, and the pod replacement policies.
const (
	PodFailurePolicyActionFailJob   = "FailJob"
	PodFailurePolicyActionFailIndex = "FailIndex"
	PodFailurePolicyActionIgnore    = "Ignore"
	PodFailurePolicyActionCount     = "Count"

	TerminatingOrFailed = "TerminatingOrFailed"
	Failed              = "Failed"
)

// SuccessPolicy is a list of alternative rules; the first met declares
// the Job succeeded.
type SuccessPolicy struct {
	Rules []SuccessPolicyRule `json:"rules"`
}

// SuccessPolicyRule is met when every index of SucceededIndexes ("0,2-4")
// succeeded, or SucceededCount of them (of all indexes when unset).
type SuccessPolicyRule struct {
	SucceededIndexes *string `json:"succeededIndexes,omitempty"`
	SucceededCount   *int32  `json:"succeededCount,omitempty"`
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
	// FailedIndexes lists the indexes that failed for good (with
	// backoffLimitPerIndex), in the same form.
	FailedIndexes *string `json:"failedIndexes,omitempty"`
	// Terminating counts the Job's pods being deleted that have not
	// finished yet.
	Terminating *int32 `json:"terminating,omitempty"`
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
