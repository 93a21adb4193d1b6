package cronjob

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/kobune/kobune/api/batch"
	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/client"
	"github.com/kobune/kobune/controller"
	"github.com/kobune/kobune/controller/controllertest"
	"github.com/kobune/kobune/controller/job"
)

var now = time.Date(2026, 12, 1, 12, 0, 30, 0, time.UTC)

func cron(policy string, mutate ...func(*batch.CronJob)) *batch.CronJob {
	cj := &batch.CronJob{ObjectMeta: meta.ObjectMeta{Name: "tick", Namespace: "default", UID: "cj-uid", CreationTimestamp: meta.NewTime(now.Add(-90 * time.Second))},
		Spec: batch.CronJobSpec{Schedule: "* * * * *", ConcurrencyPolicy: policy,
			JobTemplate: batch.JobTemplateSpec{Spec: batch.JobSpec{Template: core.PodTemplateSpec{Spec: core.PodSpec{Containers: []core.Container{{Name: "c", Image: "i"}}}}}}}}
	for _, m := range mutate {
		m(cj)
	}
	return cj
}

// ownedJob is a Job of the CronJob for the run at minute m before now;
// done: "", "Complete" or "Failed".
func ownedJob(minutesAgo int, done string) *batch.Job {
	run := now.Truncate(time.Minute).Add(-time.Duration(minutesAgo) * time.Minute)
	yes := true
	j := &batch.Job{ObjectMeta: meta.ObjectMeta{Name: "tick-" + itoa(run.Unix()/60), Namespace: "default", UID: "j-" + itoa(run.Unix()),
		Annotations:     map[string]string{ScheduledTimestampAnnotation: run.Format(time.RFC3339)},
		OwnerReferences: []meta.OwnerReference{{Kind: "CronJob", Name: "tick", UID: "cj-uid", Controller: &yes}}}}
	if done != "" {
		j.Status.Conditions = []batch.JobCondition{{Type: done, Status: meta.ConditionTrue}}
		if done == job.ConditionComplete {
			t := meta.NewTime(run.Add(10 * time.Second))
			j.Status.CompletionTime = &t
		}
	}
	return j
}

func itoa(v int64) string { return strconv.FormatInt(v, 10) }

func fixture(cj *batch.CronJob, jobs ...*batch.Job) (*Controller, *controllertest.API) {
	c, api := controllertest.NewClient()
	inf := controller.NewInformers(c)
	inf.CronJobs.Seed(cj)
	inf.Jobs.Seed(jobs...)
	for _, j := range jobs {
		api.Put("jobs", j)
	}
	cc := New(c, inf, client.NewAsyncRecorder(&client.Recorder{Client: c, Component: Name}, 100), Config{Now: func() time.Time { return now }})
	return cc, api
}

func TestRunsTheDueMinuteOnce(t *testing.T) {
	cc, api := fixture(cron("Allow"))
	res, err := cc.Reconcile(context.Background(), "default/tick")
	if err != nil {
		t.Fatal(err)
	}
	creates := api.Filter("create", "jobs")
	want := "tick-" + itoa(now.Truncate(time.Minute).Unix()/60)
	if len(creates) != 1 || creates[0].Name != want {
		t.Fatalf("created %v, want one Job %s (the latest due minute only)", creates, want)
	}
	j := controllertest.Decode[batch.Job](creates[0])
	if ref := meta.ControllerOf(&j); ref == nil || ref.UID != "cj-uid" {
		t.Errorf("owner %v", j.OwnerReferences)
	}
	if res.RequeueAfter != 30*time.Second {
		t.Errorf("requeue %v, want 30s (the next minute)", res.RequeueAfter)
	}
	st := controllertest.Decode[batch.CronJob](api.Filter("updatestatus", "cronjobs")[0]).Status
	if st.LastScheduleTime == nil || !st.LastScheduleTime.Equal(now.Truncate(time.Minute)) || len(st.Active) != 1 {
		t.Errorf("status %+v", st)
	}
}

func TestForbidSkipsWhileActiveReplaceDeletes(t *testing.T) {
	last := func(cj *batch.CronJob) {
		t := meta.NewTime(now.Truncate(time.Minute).Add(-time.Minute))
		cj.Status.LastScheduleTime = &t
	}
	cc, api := fixture(cron("Forbid", last), ownedJob(1, ""))
	if _, err := cc.Reconcile(context.Background(), "default/tick"); err != nil {
		t.Fatal(err)
	}
	if n := len(api.Filter("create", "jobs")); n != 0 {
		t.Errorf("Forbid created %d Jobs while one is active", n)
	}
	cc, api = fixture(cron("Replace", last), ownedJob(1, ""))
	if _, err := cc.Reconcile(context.Background(), "default/tick"); err != nil {
		t.Fatal(err)
	}
	if d, c := api.Filter("delete", "jobs"), api.Filter("create", "jobs"); len(d) != 1 || len(c) != 1 {
		t.Errorf("Replace: deletes %v, creates %v; want the active one replaced", d, c)
	}
	cc, api = fixture(cron("Allow", last), ownedJob(1, ""))
	if _, err := cc.Reconcile(context.Background(), "default/tick"); err != nil {
		t.Fatal(err)
	}
	if n := len(api.Filter("create", "jobs")); n != 1 {
		t.Errorf("Allow created %d Jobs beside the active one, want 1", n)
	}
}

func TestStartingDeadlineAndSuspend(t *testing.T) {
	ten := int64(10)
	cc, api := fixture(cron("Allow", func(cj *batch.CronJob) { cj.Spec.StartingDeadlineSeconds = &ten }))
	if _, err := cc.Reconcile(context.Background(), "default/tick"); err != nil {
		t.Fatal(err)
	}
	if n := len(api.Filter("create", "jobs")); n != 0 {
		t.Errorf("a run 30 s late with a 10 s starting deadline was started")
	}
	yes := true
	cc, api = fixture(cron("Allow", func(cj *batch.CronJob) { cj.Spec.Suspend = &yes }))
	if _, err := cc.Reconcile(context.Background(), "default/tick"); err != nil {
		t.Fatal(err)
	}
	if n := len(api.Filter("create", "jobs")); n != 0 {
		t.Errorf("a suspended CronJob started %d Jobs", n)
	}
}

func TestHistoryLimits(t *testing.T) {
	one := int32(1)
	cc, api := fixture(cron("Allow", func(cj *batch.CronJob) {
		cj.Spec.SuccessfulJobsHistoryLimit = &one
		ts := meta.NewTime(now.Truncate(time.Minute))
		cj.Status.LastScheduleTime = &ts
	}), ownedJob(5, job.ConditionComplete), ownedJob(4, job.ConditionComplete), ownedJob(3, job.ConditionComplete),
		ownedJob(2, job.ConditionFailed), ownedJob(1, job.ConditionFailed))
	if _, err := cc.Reconcile(context.Background(), "default/tick"); err != nil {
		t.Fatal(err)
	}
	deleted := map[string]bool{}
	for _, d := range api.Filter("delete", "jobs") {
		deleted[d.Name] = true
	}
	want := []*batch.Job{ownedJob(5, ""), ownedJob(4, ""), ownedJob(2, "")}
	if len(deleted) != 3 {
		t.Errorf("deleted %v, want the two older successes and the older failure", deleted)
	}
	for _, j := range want {
		if !deleted[j.Name] {
			t.Errorf("%s not deleted (deleted %v)", j.Name, deleted)
		}
	}
}
