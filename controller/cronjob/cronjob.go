// Package cronjob is kube-controller-manager's CronJob controller: it
// creates a Job from spec.jobTemplate at each time of the five-field cron
// schedule (schedule.go), named <cronjob>-<minutes since the epoch> so that
// a restarted controller can never create the same run twice; skips a run
// later than startingDeadlineSeconds; follows concurrencyPolicy (Allow runs
// overlap, Forbid skips a run while one is active, Replace deletes the
// active one first); keeps successfulJobsHistoryLimit and
// failedJobsHistoryLimit finished Jobs; and honours suspend. The schedule
// is read in spec.timeZone, else in the controller's local time, as
// Kubernetes does.
package cronjob

import (
	"context"
	"fmt"
	"maps"
	"sort"
	"strconv"
	"time"

	"github.com/kobune/kobune/api/batch"
	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/client"
	"github.com/kobune/kobune/client/reconcile"
	"github.com/kobune/kobune/controller"
	"github.com/kobune/kobune/controller/job"
)

// Name is the controller's name in logs and events.
const Name = "cronjob-controller"

// ScheduledTimestampAnnotation records the run a Job was made for.
const ScheduledTimestampAnnotation = "batch.kubernetes.io/cronjob-scheduled-timestamp"

// Controller reconciles CronJobs.
type Controller struct {
	client   *client.Client
	cronjobs *client.Informer[*batch.CronJob]
	jobs     *client.Informer[*batch.Job]
	recorder *client.AsyncRecorder
	now      func() time.Time
	// Loop is the controller's queue and workers.
	Loop *reconcile.Loop
}

// Config tunes the controller.
type Config struct {
	// Now is the clock schedules are read against (nil: the wall clock);
	// tests drive it to run a CronJob's minutes in seconds.
	Now func() time.Time
}

// New returns the controller and registers its handlers.
func New(c *client.Client, inf *controller.Informers, recorder *client.AsyncRecorder, cfg Config) *Controller {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	cc := &Controller{client: c, cronjobs: inf.CronJobs, jobs: inf.Jobs, recorder: recorder, now: cfg.Now}
	cc.Loop = reconcile.NewLoop(Name, cc, 3)
	enqueue := func(cj *batch.CronJob) { cc.Loop.Queue.Add(meta.Key(cj)) }
	inf.CronJobs.AddHandler(client.Handler[*batch.CronJob]{OnAdd: enqueue, OnUpdate: func(_, cj *batch.CronJob) { enqueue(cj) }})
	inf.Jobs.AddHandler(controller.OwnedBy[*batch.Job]{Kind: "CronJob", Queue: cc.Loop.Queue, Owner: controller.CachedIn(inf.CronJobs)}.Handler())
	return cc
}

// Reconcile implements reconcile.Reconciler.
func (cc *Controller) Reconcile(ctx context.Context, key string) (reconcile.Result, error) {
	cj, ok := cc.cronjobs.GetByKey(key)
	if !ok || cj.DeletionTimestamp != nil {
		return reconcile.Result{}, nil
	}
	sched, err := batch.ParseSchedule(cj.Spec.Schedule)
	if err != nil {
		cc.recorder.Event(cj, core.EventTypeWarning, "UnparseableSchedule", "unparseable schedule: "+err.Error())
		return reconcile.Result{}, reconcile.Terminal(fmt.Errorf("schedule: %w", err))
	}
	loc := time.Local
	if tz := cj.Spec.TimeZone; tz != nil && *tz != "" {
		if loc, err = time.LoadLocation(*tz); err != nil {
			cc.recorder.Event(cj, core.EventTypeWarning, "UnknownTimeZone", fmt.Sprintf("invalid timeZone %q: %v", *tz, err))
			return reconcile.Result{}, reconcile.Terminal(err)
		}
	}
	now := cc.now().In(loc)
	st := cj.Status
	active, finishedJobs := cc.ownedJobs(cj)
	active, err = cc.addUnseen(ctx, cj, active, finishedJobs)
	if err != nil {
		return reconcile.Result{}, err
	}
	st.Active = nil
	for _, j := range active {
		st.Active = append(st.Active, core.ObjectReference{Kind: "Job", APIVersion: "batch/v1", Namespace: j.Namespace, Name: j.Name, UID: j.UID})
	}
	for _, j := range finishedJobs {
		if j.Status.CompletionTime != nil && (st.LastSuccessfulTime == nil || j.Status.CompletionTime.After(st.LastSuccessfulTime.Time)) {
			t := *j.Status.CompletionTime
			st.LastSuccessfulTime = &t
		}
	}
	if err := cc.trimHistory(ctx, cj, finishedJobs); err != nil {
		return reconcile.Result{}, err
	}

	next := sched.Next(now)
	requeue := next.Sub(now)
	if cj.Spec.Suspend == nil || !*cj.Spec.Suspend {
		if run, ok := latestDue(sched, cj, now); ok {
			if err := cc.start(ctx, cj, run, active, &st, now); err != nil {
				return reconcile.Result{}, err
			}
		}
	}
	if err := cc.writeStatus(ctx, cj, st); err != nil {
		return reconcile.Result{}, err
	}
	return reconcile.Result{RequeueAfter: requeue}, nil
}

