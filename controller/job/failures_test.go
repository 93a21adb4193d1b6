package job

import (
	"context"
	"testing"
	"time"

	"github.com/kobune/kobune/api/batch"
	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/controller/controllertest"
)

// exited makes a failed pod's container end with code.
func exited(p *core.Pod, code int32) *core.Pod {
	p.Status.ContainerStatuses[0].State.Terminated.ExitCode = code
	return p
}

func reconcileOnce(t *testing.T, jc *Controller) {
	t.Helper()
	if _, err := jc.Reconcile(context.Background(), "default/pi"); err != nil {
		t.Fatal(err)
	}
}

// A podFailurePolicy's FailJob rule fails the Job at the first matching
// failure; an Ignore rule keeps a failure from counting, and the pod is
// replaced.
func TestPodFailurePolicy(t *testing.T) {
	policy := func(j *batch.Job) {
		j.Spec.PodFailurePolicy = &batch.PodFailurePolicy{Rules: []batch.PodFailurePolicyRule{
			{Action: batch.PodFailurePolicyActionFailJob, OnExitCodes: &batch.PodFailurePolicyOnExitCodesRequirement{Operator: "In", Values: []int32{42}}},
			{Action: batch.PodFailurePolicyActionIgnore, OnPodConditions: []batch.PodFailurePolicyOnPodConditionsPattern{{Type: "DisruptionTarget", Status: meta.ConditionTrue}}},
		}}
	}
	jc, api := fixture(newJob(2, 1, 6, policy), exited(jobPod("a", core.PodFailed, time.Minute), 42))
	reconcileOnce(t, jc)
	st := status(t, api)
	c := condition(st, ConditionFailed)
	if c == nil || c.Reason != ReasonPodFailurePolicy || c.Message != "Container c for pod default/a failed with exit code 42 matching FailJob rule at index 0" {
		t.Errorf("failed condition %+v, want PodFailurePolicy with the rule's message", c)
	}
	if condition(st, ConditionFailureTarget) == nil {
		t.Errorf("no FailureTarget condition: %+v", st.Conditions)
	}

	evicted := exited(jobPod("b", core.PodFailed, time.Minute), 137)
	evicted.Status.Conditions = []core.PodCondition{{Type: "DisruptionTarget", Status: meta.ConditionTrue}}
	jc, api = fixture(newJob(2, 1, 0, policy), evicted)
	reconcileOnce(t, jc)
	if st := status(t, api); st.Failed != 0 || condition(st, ConditionFailed) != nil {
		t.Errorf("an ignored failure: failed %d, conditions %+v; want 0 and no Failed (backoffLimit 0)", st.Failed, st.Conditions)
	}
	if c := api.Filter("create", "pods"); len(c) != 1 {
		t.Errorf("created %d pods, want a replacement", len(c))
	}
}

