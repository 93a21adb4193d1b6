package job

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/kobune/kobune/api/batch"
	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/controller/controllertest"
)

func indexed(j *batch.Job) {
	m := batch.CompletionModeIndexed
	j.Spec.CompletionMode = &m
}

func indexedPod(name string, index string, phase core.PodPhase) *core.Pod {
	p := jobPod(name, phase, time.Hour)
	p.Annotations = map[string]string{batch.JobCompletionIndexAnnotation: index}
	return p
}

// Issue #10 defect 7: completionMode Indexed was stored and ignored
// (ordinary pod names, no JOB_COMPLETION_INDEX).
func TestIndexedJobMakesOnePodPerIndex(t *testing.T) {
	// 5 completions, 3 at a time; index 0 and 2 succeeded (2 twice), 1 runs,
	// 4 has two pods (one is extra) → create index 3; delete a pod of 4.
	jc, api := fixture(newJob(5, 3, 6, indexed),
		indexedPod("pi-0-a", "0", core.PodSucceeded), indexedPod("pi-2-a", "2", core.PodSucceeded), indexedPod("pi-2-b", "2", core.PodSucceeded),
		indexedPod("pi-1-a", "1", core.PodRunning), indexedPod("pi-4-a", "4", core.PodRunning), indexedPod("pi-4-b", "4", core.PodRunning))
	if _, err := jc.Reconcile(context.Background(), "default/pi"); err != nil {
		t.Fatal(err)
	}
	creates := api.Filter("create", "pods")
	if len(creates) != 1 {
		t.Fatalf("%d pods created, want 1 (index 3)", len(creates))
	}
	p := controllertest.Decode[core.Pod](creates[0])
	if p.GenerateName != "pi-3-" || p.Annotations[batch.JobCompletionIndexAnnotation] != "3" || p.Labels[batch.JobCompletionIndexAnnotation] != "3" || p.Spec.Hostname != "pi-3" {
		t.Errorf("pod for index 3: generateName %q annotations %v labels %v hostname %q", p.GenerateName, p.Annotations, p.Labels, p.Spec.Hostname)
	}
	env := p.Spec.Containers[0].Env
	if len(env) != 1 || env[0].Name != "JOB_COMPLETION_INDEX" || env[0].ValueFrom == nil ||
		env[0].ValueFrom.FieldRef.FieldPath != "metadata.annotations['batch.kubernetes.io/job-completion-index']" {
		t.Errorf("env %+v, want JOB_COMPLETION_INDEX from the annotation", env)
	}
	if d := api.Filter("delete", "pods"); len(d) != 1 || !strings.HasPrefix(d[0].Name, "pi-4-") {
		t.Errorf("deletes %v, want one of index 4's two pods", d)
	}
	if st := status(t, api); st.Succeeded != 2 || st.CompletedIndexes != "0,2" {
		t.Errorf("succeeded %d, completedIndexes %q; want 2 (indexes, not pods), \"0,2\"", st.Succeeded, st.CompletedIndexes)
	}
	// The cached Job's template is untouched.
	if j, _ := jc.jobs.GetByKey("default/pi"); len(j.Spec.Template.Spec.Containers[0].Env) != 0 {
		t.Error("the cached Job's template was changed")
	}
}

func TestIndexedJobCompletesWhenEveryIndexSucceeded(t *testing.T) {
	jc, api := fixture(newJob(3, 3, 6, indexed),
		indexedPod("a", "0", core.PodSucceeded), indexedPod("b", "1", core.PodSucceeded), indexedPod("c", "1", core.PodSucceeded))
	if _, err := jc.Reconcile(context.Background(), "default/pi"); err != nil {
		t.Fatal(err)
	}
	st := status(t, api)
	if condition(st, ConditionComplete) != nil {
		t.Fatalf("complete with index 2 missing: %+v", st)
	}
	jc, api = fixture(newJob(3, 3, 6, indexed),
		indexedPod("a", "0", core.PodSucceeded), indexedPod("b", "1", core.PodSucceeded), indexedPod("c", "2", core.PodSucceeded))
	if _, err := jc.Reconcile(context.Background(), "default/pi"); err != nil {
		t.Fatal(err)
	}
	if st := status(t, api); condition(st, ConditionComplete) == nil || st.CompletedIndexes != "0-2" {
		t.Errorf("status %+v, want Complete with completedIndexes 0-2", st)
	}
}

func TestFormatIndexes(t *testing.T) {
	for want, set := range map[string]map[int]bool{"": {}, "0": {0: true}, "0-2,5": {0: true, 1: true, 2: true, 5: true}, "1,3-4": {1: true, 3: true, 4: true}} {
		if got := formatIndexes(set); got != want {
			t.Errorf("formatIndexes(%v) = %q, want %q", set, got, want)
		}
	}
}
