package printers

import (
	"testing"

	"github.com/kobune/kobune/api/batch"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/api/scheme"
)

// kubectl get jobs' STATUS: the first of Complete, Failed, Terminating,
// Suspended, FailureTarget, SuccessCriteriaMet that holds, else Running.
func TestJobStatusColumn(t *testing.T) {
	k, _ := scheme.ByResource("jobs")
	table := For(k, false)
	if table.Headers[1] != "STATUS" {
		t.Fatalf("headers %v", table.Headers)
	}
	cond := func(types ...string) []batch.JobCondition {
		var out []batch.JobCondition
		for _, typ := range types {
			out = append(out, batch.JobCondition{Type: typ, Status: meta.ConditionTrue})
		}
		return out
	}
	now := meta.Now()
	for want, j := range map[string]*batch.Job{
		"Running":            {},
		"Complete":           {Status: batch.JobStatus{Conditions: cond("SuccessCriteriaMet", "Complete")}},
		"Failed":             {Status: batch.JobStatus{Conditions: cond("FailureTarget", "Failed")}},
		"FailureTarget":      {Status: batch.JobStatus{Conditions: cond("FailureTarget")}},
		"SuccessCriteriaMet": {Status: batch.JobStatus{Conditions: cond("SuccessCriteriaMet")}},
		"Suspended":          {Status: batch.JobStatus{Conditions: cond("Suspended")}},
		"Terminating":        {ObjectMeta: meta.ObjectMeta{DeletionTimestamp: &now}, Status: batch.JobStatus{Conditions: cond("Suspended")}},
	} {
		j.Name = "pi"
		if got := table.Row(j)[1]; got != want {
			t.Errorf("conditions %+v: STATUS %q, want %q", j.Status.Conditions, got, want)
		}
	}
}
