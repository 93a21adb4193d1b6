// Package job is kube-controller-manager's Job controller: it runs pods
// until spec.completions of them succeed, at most spec.parallelism at once;
// counts failures against backoffLimit, waiting longer after each failure
// before the next pod (10 s doubling, to 6 min); fails the Job past
// activeDeadlineSeconds or backoffLimit (deleting its running pods); marks
// it Complete; honours suspend; and deletes finished Jobs after
// ttlSecondsAfterFinished.
//
// Pods are labelled batch.kubernetes.io/job-name and
// batch.kubernetes.io/controller-uid, and found by their controller
// reference; an orphan the Job's selector matches is adopted, a pod whose
// labels no longer match is released (controller.Claim). Kobune counts succeeded and failed pods from the pods still
// there (Kubernetes keeps tracking finalizers on them); counts never go
// down, so a failed pod deleted by hand is not forgotten while the
// controller runs.
package job

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/kobune/kobune/api/batch"
	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/api/selector"
	"github.com/kobune/kobune/client"
	"github.com/kobune/kobune/client/reconcile"
	"github.com/kobune/kobune/controller"
)

// Name is the controller's name in logs and events.
const Name = "job-controller"

// Labels put on a Job's pods, with Kubernetes' names.
const (
	LabelJobName       = batch.LabelJobName
	LabelControllerUID = batch.LabelControllerUID
)

// Condition types and reasons, with Kubernetes' names. A Job that
// succeeds gets SuccessCriteriaMet, then Complete; one that fails gets
// FailureTarget, then Failed — both with the same reason and message.
const (
	ConditionComplete           = "Complete"
	ConditionFailed             = "Failed"
	ConditionSuspended          = "Suspended"
	ConditionSuccessCriteriaMet = "SuccessCriteriaMet"
	ConditionFailureTarget      = "FailureTarget"

	ReasonBackoffLimitExceeded     = "BackoffLimitExceeded"
	ReasonDeadlineExceeded         = "DeadlineExceeded"
	ReasonPodFailurePolicy         = "PodFailurePolicy"
	ReasonFailedIndexes            = "FailedIndexes"
	ReasonMaxFailedIndexesExceeded = "MaxFailedIndexesExceeded"
	ReasonCompletionsReached       = "CompletionsReached"
	ReasonSuccessPolicy            = "SuccessPolicy"
)

// Config tunes the controller.
type Config struct {
	// BackoffBase is the wait after the first failure, doubling per
	// failure up to BackoffMax (Kubernetes: 10 s and 6 min).
	BackoffBase, BackoffMax time.Duration
}

// Controller reconciles Jobs.
type Controller struct {
	cfg      Config
	client   *client.Client
	jobs     *client.Informer[*batch.Job]
	pods     *client.Informer[*core.Pod]
	exp      *controller.Expectations
	recorder *client.AsyncRecorder
	now      func() time.Time
	// Loop is the controller's queue and workers.
	Loop *reconcile.Loop
}

// New returns the controller and registers its handlers.
func New(c *client.Client, inf *controller.Informers, recorder *client.AsyncRecorder, cfg Config) *Controller {
	if cfg.BackoffBase == 0 {
		cfg.BackoffBase = 10 * time.Second
	}
	if cfg.BackoffMax == 0 {
		cfg.BackoffMax = 6 * time.Minute
	}
	jc := &Controller{cfg: cfg, client: c, jobs: inf.Jobs, pods: inf.Pods, exp: controller.NewExpectations(), recorder: recorder, now: time.Now}
	jc.Loop = reconcile.NewLoop(Name, jc, 5)
	enqueue := func(j *batch.Job) { jc.Loop.Queue.Add(meta.Key(j)) }
	inf.Jobs.AddHandler(client.Handler[*batch.Job]{OnAdd: enqueue, OnUpdate: func(_, j *batch.Job) { enqueue(j) },
		OnDelete: func(j *batch.Job) { jc.exp.Delete(meta.Key(j)) }})
	inf.Pods.AddHandler(controller.OwnedBy[*core.Pod]{Kind: "Job", Queue: jc.Loop.Queue, Owner: controller.CachedIn(inf.Jobs),
		Expectations: jc.exp, Adopters: controller.SelectedBy[*batch.Job, *core.Pod](inf.Jobs, func(j *batch.Job) *meta.LabelSelector { return j.Spec.Selector })}.Handler())
	return jc
}

