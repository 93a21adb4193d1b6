package batch

import (
	"strings"
	"testing"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
)

// The pod failure policy, per-index back-off, success policy and pod
// replacement policy are checked as Kubernetes checks them.
func TestValidateJobFailureAndSuccessPolicies(t *testing.T) {
	i32p := func(v int32) *int32 { return &v }
	str := func(s string) *string { return &s }
	indexed := func(j *Job) { j.Spec.CompletionMode = str(CompletionModeIndexed) }
	for _, tt := range []struct {
		name   string
		mutate func(*Job)
		want   string // "" valid
	}{
		{"plain", func(*Job) {}, ""},
		{"a failure policy", func(j *Job) {
			j.Spec.PodFailurePolicy = &PodFailurePolicy{Rules: []PodFailurePolicyRule{
				{Action: PodFailurePolicyActionFailJob, OnExitCodes: &PodFailurePolicyOnExitCodesRequirement{ContainerName: str("c"), Operator: "In", Values: []int32{1, 42}}},
				{Action: PodFailurePolicyActionIgnore, OnPodConditions: []PodFailurePolicyOnPodConditionsPattern{{Type: "DisruptionTarget"}}}}}
		}, ""},
		{"a failure policy under OnFailure", func(j *Job) {
			j.Spec.Template.Spec.RestartPolicy = core.RestartPolicyOnFailure
			j.Spec.PodFailurePolicy = &PodFailurePolicy{Rules: []PodFailurePolicyRule{{Action: "Count", OnExitCodes: &PodFailurePolicyOnExitCodesRequirement{Operator: "In", Values: []int32{1}}}}}
		}, `spec.template.spec.restartPolicy: Invalid value: "OnFailure": only "Never" is supported when podFailurePolicy is specified`},
		{"exit code 0 with In", func(j *Job) {
			j.Spec.PodFailurePolicy = &PodFailurePolicy{Rules: []PodFailurePolicyRule{{Action: "Count", OnExitCodes: &PodFailurePolicyOnExitCodesRequirement{Operator: "In", Values: []int32{0}}}}}
		}, "spec.podFailurePolicy.rules[0].onExitCodes.values[0]: Invalid value: 0: must not be 0 for the In operator"},
		{"unordered exit codes", func(j *Job) {
			j.Spec.PodFailurePolicy = &PodFailurePolicy{Rules: []PodFailurePolicyRule{{Action: "Count", OnExitCodes: &PodFailurePolicyOnExitCodesRequirement{Operator: "NotIn", Values: []int32{5, 2}}}}}
		}, "spec.podFailurePolicy.rules[0].onExitCodes.values[1]: Invalid value: 2: must be ordered"},
		{"an unknown container", func(j *Job) {
			j.Spec.PodFailurePolicy = &PodFailurePolicy{Rules: []PodFailurePolicyRule{{Action: "Count", OnExitCodes: &PodFailurePolicyOnExitCodesRequirement{ContainerName: str("nope"), Operator: "In", Values: []int32{1}}}}}
		}, "spec.podFailurePolicy.rules[0].onExitCodes.containerName: Invalid value: \"nope\": must be one of the container or initContainer names in the pod template"},
		{"FailIndex without a per-index limit", func(j *Job) {
			j.Spec.PodFailurePolicy = &PodFailurePolicy{Rules: []PodFailurePolicyRule{{Action: "FailIndex", OnExitCodes: &PodFailurePolicyOnExitCodesRequirement{Operator: "In", Values: []int32{1}}}}}
		}, "spec.podFailurePolicy.rules[0].action: Invalid value: \"FailIndex\": requires the backoffLimitPerIndex to be set"},
		{"a rule with both requirements", func(j *Job) {
			j.Spec.PodFailurePolicy = &PodFailurePolicy{Rules: []PodFailurePolicyRule{{Action: "Count", OnExitCodes: &PodFailurePolicyOnExitCodesRequirement{Operator: "In", Values: []int32{1}},
				OnPodConditions: []PodFailurePolicyOnPodConditionsPattern{{Type: "DisruptionTarget", Status: meta.ConditionTrue}}}}}
		}, "specifying both OnExitCodes and OnPodConditions is not supported"},
		{"a per-index limit without Indexed", func(j *Job) { j.Spec.BackoffLimitPerIndex = i32p(1) }, "spec.backoffLimitPerIndex: Invalid value: 1: requires indexed completion mode"},
		{"maxFailedIndexes without a per-index limit", func(j *Job) { indexed(j); j.Spec.MaxFailedIndexes = i32p(1) }, "spec.backoffLimitPerIndex: Required value: when maxFailedIndexes is specified"},
		{"maxFailedIndexes above completions", func(j *Job) {
			indexed(j)
			j.Spec.BackoffLimitPerIndex, j.Spec.MaxFailedIndexes = i32p(1), i32p(9)
		}, "spec.maxFailedIndexes: Invalid value: 9: must be less than or equal to completions"},
		{"a success policy", func(j *Job) {
			indexed(j)
			j.Spec.SuccessPolicy = &SuccessPolicy{Rules: []SuccessPolicyRule{{SucceededIndexes: str("0,2-3"), SucceededCount: i32p(2)}}}
		}, ""},
		{"a success policy's index out of range", func(j *Job) {
			indexed(j)
			j.Spec.SuccessPolicy = &SuccessPolicy{Rules: []SuccessPolicyRule{{SucceededIndexes: str("0-4")}}}
		}, `spec.successPolicy.rules[0].succeededIndexes: Invalid value: "0-4": index "0-4" out of range 0 to 3`},
		{"a success policy's count above its indexes", func(j *Job) {
			indexed(j)
			j.Spec.SuccessPolicy = &SuccessPolicy{Rules: []SuccessPolicyRule{{SucceededIndexes: str("1"), SucceededCount: i32p(2)}}}
		}, "spec.successPolicy.rules[0].succeededCount: Invalid value: 2: must be less than or equal to 1 (the number of indexes in the specified succeededIndexes field)"},
		{"a success policy without Indexed", func(j *Job) {
			j.Spec.SuccessPolicy = &SuccessPolicy{Rules: []SuccessPolicyRule{{SucceededCount: i32p(1)}}}
		}, "requires indexed completion mode"},
		{"replacement Terminating with a failure policy", func(j *Job) {
			j.Spec.PodReplacementPolicy = str(TerminatingOrFailed)
			j.Spec.PodFailurePolicy = &PodFailurePolicy{Rules: []PodFailurePolicyRule{{Action: "Count", OnExitCodes: &PodFailurePolicyOnExitCodesRequirement{Operator: "In", Values: []int32{1}}}}}
		}, `spec.podReplacementPolicy: Unsupported value: "TerminatingOrFailed"`},
	} {
		j := &Job{ObjectMeta: meta.ObjectMeta{Name: "pi", Namespace: "default"}, Spec: JobSpec{Completions: i32p(4),
			Template: core.PodTemplateSpec{Spec: core.PodSpec{RestartPolicy: core.RestartPolicyNever, Containers: []core.Container{{Name: "c", Image: "i"}}}}}}
		tt.mutate(j)
		SetDefaultsJob(j)
		err := ValidateJob(j).ToError()
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%s: %v", tt.name, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%s: %v, want %q", tt.name, err, tt.want)
		}
	}
}

// A per-index limit makes the backoff limit unlimited; a failure policy
// makes the replacement policy Failed; a pod condition pattern's status
// is True unless said.
func TestJobDefaultsForThePolicies(t *testing.T) {
	one := int32(1)
	j := &Job{Spec: JobSpec{BackoffLimitPerIndex: &one, PodFailurePolicy: &PodFailurePolicy{Rules: []PodFailurePolicyRule{
		{Action: "Ignore", OnPodConditions: []PodFailurePolicyOnPodConditionsPattern{{Type: "DisruptionTarget"}}}}}}}
	SetDefaultsJob(j)
	if *j.Spec.BackoffLimit != 1<<31-1 || *j.Spec.PodReplacementPolicy != Failed || j.Spec.PodFailurePolicy.Rules[0].OnPodConditions[0].Status != meta.ConditionTrue {
		t.Errorf("defaults: backoffLimit %d, podReplacementPolicy %s, status %q", *j.Spec.BackoffLimit, *j.Spec.PodReplacementPolicy, j.Spec.PodFailurePolicy.Rules[0].OnPodConditions[0].Status)
	}
}