// latestDue is the most recent scheduled time not yet run: after the last
// run (or the CronJob's creation) and not after now.
func latestDue(sched *batch.Schedule, cj *batch.CronJob, now time.Time) (time.Time, bool) {
	since := cj.CreationTimestamp.Time
	if cj.Status.LastScheduleTime != nil {
		since = cj.Status.LastScheduleTime.Time
	}
	var due time.Time
	for t := sched.Next(since.In(now.Location())); !t.IsZero() && !t.After(now); t = sched.Next(t) {
		due = t
	}
	return due, !due.IsZero()
}

// start runs the Job for a scheduled time, as the concurrency policy and
// the starting deadline allow.
func (cc *Controller) start(ctx context.Context, cj *batch.CronJob, run time.Time, active []*batch.Job, st *batch.CronJobStatus, now time.Time) error {
	if d := cj.Spec.StartingDeadlineSeconds; d != nil && now.Sub(run) > time.Duration(*d)*time.Second {
		cc.recorder.Event(cj, core.EventTypeWarning, "MissSchedule", fmt.Sprintf("Missed scheduled time to start a job: %s", run.Format(time.RFC1123Z)))
		t := meta.NewTime(run)
		st.LastScheduleTime = &t
		return nil
	}
	if cj.Spec.ConcurrencyPolicy == "Forbid" || cj.Spec.ConcurrencyPolicy == "Replace" {
		// The cache may not show a Job created a moment ago (and its
		// status write may have lost a race): ask the API server.
		live, err := cc.liveActive(ctx, cj)
		if err != nil {
			return err
		}
		active = live
	}
	switch cj.Spec.ConcurrencyPolicy {
	case "Forbid":
		if len(active) > 0 {
			cc.recorder.Event(cj, core.EventTypeNormal, "JobAlreadyActive", "Not starting job because prior execution is running and concurrency policy is Forbid")
			return nil // the run is skipped; lastScheduleTime stays, so it is retried while still due
		}
	case "Replace":
		for _, j := range active {
			err := client.For[*batch.Job](cc.client).Delete(ctx, j.Namespace, j.Name, client.DeleteOptions{UID: j.UID, PropagationPolicy: "Background"})
			if err != nil && !client.IsNotFound(err) {
				return fmt.Errorf("replace job %s: %w", j.Name, err)
			}
			cc.recorder.Event(cj, core.EventTypeNormal, "SuccessfulDelete", "Deleted job "+j.Name)
		}
		st.Active = nil
	}
	j := &batch.Job{ObjectMeta: meta.ObjectMeta{
		Name:        fmt.Sprintf("%s-%d", cj.Name, run.Unix()/60),
		Namespace:   cj.Namespace,
		Labels:      maps.Clone(cj.Spec.JobTemplate.Labels),
		Annotations: maps.Clone(cj.Spec.JobTemplate.Annotations),
	}, Spec: cj.Spec.JobTemplate.Spec}
	if j.Annotations == nil {
		j.Annotations = map[string]string{}
	}
	j.Annotations[ScheduledTimestampAnnotation] = run.UTC().Format(time.RFC3339)
	j.OwnerReferences = []meta.OwnerReference{controller.ControllerRef(cj)}
	created, err := client.For[*batch.Job](cc.client).Create(ctx, j)
	switch {
	case client.IsAlreadyExists(err):
		// Made by an earlier pass (a restart between create and status).
	case err != nil:
		cc.recorder.Event(cj, core.EventTypeWarning, "FailedCreate", "Error creating job: "+client.Message(err))
		return fmt.Errorf("create job: %w", err)
	default:
		cc.recorder.Event(cj, core.EventTypeNormal, "SuccessfulCreate", "Created job "+created.Name)
		st.Active = append(st.Active, core.ObjectReference{Kind: "Job", APIVersion: "batch/v1", Namespace: created.Namespace, Name: created.Name, UID: created.UID})
	}
	t := meta.NewTime(run)
	st.LastScheduleTime = &t
	return nil
}

