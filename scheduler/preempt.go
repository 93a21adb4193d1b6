package scheduler

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/api/scheme"
	"github.com/kobune/kobune/client"
	"github.com/kobune/kobune/scheduler/framework"
)

// Preemption: the DefaultPreemption PostFilter plugin (plugins/) chooses a
// node and the victims there; the scheduler carries it out here, as
// kube-scheduler's preparation step does: the pod's
// status.nominatedNodeName names the node, the victims are deleted
// gracefully, and the pod is tried again when they are gone; meanwhile the
// room is kept for it (the cache's nominations: pods of lower priority are
// filtered as if it were already there).

// preempt nominates the node for the pod and deletes the victims
// gracefully, with a Preempted event on each.
func (s *Scheduler) preempt(ctx context.Context, pod *core.Pod, p *framework.PostFilterResult, msg string) error {
	if err := s.markUnschedulable(ctx, pod, msg, p.NominatedNodeName); err != nil {
		return err
	}
	for _, v := range p.Victims {
		s.recorder.Event(v, core.EventTypeNormal, "Preempted", fmt.Sprintf("Preempted by pod %s/%s on node %s", pod.Namespace, pod.Name, p.NominatedNodeName))
		if err := s.markDisruptionTarget(ctx, v, pod); err != nil && !client.IsNotFound(err) {
			return fmt.Errorf("preempt %s/%s: %w", v.Namespace, v.Name, err)
		}
		err := client.For[*core.Pod](s.client).Delete(ctx, v.Namespace, v.Name, client.DeleteOptions{UID: v.UID})
		if err != nil && !client.IsNotFound(err) {
			return fmt.Errorf("preempt %s/%s: %w", v.Namespace, v.Name, err)
		}
		s.Metrics.Preemptions.Inc()
	}
	s.recorder.Event(pod, core.EventTypeNormal, "Nominated", fmt.Sprintf("Preempting %d lower-priority pod(s) on node %s", len(p.Victims), p.NominatedNodeName))
	return nil
}

// markDisruptionTarget gives a victim, before it is deleted, the
// DisruptionTarget condition (reason PreemptionByScheduler), as
// kube-scheduler does: what tells a Job's podFailurePolicy, and a reader
// of the pod, that it went for another pod, not for a fault of its own.
func (s *Scheduler) markDisruptionTarget(ctx context.Context, victim, preemptor *core.Pod) error {
	for _, c := range victim.Status.Conditions {
		if c.Type == core.DisruptionTarget && c.Status == meta.ConditionTrue {
			return nil
		}
	}
	patch, err := json.Marshal(map[string]any{"status": map[string]any{"conditions": []core.PodCondition{{
		Type: core.DisruptionTarget, Status: meta.ConditionTrue, Reason: "PreemptionByScheduler", LastTransitionTime: meta.Now(),
		Message: fmt.Sprintf("%s: preempting to accommodate a higher priority pod", schedulerName(preemptor))}}}})
	if err != nil {
		return err
	}
	k, _ := scheme.ByResource("pods")
	_, err = s.client.Resource(k).Patch(ctx, victim.Namespace, victim.Name, client.StrategicMergePatch, patch, client.PatchOptions{Subresource: "status"})
	return err
}

// schedulerName is the scheduler a pod asked for (default-scheduler).
func schedulerName(p *core.Pod) string {
	if p.Spec.SchedulerName != "" {
		return p.Spec.SchedulerName
	}
	return "default-scheduler"
}