// Reconcile implements reconcile.Reconciler.
func (jc *Controller) Reconcile(ctx context.Context, key string) (reconcile.Result, error) {
	j, ok := jc.jobs.GetByKey(key)
	if !ok || j.DeletionTimestamp != nil {
		return reconcile.Result{}, nil
	}
	now := jc.now()
	if finished(j) {
		return jc.cleanupFinished(ctx, j, now)
	}
	satisfied := jc.exp.Satisfied(key) // before the pods are read (see the ReplicaSet controller)
	// The Job's pods: those it controls that its selector still matches,
	// and orphans it matches, adopted (Kubernetes' ControllerRefManager).
	sel, err := selector.FromLabelSelector(j.Spec.Selector)
	if err != nil {
		return reconcile.Result{}, reconcile.Terminal(fmt.Errorf("selector: %w", err))
	}
	owned, err := controller.Claim(ctx, jc.client, j, sel, jc.pods.ByIndex(client.IndexNamespace, j.Namespace), nil)
	if err != nil {
		return reconcile.Result{}, err
	}
	var active, terminating, succeeded, failed []*core.Pod
	restarts := int32(0)
	for _, p := range owned {
		switch {
		case p.Status.Phase == core.PodSucceeded:
			succeeded = append(succeeded, p)
		case p.Status.Phase == core.PodFailed:
			failed = append(failed, p)
		case p.DeletionTimestamp != nil:
			terminating = append(terminating, p)
		default:
			active = append(active, p)
			for _, cs := range p.Status.ContainerStatuses {
				restarts += cs.RestartCount // OnFailure: restarts count as failures
			}
		}
	}
	// What the failed pods mean (podFailurePolicy): ignored ones do not
	// count, one may fail the Job or its index at once.
	v := judgeFailures(j, failed)
	st := j.Status
	st.Active = int32(len(active))
	nTerminating := int32(len(terminating))
	st.Terminating = &nTerminating
	st.Succeeded = max(st.Succeeded, int32(len(succeeded)))
	var doneIndexes map[int]bool
	if j.Indexed() {
		doneIndexes = succeededIndexes(j, succeeded)
		st.Succeeded = int32(len(doneIndexes)) // one per index, however many pods succeeded
		st.CompletedIndexes = formatIndexes(doneIndexes)
		if j.Spec.BackoffLimitPerIndex != nil {
			failedIdx := formatIndexes(v.failedIndexes)
			st.FailedIndexes = &failedIdx
		}
	}
	st.Failed = max(st.Failed, v.counted+restarts)
	ready := int32(0)
	for _, p := range active {
		if controller.IsReady(p) {
			ready++
		}
	}
	st.Ready = &ready
	suspended := j.Spec.Suspend != nil && *j.Spec.Suspend
	if st.StartTime == nil && !suspended {
		t := meta.NewTime(now)
		st.StartTime = &t
	}

	var requeue time.Duration
	failReason, failMsg := jc.failure(j, &st, v, doneIndexes, now)
	okReason, okMsg := "", ""
	if failReason == "" {
		okReason, okMsg = successReason(j, st, doneIndexes)
	}
	switch {
	case failReason != "":
		jc.deletePods(ctx, j, active)
		st.Active = 0
		st.Conditions = setCondition(st.Conditions, ConditionFailureTarget, failReason, failMsg, now)
		st.Conditions = setCondition(st.Conditions, ConditionFailed, failReason, failMsg, now)
		jc.recorder.Event(j, core.EventTypeWarning, failReason, failMsg)
	case okReason != "":
		jc.deletePods(ctx, j, active)
		st.Active = 0
		t := meta.NewTime(now)
		st.CompletionTime = &t
		st.Conditions = setCondition(st.Conditions, ConditionSuccessCriteriaMet, okReason, okMsg, now)
		st.Conditions = setCondition(st.Conditions, ConditionComplete, okReason, okMsg, now)
		jc.recorder.Event(j, core.EventTypeNormal, "Completed", "Job completed")
	case suspended:
		jc.deletePods(ctx, j, active)
		st.Active = 0
		st.Conditions = setCondition(st.Conditions, ConditionSuspended, "JobSuspended", "Job suspended", now)
	default:
		st.Conditions = removeCondition(st.Conditions, ConditionSuspended)
		var err error
		if requeue, err = jc.manage(ctx, j, st, active, terminating, failed, doneIndexes, v.failedIndexes, now, satisfied); err != nil {
			return reconcile.Result{}, err
		}
		if d := j.Spec.ActiveDeadlineSeconds; d != nil && st.StartTime != nil {
			left := st.StartTime.Add(time.Duration(*d) * time.Second).Sub(now)
			if requeue == 0 || left < requeue {
				requeue = left
			}
		}
	}
	if err := jc.writeStatus(ctx, j, st); err != nil {
		return reconcile.Result{}, err
	}
	if finished(&batch.Job{Status: st}) && j.Spec.TTLSecondsAfterFinished != nil {
		requeue = time.Duration(*j.Spec.TTLSecondsAfterFinished) * time.Second
	}
	return reconcile.Result{RequeueAfter: requeue}, nil
}

