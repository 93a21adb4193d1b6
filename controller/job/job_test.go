package job

import (
	"context"
	"testing"
	"time"

	"github.com/kobune/kobune/api/batch"
	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/client"
	"github.com/kobune/kobune/controller"
	"github.com/kobune/kobune/controller/controllertest"
)

var now = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

func i32(v int32) *int32 { return &v }

func newJob(completions, parallelism, backoffLimit int32, mutate ...func(*batch.Job)) *batch.Job {
	j := &batch.Job{ObjectMeta: meta.ObjectMeta{Name: "pi", Namespace: "default", UID: "job-uid"},
		Spec: batch.JobSpec{Completions: i32(completions), Parallelism: i32(parallelism), BackoffLimit: i32(backoffLimit),
			Selector: &meta.LabelSelector{MatchLabels: map[string]string{LabelControllerUID: "job-uid"}},
			Template: core.PodTemplateSpec{Spec: core.PodSpec{RestartPolicy: core.RestartPolicyNever, Containers: []core.Container{{Name: "c", Image: "i"}}}}}}
	start := meta.NewTime(now.Add(-time.Minute))
	j.Status.StartTime = &start
	for _, m := range mutate {
		m(j)
	}
	return j
}

func jobPod(name string, phase core.PodPhase, finished time.Duration) *core.Pod {
	yes := true
	p := &core.Pod{ObjectMeta: meta.ObjectMeta{Name: name, Namespace: "default", UID: "uid-" + name, CreationTimestamp: meta.NewTime(now.Add(-time.Hour)),
		Labels:          map[string]string{LabelControllerUID: "job-uid"},
		OwnerReferences: []meta.OwnerReference{{Kind: "Job", Name: "pi", UID: "job-uid", Controller: &yes}}}}
	p.Status.Phase = phase
	if phase == core.PodFailed || phase == core.PodSucceeded {
		p.Status.ContainerStatuses = []core.ContainerStatus{{Name: "c", State: core.ContainerState{Terminated: &core.ContainerStateTerminated{FinishedAt: meta.NewTime(now.Add(-finished))}}}}
	}
	return p
}

func fixture(j *batch.Job, pods ...*core.Pod) (*Controller, *controllertest.API) {
	c, api := controllertest.NewClient()
	inf := controller.NewInformers(c)
	inf.Jobs.Seed(j)
	inf.Pods.Seed(pods...)
	jc := New(c, inf, client.NewAsyncRecorder(&client.Recorder{Client: c, Component: Name}, 100), Config{BackoffBase: 10 * time.Second})
	jc.now = func() time.Time { return now }
	return jc, api
}

func status(t *testing.T, api *controllertest.API) batch.JobStatus {
	t.Helper()
	st := api.Filter("updatestatus", "jobs")
	if len(st) == 0 {
		t.Fatal("no status written")
	}
	return controllertest.Decode[batch.Job](st[len(st)-1]).Status
}

func condition(st batch.JobStatus, typ string) *batch.JobCondition {
	for i := range st.Conditions {
		if st.Conditions[i].Type == typ {
			return &st.Conditions[i]
		}
	}
	return nil
}

func TestParallelismAndCompletions(t *testing.T) {
	// 5 completions, 2 at a time: 3 succeeded, 1 running → 1 more now.
	jc, api := fixture(newJob(5, 2, 6), jobPod("a", core.PodSucceeded, time.Hour), jobPod("b", core.PodSucceeded, time.Hour),
		jobPod("c", core.PodSucceeded, time.Hour), jobPod("d", core.PodRunning, 0))
	if _, err := jc.Reconcile(context.Background(), "default/pi"); err != nil {
		t.Fatal(err)
	}
	creates := api.Filter("create", "pods")
	if len(creates) != 1 {
		t.Fatalf("%d pods created, want 1 (2 left to complete, 1 running)", len(creates))
	}
	p := controllertest.Decode[core.Pod](creates[0])
	if p.Labels[LabelJobName] != "pi" || p.Labels[LabelControllerUID] != "job-uid" || meta.ControllerOf(&p).UID != "job-uid" {
		t.Errorf("pod labels %v owner %v", p.Labels, p.OwnerReferences)
	}
	if st := status(t, api); st.Succeeded != 3 || st.Active != 1 {
		t.Errorf("status %+v", st)
	}
}

func TestCompleteWhenEnoughSucceeded(t *testing.T) {
	jc, api := fixture(newJob(2, 2, 6), jobPod("a", core.PodSucceeded, time.Hour), jobPod("b", core.PodSucceeded, time.Hour))
	if _, err := jc.Reconcile(context.Background(), "default/pi"); err != nil {
		t.Fatal(err)
	}
	st := status(t, api)
	if c := condition(st, ConditionComplete); c == nil || c.Status != meta.ConditionTrue || st.CompletionTime == nil {
		t.Errorf("status %+v, want Complete with a completion time", st)
	}
	if n := len(api.Filter("create", "pods")); n != 0 {
		t.Errorf("%d pods created for a complete job", n)
	}
}

