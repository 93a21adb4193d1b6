package controllermanager_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kobune/kobune/api/batch"
	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/client"
	"github.com/kobune/kobune/controller/job"
	testcluster "github.com/kobune/kobune/test/cluster"
)

func i32(v int32) *int32 { return &v }

// simulated is a Job whose pods, on the fake runtime, exit at once with code.
func simulated(name string, code string, completions, parallelism, backoffLimit int32) *batch.Job {
	return &batch.Job{ObjectMeta: meta.ObjectMeta{Name: name, Namespace: "default"},
		Spec: batch.JobSpec{Completions: i32(completions), Parallelism: i32(parallelism), BackoffLimit: i32(backoffLimit),
			Template: core.PodTemplateSpec{Spec: core.PodSpec{RestartPolicy: core.RestartPolicyNever,
				Containers: []core.Container{{Name: "work", Image: "kobune.local/busybox:1.35", Command: []string{"exit", code}}}}}}}
}

func jobCondition(j *batch.Job, typ string) *batch.JobCondition {
	for i := range j.Status.Conditions {
		if j.Status.Conditions[i].Type == typ && j.Status.Conditions[i].Status == meta.ConditionTrue {
			return &j.Status.Conditions[i]
		}
	}
	return nil
}

// TestJobs: a Job of 4 completions, 2 at a time, completes with exactly 4
// pods; a Job whose pods fail stops at backoffLimit + 1 failures.
func TestJobs(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := testcluster.Start(t, ctx, testcluster.Options{Nodes: 2, JobBackoffBase: 100 * time.Millisecond}).Client
	jobs := client.For[*batch.Job](c)
	if _, err := jobs.Create(ctx, simulated("works", "0", 4, 2, 6)); err != nil {
		t.Fatal(err)
	}
	if _, err := jobs.Create(ctx, simulated("breaks", "1", 1, 1, 2)); err != nil {
		t.Fatal(err)
	}
	wait := func(name, typ string) *batch.Job {
		t.Helper()
		wctx, wcancel := context.WithTimeout(ctx, 30*time.Second)
		defer wcancel()
		j, err := client.WaitFor(wctx, jobs, "default", name, 0, func(j *batch.Job, _ bool) bool { return jobCondition(j, typ) != nil })
		if err != nil {
			t.Fatalf("job %s not %s: %v", name, typ, err)
		}
		return j
	}
	works := wait("works", job.ConditionComplete)
	if works.Status.Succeeded != 4 || works.Status.CompletionTime == nil {
		t.Errorf("works: %+v", works.Status)
	}
	breaks := wait("breaks", job.ConditionFailed)
	if c := jobCondition(breaks, job.ConditionFailed); c.Reason != job.ReasonBackoffLimitExceeded {
		t.Errorf("breaks failed with %q", c.Reason)
	}
	pods := client.For[*core.Pod](c)
	count := func(name string) (total, failed int) {
		list, _, err := pods.List(ctx, "default", client.ListOptions{LabelSelector: job.LabelJobName + "=" + name})
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range list {
			total++
			if p.Status.Phase == core.PodFailed {
				failed++
			}
		}
		return total, failed
	}
	if total, _ := count("works"); total != 4 {
		t.Errorf("works made %d pods for 4 completions", total)
	}
	time.Sleep(500 * time.Millisecond) // a pod past the limit would show up now
	if total, failed := count("breaks"); total != 3 || failed != 3 {
		t.Errorf("breaks made %d pods (%d failed), want 3: backoffLimit 2 allows 2 retries", total, failed)
	}
}

// TestCronJobForbidNeverOverlaps drives the CronJob controller's clock
// minute by minute. The Jobs' pods run for ever, so with Forbid no second
// Job may start while the first is active; once it is deleted, the next
// due minute starts one. A watch checks that no two Jobs are ever active.
func TestCronJobForbidNeverOverlaps(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var clock atomic.Int64
	// The controller counts runs from the CronJob's creation, which the API
	// server stamps with the real clock, so the fake clock is set from that
	// stamp once the CronJob exists (until then it is far in the past:
	// nothing is due). A fixed 2026-12-01 12:00:30 made this test fail from
	// that moment on: every run was due before the CronJob existed.
	clock.Store(time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano())
	now := func() time.Time { return time.Unix(0, clock.Load()).UTC() }
	c := testcluster.Start(t, ctx, testcluster.Options{Nodes: 1, CronJobClock: now}).Client
	cjs := client.For[*batch.CronJob](c)
	cj := &batch.CronJob{ObjectMeta: meta.ObjectMeta{Name: "tick", Namespace: "default"},
		Spec: batch.CronJobSpec{Schedule: "* * * * *", ConcurrencyPolicy: "Forbid",
			JobTemplate: batch.JobTemplateSpec{Spec: batch.JobSpec{Template: core.PodTemplateSpec{Spec: core.PodSpec{RestartPolicy: core.RestartPolicyNever,
				Containers: []core.Container{{Name: "work", Image: "kobune.local/busybox:1.35"}}}}}}}}
	made, err := cjs.Create(ctx, cj)
	if err != nil {
		t.Fatal(err)
	}
	// 30 s into the minute of the creation: the next run is the next minute's.
	clock.Store(made.CreationTimestamp.Time.Truncate(time.Minute).Add(30 * time.Second).UnixNano())
	jobs := client.For[*batch.Job](c)
	w, err := jobs.Watch(ctx, "default", client.ListOptions{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	active := map[string]bool{}
	maxActive, created := 0, 0
	go func() {
		for ev := range w.Events {
			mu.Lock()
			if ev.Type == "ADDED" {
				created++
			}
			if ev.Type == "DELETED" || ev.Object.DeletionTimestamp != nil {
				delete(active, ev.Object.Name)
			} else {
				active[ev.Object.Name] = true
			}
			maxActive = max(maxActive, len(active))
			mu.Unlock()
		}
	}()
	tick := func() { // one minute later, and a nudge so the controller looks now
		clock.Add(int64(time.Minute))
		for {
			cur, err := cjs.Get(ctx, "default", "tick")
			if err != nil {
				t.Fatal(err)
			}
			cur.Annotations = map[string]string{"test/now": now().Format(time.RFC3339)}
			if _, err = cjs.Update(ctx, cur); err == nil || !client.IsConflict(err) {
				break
			}
		}
	}
	jobCount := func(want int) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			mu.Lock()
			n := created
			mu.Unlock()
			if n == want {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%d Jobs created, want %d", n, want)
			}
		}
	}
	tick() // hh:mm+1:30 → the run of minute mm+1
	jobCount(1)
	for range 3 {
		tick()
		time.Sleep(300 * time.Millisecond)
	}
	jobCount(1) // Forbid: the first still runs
	list, _, _ := jobs.List(ctx, "default", client.ListOptions{})
	if err := jobs.Delete(ctx, "default", list[0].Name, client.DeleteOptions{PropagationPolicy: "Background"}); err != nil {
		t.Fatal(err)
	}
	tick()
	jobCount(2)
	mu.Lock()
	defer mu.Unlock()
	if maxActive != 1 {
		t.Errorf("%d Jobs were active at once under Forbid", maxActive)
	}
}