// failure says why the Job has failed, if it has: a pod failure policy's
// FailJob rule, more failed indexes than maxFailedIndexes, the backoff
// limit, every index finished with some failed, or the deadline.
func (jc *Controller) failure(j *batch.Job, st *batch.JobStatus, v failures, done map[int]bool, now time.Time) (reason, msg string) {
	if v.failJob != "" {
		return ReasonPodFailurePolicy, v.failJob
	}
	if m := j.Spec.MaxFailedIndexes; m != nil && int32(len(v.failedIndexes)) > *m {
		return ReasonMaxFailedIndexesExceeded, "Job has exceeded the specified maximal number of failed indexes"
	}
	limit := int32(6)
	if j.Spec.BackoffLimit != nil {
		limit = *j.Spec.BackoffLimit
	}
	if st.Failed > limit {
		return ReasonBackoffLimitExceeded, "Job has reached the specified backoff limit"
	}
	if len(v.failedIndexes) > 0 && len(v.failedIndexes)+len(done) >= int(*j.Spec.Completions) {
		return ReasonFailedIndexes, "Job has failed indexes"
	}
	if d := j.Spec.ActiveDeadlineSeconds; d != nil && st.StartTime != nil && now.Sub(st.StartTime.Time) >= time.Duration(*d)*time.Second {
		return ReasonDeadlineExceeded, "Job was active longer than specified deadline"
	}
	return "", ""
}

// successReason says why the Job has succeeded, if it has: a success
// policy rule met (Indexed), or its completions reached.
func successReason(j *batch.Job, st batch.JobStatus, done map[int]bool) (reason, msg string) {
	if sp := j.Spec.SuccessPolicy; sp != nil && j.Indexed() {
		for i, r := range sp.Rules {
			if successRuleMet(r, done, int(*j.Spec.Completions)) {
				return ReasonSuccessPolicy, fmt.Sprintf("Matched rules at index %d", i)
			}
		}
	}
	if j.Spec.Completions != nil {
		if st.Succeeded >= *j.Spec.Completions {
			return ReasonCompletionsReached, "Reached expected number of succeeded pods"
		}
		return "", ""
	}
	// No completions: a work queue; done when one pod succeeded and none runs.
	if st.Succeeded > 0 && st.Active == 0 {
		return ReasonCompletionsReached, "Reached expected number of succeeded pods"
	}
	return "", ""
}

// successRuleMet: every index the rule names succeeded, or succeededCount
// of them (of all indexes when it names none).
func successRuleMet(r batch.SuccessPolicyRule, done map[int]bool, completions int) bool {
	matched := len(done)
	if r.SucceededIndexes != nil {
		want, err := batch.ParseIndexes(*r.SucceededIndexes, completions)
		if err != nil {
			return false
		}
		matched = 0
		for i := range want {
			if done[i] {
				matched++
			}
		}
		if r.SucceededCount == nil {
			return matched == len(want)
		}
	}
	return r.SucceededCount != nil && int32(matched) >= *r.SucceededCount
}