func TestBackoffLimitAndBackoff(t *testing.T) {
	// Two failures with backoffLimit 1: the Job fails and its running pod goes.
	jc, api := fixture(newJob(1, 1, 1), jobPod("a", core.PodFailed, time.Hour), jobPod("b", core.PodFailed, time.Minute), jobPod("c", core.PodRunning, 0))
	if _, err := jc.Reconcile(context.Background(), "default/pi"); err != nil {
		t.Fatal(err)
	}
	st := status(t, api)
	if c := condition(st, ConditionFailed); c == nil || c.Reason != ReasonBackoffLimitExceeded {
		t.Errorf("conditions %+v, want Failed BackoffLimitExceeded", st.Conditions)
	}
	if d := api.Filter("delete", "pods"); len(d) != 1 || d[0].Name != "c" {
		t.Errorf("deleted %v, want the running pod c", d)
	}

	// One failure 4 s ago with backoffLimit 6: wait 10 s after it.
	jc, api = fixture(newJob(1, 1, 6), jobPod("a", core.PodFailed, 4*time.Second))
	res, err := jc.Reconcile(context.Background(), "default/pi")
	if err != nil {
		t.Fatal(err)
	}
	if n := len(api.Filter("create", "pods")); n != 0 || res.RequeueAfter != 6*time.Second {
		t.Errorf("%d creates, requeue %v: want none and 6s (10 s back-off after the failure)", n, res.RequeueAfter)
	}
	// Three failures, the last 30 s ago: 40 s back-off → 10 s more.
	jc, _ = fixture(newJob(1, 1, 6), jobPod("a", core.PodFailed, time.Hour), jobPod("b", core.PodFailed, time.Hour), jobPod("c", core.PodFailed, 30*time.Second))
	if res, _ := jc.Reconcile(context.Background(), "default/pi"); res.RequeueAfter != 10*time.Second {
		t.Errorf("requeue %v after 3 failures, want 10s", res.RequeueAfter)
	}
}

func TestActiveDeadline(t *testing.T) {
	d := int64(30)
	jc, api := fixture(newJob(1, 1, 6, func(j *batch.Job) { j.Spec.ActiveDeadlineSeconds = &d }), jobPod("a", core.PodRunning, 0))
	if _, err := jc.Reconcile(context.Background(), "default/pi"); err != nil {
		t.Fatal(err)
	}
	if c := condition(status(t, api), ConditionFailed); c == nil || c.Reason != ReasonDeadlineExceeded {
		t.Errorf("want Failed DeadlineExceeded after 60 s with a 30 s deadline")
	}
}

func TestSuspendDeletesActivePods(t *testing.T) {
	yes := true
	jc, api := fixture(newJob(1, 1, 6, func(j *batch.Job) { j.Spec.Suspend = &yes }), jobPod("a", core.PodRunning, 0))
	if _, err := jc.Reconcile(context.Background(), "default/pi"); err != nil {
		t.Fatal(err)
	}
	if d := api.Filter("delete", "pods"); len(d) != 1 || condition(status(t, api), ConditionSuspended) == nil {
		t.Errorf("suspend: deletes %v", d)
	}
}

func TestTTLAfterFinished(t *testing.T) {
	ttl := int32(100)
	done := func(age time.Duration) func(*batch.Job) {
		return func(j *batch.Job) {
			j.Spec.TTLSecondsAfterFinished = &ttl
			j.Status.Conditions = []batch.JobCondition{{Type: ConditionComplete, Status: meta.ConditionTrue, LastTransitionTime: meta.NewTime(now.Add(-age))}}
		}
	}
	jc, api := fixture(newJob(1, 1, 6, done(40*time.Second)))
	res, _ := jc.Reconcile(context.Background(), "default/pi")
	if len(api.Actions()) != 0 || res.RequeueAfter != 60*time.Second {
		t.Errorf("before the TTL: writes %v, requeue %v", api.Actions(), res.RequeueAfter)
	}
	jc, api = fixture(newJob(1, 1, 6, done(101*time.Second)))
	if _, err := jc.Reconcile(context.Background(), "default/pi"); err != nil {
		t.Fatal(err)
	}
	if d := api.Filter("delete", "jobs"); len(d) != 1 || d[0].PropagationPolicy != "Background" {
		t.Errorf("after the TTL: deletes %+v", d)
	}
}

// A pod the Job's selector matches and nobody controls is adopted and
// counted; one of the Job's pods whose labels no longer match is released
// (its controller reference taken away) and no longer counted.
func TestJobAdoptsOrphansAndReleasesPods(t *testing.T) {
	orphan := jobPod("orphan", core.PodRunning, 0)
	orphan.OwnerReferences = nil
	relabelled := jobPod("relabelled", core.PodRunning, 0)
	relabelled.Labels = map[string]string{"app": "elsewhere"}
	jc, api := fixture(newJob(2, 2, 6), orphan, relabelled)
	if _, err := jc.Reconcile(context.Background(), "default/pi"); err != nil {
		t.Fatal(err)
	}
	updates := map[string]*core.Pod{}
	for _, a := range api.Filter("update", "pods") {
		p := controllertest.Decode[core.Pod](a)
		updates[a.Name] = &p
	}
	if p := updates["orphan"]; p == nil || meta.ControllerOf(p) == nil || meta.ControllerOf(p).UID != "job-uid" {
		t.Errorf("the orphan: %+v, want adopted", p)
	}
	if p := updates["relabelled"]; p == nil || meta.ControllerOf(p) != nil {
		t.Errorf("the relabelled pod: %+v, want released", p)
	}
	if st := status(t, api); st.Active != 1 {
		t.Errorf("active %d, want 1 (the adopted orphan)", st.Active)
	}
	if c := api.Filter("create", "pods"); len(c) != 1 {
		t.Errorf("created %d pods, want 1 beside the adopted one", len(c))
	}
}