// backoffLimitPerIndex: an index past its limit fails for good and is not
// started again while the others go on; the Job fails once every index
// has finished with one failed, or at once past maxFailedIndexes.
func TestBackoffLimitPerIndex(t *testing.T) {
	perIndex := func(maxFailed *int32) func(*batch.Job) {
		return func(j *batch.Job) {
			indexed(j)
			one := int32(1)
			j.Spec.BackoffLimitPerIndex, j.Spec.MaxFailedIndexes = &one, maxFailed
			j.Spec.BackoffLimit = i32(1 << 30)
		}
	}
	jc, api := fixture(newJob(3, 3, 6, perIndex(nil)),
		indexedPod("a", "1", core.PodFailed), indexedPod("b", "1", core.PodFailed), indexedPod("c", "0", core.PodRunning))
	jc.now = func() time.Time { return now.Add(time.Hour) } // past the back-off
	reconcileOnce(t, jc)
	st := status(t, api)
	if st.FailedIndexes == nil || *st.FailedIndexes != "1" || condition(st, ConditionFailed) != nil {
		t.Errorf("failedIndexes %v, conditions %+v; want \"1\" and the Job going on", st.FailedIndexes, st.Conditions)
	}
	creates := api.Filter("create", "pods")
	if len(creates) != 1 || controllertest.Decode[core.Pod](creates[0]).Annotations[batch.JobCompletionIndexAnnotation] != "2" {
		t.Errorf("created %d pods, want one, for index 2", len(creates))
	}

	jc, api = fixture(newJob(3, 3, 6, perIndex(nil)),
		indexedPod("a", "1", core.PodFailed), indexedPod("b", "1", core.PodFailed), indexedPod("c", "0", core.PodSucceeded), indexedPod("d", "2", core.PodSucceeded))
	reconcileOnce(t, jc)
	if c := condition(status(t, api), ConditionFailed); c == nil || c.Reason != ReasonFailedIndexes {
		t.Errorf("every index finished, one failed: %+v, want Failed FailedIndexes", c)
	}

	zero := int32(0)
	jc, api = fixture(newJob(3, 3, 6, perIndex(&zero)),
		indexedPod("a", "1", core.PodFailed), indexedPod("b", "1", core.PodFailed), indexedPod("c", "0", core.PodRunning))
	reconcileOnce(t, jc)
	if c := condition(status(t, api), ConditionFailed); c == nil || c.Reason != ReasonMaxFailedIndexesExceeded {
		t.Errorf("one failed index, maxFailedIndexes 0: %+v, want Failed MaxFailedIndexesExceeded", c)
	}
	if d := api.Filter("delete", "pods"); len(d) != 1 || d[0].Name != "c" {
		t.Errorf("deleted %v, want the running pod", d)
	}
}

// A successPolicy rule met completes an Indexed Job before every index
// has succeeded; its other pods are deleted.
func TestSuccessPolicy(t *testing.T) {
	withPolicy := func(j *batch.Job) {
		indexed(j)
		first := "0"
		j.Spec.SuccessPolicy = &batch.SuccessPolicy{Rules: []batch.SuccessPolicyRule{{SucceededIndexes: &first}}}
	}
	jc, api := fixture(newJob(3, 3, 6, withPolicy), indexedPod("a", "0", core.PodSucceeded), indexedPod("b", "1", core.PodRunning))
	reconcileOnce(t, jc)
	st := status(t, api)
	for _, typ := range []string{ConditionSuccessCriteriaMet, ConditionComplete} {
		if c := condition(st, typ); c == nil || c.Reason != ReasonSuccessPolicy || c.Message != "Matched rules at index 0" {
			t.Errorf("%s: %+v, want reason SuccessPolicy", typ, c)
		}
	}
	if d := api.Filter("delete", "pods"); len(d) != 1 || d[0].Name != "b" {
		t.Errorf("deleted %v, want the running pod", d)
	}
}

// podReplacementPolicy Failed: a pod being deleted is replaced only once
// it has failed; TerminatingOrFailed replaces it at once.
func TestPodReplacementPolicy(t *testing.T) {
	deleting := func() *core.Pod {
		p := jobPod("a", core.PodRunning, 0)
		ts := meta.NewTime(now)
		p.DeletionTimestamp = &ts
		return p
	}
	for policy, want := range map[string]int{batch.Failed: 0, batch.TerminatingOrFailed: 1} {
		jc, api := fixture(newJob(1, 1, 6, func(j *batch.Job) { j.Spec.PodReplacementPolicy = &policy }), deleting())
		reconcileOnce(t, jc)
		if c := api.Filter("create", "pods"); len(c) != want {
			t.Errorf("%s: created %d pods while one is terminating, want %d", policy, len(c), want)
		}
		if st := status(t, api); st.Terminating == nil || *st.Terminating != 1 {
			t.Errorf("%s: terminating %v, want 1", policy, st.Terminating)
		}
	}
}