// manage creates pods up to parallelism (and the completions still
// needed), after the back-off that follows failures; it returns when to
// look again if it is waiting out a back-off.
func (jc *Controller) manage(ctx context.Context, j *batch.Job, st batch.JobStatus, active, terminating, failed []*core.Pod, doneIndexes, failedIndexes map[int]bool, now time.Time, satisfied bool) (time.Duration, error) {
	key := meta.Key(j)
	if !satisfied {
		return 0, nil
	}
	want := int32(1)
	if j.Spec.Parallelism != nil {
		want = *j.Spec.Parallelism
	}
	if j.Spec.Completions != nil {
		want = min(want, *j.Spec.Completions-st.Succeeded-int32(len(failedIndexes)))
	} else if st.Succeeded > 0 {
		want = 0 // a work-queue Job starts nothing once a pod succeeded
	}
	// podReplacementPolicy Failed: a pod being deleted is replaced only
	// once it has failed; until then it holds its place.
	holding := active
	if p := j.Spec.PodReplacementPolicy; p != nil && *p == batch.Failed {
		holding = append(slices.Clone(active), terminating...)
	}
	if j.Indexed() {
		if st.Failed > 0 && int32(len(holding)) < want {
			if wait := jc.backoff(st.Failed, lastFailure(failed, j)).Sub(now); wait > 0 {
				return wait, nil
			}
		}
		return 0, jc.manageIndexed(ctx, j, doneIndexes, failedIndexes, holding, want)
	}
	have := int32(len(holding))
	switch {
	case have > want && int32(len(active)) > 0:
		extra := active[:min(have-want, int32(len(active)))]
		jc.exp.Expect(key, 0, len(extra))
		jc.deletePods(ctx, j, extra)
	case have < want:
		if st.Failed > 0 {
			if wait := jc.backoff(st.Failed, lastFailure(failed, j)).Sub(now); wait > 0 {
				return wait, nil
			}
		}
		n := int(want - have)
		jc.exp.Expect(key, n, 0)
		for i := range n {
			if err := jc.createPod(ctx, j, -1); err != nil {
				for range n - i {
					jc.exp.Observed(key, true)
				}
				return 0, err
			}
		}
	}
	return 0, nil
}

// backoff is when the next pod may start after failures: base doubling
// per failure, capped, after the last one.
func (jc *Controller) backoff(failures int32, last time.Time) time.Time {
	d := jc.cfg.BackoffBase
	for i := int32(1); i < failures && d < jc.cfg.BackoffMax; i++ {
		d *= 2
	}
	return last.Add(min(d, jc.cfg.BackoffMax))
}

// lastFailure is when the latest failed pod finished (its containers'
// finish time, else its creation).
func lastFailure(failed []*core.Pod, j *batch.Job) time.Time {
	var last time.Time
	for _, p := range failed {
		t := p.CreationTimestamp.Time
		for _, cs := range p.Status.ContainerStatuses {
			if term := cs.State.Terminated; term != nil && term.FinishedAt.After(t) {
				t = term.FinishedAt.Time
			}
		}
		if t.After(last) {
			last = t
		}
	}
	if last.IsZero() && j.Status.StartTime != nil {
		last = j.Status.StartTime.Time // failures counted from restarts
	}
	return last
}

// createPod makes one of the Job's pods; index is its completion index in
// an Indexed Job, -1 otherwise.
func (jc *Controller) createPod(ctx context.Context, j *batch.Job, index int) error {
	t := j.Spec.Template
	t.Labels = maps.Clone(t.Labels)
	if t.Labels == nil {
		t.Labels = map[string]string{}
	}
	t.Labels[LabelJobName], t.Labels[LabelControllerUID] = j.Name, j.UID
	t.Labels["job-name"], t.Labels["controller-uid"] = j.Name, j.UID
	p := controller.PodFromTemplate(&t, j.Namespace, j.Name+"-", j)
	if index >= 0 {
		indexPod(p, j, index)
	}
	created, err := client.For[*core.Pod](jc.client).Create(ctx, p)
	if err != nil {
		jc.recorder.Event(j, core.EventTypeWarning, "FailedCreate", "Error creating: "+client.Message(err))
		return fmt.Errorf("create pod: %w", err)
	}
	jc.recorder.Event(j, core.EventTypeNormal, "SuccessfulCreate", "Created pod: "+created.Name)
	return nil
}