// addUnseen adds the Jobs the status lists as active that the cache does
// not show yet (just created, the watch behind): without them Forbid could
// start a second run. Each is checked with the API; a Job that is gone or
// finished is not active.
func (cc *Controller) addUnseen(ctx context.Context, cj *batch.CronJob, active, finished []*batch.Job) ([]*batch.Job, error) {
	known := map[string]bool{}
	for _, j := range append(append([]*batch.Job(nil), active...), finished...) {
		known[j.UID] = true
	}
	for _, ref := range cj.Status.Active {
		if known[ref.UID] {
			continue
		}
		j, err := client.For[*batch.Job](cc.client).Get(ctx, cj.Namespace, ref.Name)
		if client.IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if j.UID == ref.UID && !isFinished(j) && j.DeletionTimestamp == nil {
			active = append(active, j)
		}
	}
	return active, nil
}

// liveActive lists the CronJob's unfinished Jobs from the API server.
func (cc *Controller) liveActive(ctx context.Context, cj *batch.CronJob) ([]*batch.Job, error) {
	list, _, err := client.For[*batch.Job](cc.client).List(ctx, cj.Namespace, client.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list jobs: %w", err)
	}
	var out []*batch.Job
	for _, j := range list {
		if ref := meta.ControllerOf(j); ref != nil && ref.UID == cj.UID && !isFinished(j) && j.DeletionTimestamp == nil {
			out = append(out, j)
		}
	}
	return out, nil
}

// ownedJobs splits the CronJob's Jobs into running and finished ones.
func (cc *Controller) ownedJobs(cj *batch.CronJob) (active, finished []*batch.Job) {
	for _, j := range cc.jobs.ByIndex(controller.IndexByOwner, cj.UID) {
		if isFinished(j) {
			finished = append(finished, j)
		} else if j.DeletionTimestamp == nil {
			active = append(active, j)
		}
	}
	sort.Slice(active, func(a, b int) bool { return active[a].Name < active[b].Name })
	return active, finished
}

func isFinished(j *batch.Job) bool {
	for _, c := range j.Status.Conditions {
		if (c.Type == job.ConditionComplete || c.Type == job.ConditionFailed) && c.Status == meta.ConditionTrue {
			return true
		}
	}
	return false
}

func succeeded(j *batch.Job) bool {
	for _, c := range j.Status.Conditions {
		if c.Type == job.ConditionComplete && c.Status == meta.ConditionTrue {
			return true
		}
	}
	return false
}

// trimHistory deletes the oldest finished Jobs beyond the history limits.
func (cc *Controller) trimHistory(ctx context.Context, cj *batch.CronJob, finished []*batch.Job) error {
	keep := map[bool]int32{true: 3, false: 1}
	if l := cj.Spec.SuccessfulJobsHistoryLimit; l != nil {
		keep[true] = *l
	}
	if l := cj.Spec.FailedJobsHistoryLimit; l != nil {
		keep[false] = *l
	}
	for _, ok := range []bool{true, false} {
		var jobs []*batch.Job
		for _, j := range finished {
			if succeeded(j) == ok && j.DeletionTimestamp == nil {
				jobs = append(jobs, j)
			}
		}
		sort.Slice(jobs, func(a, b int) bool { return runMinute(jobs[a]) < runMinute(jobs[b]) })
		for i := 0; i < len(jobs)-int(keep[ok]); i++ {
			err := client.For[*batch.Job](cc.client).Delete(ctx, jobs[i].Namespace, jobs[i].Name, client.DeleteOptions{UID: jobs[i].UID, PropagationPolicy: "Background"})
			if err != nil && !client.IsNotFound(err) {
				return fmt.Errorf("delete old job %s: %w", jobs[i].Name, err)
			}
			cc.recorder.Event(cj, core.EventTypeNormal, "SawCompletedJob", "Deleted finished job "+jobs[i].Name)
		}
	}
	return nil
}

// runMinute orders a CronJob's Jobs by the run they were made for.
func runMinute(j *batch.Job) int64 {
	if t, err := time.Parse(time.RFC3339, j.Annotations[ScheduledTimestampAnnotation]); err == nil {
		return t.Unix() / 60
	}
	n, _ := strconv.ParseInt(j.Name[len(j.Name)-min(len(j.Name), 10):], 10, 64)
	return n
}

func (cc *Controller) writeStatus(ctx context.Context, cj *batch.CronJob, st batch.CronJobStatus) error {
	old := cj.Status
	same := len(old.Active) == len(st.Active) && timeEq(old.LastScheduleTime, st.LastScheduleTime) && timeEq(old.LastSuccessfulTime, st.LastSuccessfulTime)
	for i := 0; same && i < len(old.Active); i++ {
		same = old.Active[i].UID == st.Active[i].UID
	}
	if same {
		return nil
	}
	updated := *cj
	updated.Status = st
	_, err := controller.WriteStatus(ctx, cc.client, &updated)
	return err
}

func timeEq(a, b *meta.Time) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Equal(b.Time)
}
