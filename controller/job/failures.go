package job

import (
	"fmt"
	"slices"

	"github.com/kobune/kobune/api/batch"
	"github.com/kobune/kobune/api/core"
)

// failures is what a Job's failed pods mean, by its podFailurePolicy and
// backoffLimitPerIndex (Kubernetes' pod failure policy and per-index
// back-off).
type failures struct {
	// counted: the failed pods that count toward backoffLimit (not the
	// ignored ones).
	counted int32
	// failJob is the message of the first FailJob rule a pod matched.
	failJob string
	// failedIndexes are the indexes failed for good: a FailIndex rule
	// matched, or more failures than backoffLimitPerIndex.
	failedIndexes map[int]bool
}

func judgeFailures(j *batch.Job, failed []*core.Pod) failures {
	v := failures{failedIndexes: map[int]bool{}}
	perIndex := map[int]int32{}
	for _, p := range failed {
		action, msg := policyAction(j, p)
		switch action {
		case batch.PodFailurePolicyActionIgnore:
			continue
		case batch.PodFailurePolicyActionFailJob:
			if v.failJob == "" {
				v.failJob = msg
			}
		case batch.PodFailurePolicyActionFailIndex:
			if i := podIndex(p); i >= 0 {
				v.failedIndexes[i] = true
			}
		}
		v.counted++
		if i := podIndex(p); i >= 0 {
			perIndex[i]++
		}
	}
	if b := j.Spec.BackoffLimitPerIndex; b != nil {
		for i, n := range perIndex {
			if n > *b {
				v.failedIndexes[i] = true
			}
		}
	}
	return v
}

// policyAction is the action of the first podFailurePolicy rule the failed
// pod matches, with Kubernetes' message; Count when none does.
func policyAction(j *batch.Job, p *core.Pod) (action, msg string) {
	if j.Spec.PodFailurePolicy == nil {
		return batch.PodFailurePolicyActionCount, ""
	}
	for i, r := range j.Spec.PodFailurePolicy.Rules {
		if e := r.OnExitCodes; e != nil {
			if name, code, ok := exitCodeMatches(p, e); ok {
				return r.Action, fmt.Sprintf("Container %s for pod %s/%s failed with exit code %d matching %s rule at index %d", name, p.Namespace, p.Name, code, r.Action, i)
			}
		}
		for _, want := range r.OnPodConditions {
			for _, c := range p.Status.Conditions {
				if string(c.Type) == want.Type && c.Status == want.Status {
					return r.Action, fmt.Sprintf("Pod %s/%s has condition %s matching %s rule at index %d", p.Namespace, p.Name, want.Type, r.Action, i)
				}
			}
		}
	}
	return batch.PodFailurePolicyActionCount, ""
}

// exitCodeMatches finds a container (of the requirement's name, if it
// names one) that ended with a non-zero exit code In (NotIn) the values.
func exitCodeMatches(p *core.Pod, e *batch.PodFailurePolicyOnExitCodesRequirement) (string, int32, bool) {
	for _, cs := range append(slices.Clone(p.Status.InitContainerStatuses), p.Status.ContainerStatuses...) {
		t := cs.State.Terminated
		if t == nil || t.ExitCode == 0 || e.ContainerName != nil && *e.ContainerName != cs.Name {
			continue
		}
		if slices.Contains(e.Values, t.ExitCode) == (e.Operator == "In") {
			return cs.Name, t.ExitCode, true
		}
	}
	return "", 0, false
}