func (jc *Controller) deletePods(ctx context.Context, j *batch.Job, pods []*core.Pod) {
	for _, p := range pods {
		err := client.For[*core.Pod](jc.client).Delete(ctx, p.Namespace, p.Name, client.DeleteOptions{UID: p.UID})
		if err == nil {
			jc.recorder.Event(j, core.EventTypeNormal, "SuccessfulDelete", "Deleted pod: "+p.Name)
		} else if !client.IsNotFound(err) {
			jc.Loop.Logf("%s: delete pod %s: %s", Name, p.Name, client.Message(err))
		}
	}
}

func finished(j *batch.Job) bool {
	for _, c := range j.Status.Conditions {
		if (c.Type == ConditionComplete || c.Type == ConditionFailed) && c.Status == meta.ConditionTrue {
			return true
		}
	}
	return false
}

// cleanupFinished deletes a finished Job once ttlSecondsAfterFinished has
// passed (its pods follow, by the garbage collector).
func (jc *Controller) cleanupFinished(ctx context.Context, j *batch.Job, now time.Time) (reconcile.Result, error) {
	if j.Spec.TTLSecondsAfterFinished == nil {
		return reconcile.Result{}, nil
	}
	var at time.Time
	for _, c := range j.Status.Conditions {
		if (c.Type == ConditionComplete || c.Type == ConditionFailed) && c.Status == meta.ConditionTrue {
			at = c.LastTransitionTime.Add(time.Duration(*j.Spec.TTLSecondsAfterFinished) * time.Second)
		}
	}
	if wait := at.Sub(now); wait > 0 {
		return reconcile.Result{RequeueAfter: wait}, nil
	}
	err := client.For[*batch.Job](jc.client).Delete(ctx, j.Namespace, j.Name, client.DeleteOptions{UID: j.UID, PropagationPolicy: "Background"})
	if client.IsNotFound(err) {
		return reconcile.Result{}, nil
	}
	return reconcile.Result{}, err
}

func setCondition(conds []batch.JobCondition, typ, reason, msg string, now time.Time) []batch.JobCondition {
	out := removeCondition(conds, typ)
	t := meta.NewTime(now)
	return append(out, batch.JobCondition{Type: typ, Status: meta.ConditionTrue, Reason: reason, Message: msg, LastProbeTime: t, LastTransitionTime: t})
}

func removeCondition(conds []batch.JobCondition, typ string) []batch.JobCondition {
	var out []batch.JobCondition
	for _, c := range conds {
		if c.Type != typ {
			out = append(out, c)
		}
	}
	return out
}

func (jc *Controller) writeStatus(ctx context.Context, j *batch.Job, st batch.JobStatus) error {
	old := j.Status
	same := old.Active == st.Active && old.Succeeded == st.Succeeded && old.Failed == st.Failed && len(old.Conditions) == len(st.Conditions) &&
		(old.StartTime == nil) == (st.StartTime == nil) && (old.Ready != nil && *old.Ready == *st.Ready) &&
		old.CompletedIndexes == st.CompletedIndexes && equalPtr(old.FailedIndexes, st.FailedIndexes) && equalPtr(old.Terminating, st.Terminating)
	if same {
		for i := range old.Conditions {
			if old.Conditions[i].Type != st.Conditions[i].Type || old.Conditions[i].Status != st.Conditions[i].Status {
				same = false
			}
		}
	}
	if same {
		return nil
	}
	updated := *j
	updated.Status = st
	_, err := controller.WriteStatus(ctx, jc.client, &updated)
	return err
}

func equalPtr[T comparable](a, b *T) bool {
	return (a == nil) == (b == nil) && (a == nil || *a == *b)
}
