package scheduler

import (
	"context"
	"fmt"

	"github.com/kobune/kobune/api/core"
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
		err := client.For[*core.Pod](s.client).Delete(ctx, v.Namespace, v.Name, client.DeleteOptions{UID: v.UID})
		if err != nil && !client.IsNotFound(err) {
			return fmt.Errorf("preempt %s/%s: %w", v.Namespace, v.Name, err)
		}
		s.Metrics.Preemptions.Inc()
	}
	s.recorder.Event(pod, core.EventTypeNormal, "Nominated", fmt.Sprintf("Preempting %d lower-priority pod(s) on node %s", len(p.Victims), p.NominatedNodeName))
	return nil
}
