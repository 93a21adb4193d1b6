// Package podautoscaler is kube-controller-manager's horizontal pod
// autoscaler: every sync period it reads each HorizontalPodAutoscaler's
// target through the scale subresource, its pods' usage from the metrics
// API (metrics.k8s.io, which the API server serves from the agents'
// cgroup samples), works out the replicas each metric asks for with
// Kubernetes' algorithm (replicas.go: the usage ratio with a 10 %
// tolerance, pods without metrics and unready pods handled as Kubernetes
// handles them), stabilizes and rate-limits the result by the
// autoscaler's behavior, writes the scale, and reports what it saw in the
// status (conditions AbleToScale, ScalingActive, ScalingLimited) and in
// events.
package podautoscaler

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/kobune/kobune/api/autoscaling"
	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/api/metrics"
	"github.com/kobune/kobune/api/resource"
	"github.com/kobune/kobune/api/selector"
	"github.com/kobune/kobune/client"
	"github.com/kobune/kobune/client/reconcile"
	"github.com/kobune/kobune/controller"
)

// Name of the controller, in logs.
const Name = "horizontal-pod-autoscaler"

// Config tunes the controller.
type Config struct {
	// SyncPeriod is how often each autoscaler is evaluated (15 s, as
	// Kubernetes' --horizontal-pod-autoscaler-sync-period).
	SyncPeriod time.Duration
	Now        func() time.Time
}

// Controller runs the autoscalers.
type Controller struct {
	cfg      Config
	client   *client.Client
	hpas     *client.Informer[*autoscaling.HorizontalPodAutoscaler]
	pods     *client.Informer[*core.Pod]
	recorder *client.AsyncRecorder
	Loop     *reconcile.Loop

	mu      sync.Mutex
	history map[string]*History
}

// New returns the controller (keys: namespace/name of autoscalers).
func New(c *client.Client, inf *controller.Informers, recorder *client.AsyncRecorder, cfg Config) *Controller {
	if cfg.SyncPeriod <= 0 {
		cfg.SyncPeriod = 15 * time.Second
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	hc := &Controller{cfg: cfg, client: c, hpas: inf.HPAs, pods: inf.Pods, recorder: recorder, history: map[string]*History{}}
	hc.Loop = reconcile.NewLoop(Name, hc, 2)
	inf.HPAs.AddHandler(client.Handler[*autoscaling.HorizontalPodAutoscaler]{
		OnAdd: func(h *autoscaling.HorizontalPodAutoscaler) { hc.Loop.Queue.Add(meta.Key(h)) },
		OnUpdate: func(old, h *autoscaling.HorizontalPodAutoscaler) {
			if old.Generation != h.Generation {
				hc.Loop.Queue.Add(meta.Key(h))
			}
		},
		OnDelete: func(h *autoscaling.HorizontalPodAutoscaler) {
			hc.mu.Lock()
			delete(hc.history, meta.Key(h))
			hc.mu.Unlock()
		}})
	return hc
}

var targetResources = map[string]string{"Deployment": "deployments", "ReplicaSet": "replicasets", "StatefulSet": "statefulsets", "ReplicationController": "replicationcontrollers"}

// Reconcile implements reconcile.Reconciler: one evaluation.
func (hc *Controller) Reconcile(ctx context.Context, key string) (reconcile.Result, error) {
	cached, ok := hc.hpas.GetByKey(key)
	if !ok {
		return reconcile.Result{}, nil
	}
	h := *cached
	h.Status.Conditions = append([]autoscaling.HorizontalPodAutoscalerCondition(nil), cached.Status.Conditions...)
	now := hc.cfg.Now()
	next := reconcile.Result{RequeueAfter: hc.cfg.SyncPeriod}
	ref := h.Spec.ScaleTargetRef
	res := targetResources[ref.Kind]
	scale, err := hc.client.GetScale(ctx, res, h.Namespace, ref.Name)
	if err != nil {
		msg := fmt.Sprintf("the HPA controller was unable to get the target's current scale: %s", client.Message(err))
		hc.recorder.Event(&h, core.EventTypeWarning, "FailedGetScale", msg)
		setCondition(&h, autoscaling.AbleToScale, meta.ConditionFalse, "FailedGetScale", msg, now)
		return next, hc.writeStatus(ctx, &h)
	}
	current := scale.Spec.Replicas
	minReplicas := *h.Spec.MinReplicas
	h.Status.CurrentReplicas = scale.Status.Replicas
	gen := h.Generation
	h.Status.ObservedGeneration = &gen
	if current == 0 && minReplicas != 0 {
		h.Status.DesiredReplicas = 0
		setCondition(&h, autoscaling.AbleToScale, meta.ConditionTrue, "SucceededGetScale", "the HPA controller was able to get the target's current scale", now)
		setCondition(&h, autoscaling.ScalingActive, meta.ConditionFalse, "ScalingDisabled", "scaling is disabled since the replica count of the target is zero", now)
		return next, hc.writeStatus(ctx, &h)
	}
	hc.mu.Lock()
	hist := hc.history[key]
	if hist == nil {
		hist = &History{}
		hc.history[key] = hist
	}
	hc.mu.Unlock()

	var desired int32
	var limit *Limit
	var reason string
	switch {
	case current > h.Spec.MaxReplicas:
		desired, reason = h.Spec.MaxReplicas, "Current number of replicas above Spec.MaxReplicas"
		limit = &Limit{"TooManyReplicas", "the desired replica count is more than the maximum replica count"}
	case current < minReplicas:
		desired, reason = minReplicas, "Current number of replicas below Spec.MinReplicas"
		limit = &Limit{"TooFewReplicas", "the desired replica count is less than the minimum replica count"}
	default:
		proposed, why, metricStatus, err := hc.proposal(ctx, &h, scale, current, now)
		h.Status.CurrentMetrics = metricStatus
		if err != nil {
			hc.recorder.Event(&h, core.EventTypeWarning, "FailedGetResourceMetric", err.Error())
			setCondition(&h, autoscaling.AbleToScale, meta.ConditionTrue, "SucceededGetScale", "the HPA controller was able to get the target's current scale", now)
			setCondition(&h, autoscaling.ScalingActive, meta.ConditionFalse, "FailedGetResourceMetric", "the HPA was unable to compute the replica count: "+err.Error(), now)
			h.Status.DesiredReplicas = current
			return next, hc.writeStatus(ctx, &h)
		}
		setCondition(&h, autoscaling.ScalingActive, meta.ConditionTrue, "ValidMetricFound", "the HPA was able to successfully calculate a replica count from "+why, now)
		desired, limit = hist.Normalize(now, current, proposed, minReplicas, h.Spec.MaxReplicas, h.Spec.Behavior)
		if desired > current {
			reason = why + " above target"
		} else {
			reason = why + " below target"
		}
	}
	if limit != nil {
		setCondition(&h, autoscaling.ScalingLimited, meta.ConditionTrue, limit.Reason, limit.Message, now)
	} else {
		setCondition(&h, autoscaling.ScalingLimited, meta.ConditionFalse, "DesiredWithinRange", "the desired count is within the acceptable range", now)
	}
	h.Status.DesiredReplicas = desired
	if desired != current {
		if err := hc.client.SetScale(ctx, res, h.Namespace, ref.Name, desired); err != nil {
			msg := fmt.Sprintf("New size: %d; reason: %s; error: %s", desired, reason, client.Message(err))
			hc.recorder.Event(&h, core.EventTypeWarning, "FailedRescale", msg)
			setCondition(&h, autoscaling.AbleToScale, meta.ConditionFalse, "FailedUpdateScale", "the HPA controller was unable to update the target scale: "+client.Message(err), now)
			_ = hc.writeStatus(ctx, &h)
			return reconcile.Result{}, err
		}
		hist.Scaled(now, current, desired, h.Spec.Behavior)
		hc.recorder.Event(&h, core.EventTypeNormal, "SuccessfulRescale", fmt.Sprintf("New size: %d; reason: %s", desired, reason))
		setCondition(&h, autoscaling.AbleToScale, meta.ConditionTrue, "SucceededRescale", fmt.Sprintf("the HPA controller was able to update the target scale to %d", desired), now)
		h.Status.LastScaleTime = &meta.Time{Time: now}
	} else {
		setCondition(&h, autoscaling.AbleToScale, meta.ConditionTrue, "ReadyForNewScale", "recommended size matches current size", now)
	}
	return next, hc.writeStatus(ctx, &h)
}

// proposal is the largest count the metrics ask for, and what they saw.
func (hc *Controller) proposal(ctx context.Context, h *autoscaling.HorizontalPodAutoscaler, scale *autoscaling.Scale, current int32, now time.Time) (int32, string, []autoscaling.MetricStatus, error) {
	sel, err := selector.ParseLabels(scale.Status.Selector)
	if err != nil || scale.Status.Selector == "" {
		return 0, "", nil, fmt.Errorf("the target's scale has no usable selector (%q)", scale.Status.Selector)
	}
	var pods []*core.Pod
	for _, p := range hc.pods.ByIndex(client.IndexNamespace, h.Namespace) {
		if sel.Matches(p.Labels) {
			pods = append(pods, p)
		}
	}
	list, err := hc.client.PodMetrics(ctx, h.Namespace, scale.Status.Selector)
	if err != nil {
		return 0, "", nil, fmt.Errorf("unable to get metrics for resource: unable to fetch metrics from resource metrics API: %s", client.Message(err))
	}
	byName := map[string]metrics.PodMetrics{}
	for _, m := range list.Items {
		byName[m.Name] = m
	}
	var best int32
	var why string
	var statuses []autoscaling.MetricStatus
	var firstErr error
	for _, m := range h.Spec.Metrics {
		if m.Resource == nil {
			continue
		}
		samples, err := samplesFor(pods, byName, m.Resource.Name, m.Resource.Target.Type == autoscaling.UtilizationMetricType, now)
		var prop Proposal
		if err == nil {
			if m.Resource.Target.Type == autoscaling.UtilizationMetricType {
				prop, err = ReplicasForUtilization(current, samples, *m.Resource.Target.AverageUtilization)
			} else {
				target := m.Resource.Target.AverageValue.Value()
				if m.Resource.Name == resource.CPU {
					target = m.Resource.Target.AverageValue.MilliValue()
				}
				prop, err = ReplicasForAverageValue(current, samples, target)
			}
		}
		if err != nil {
			if firstErr == nil {
				firstErr = fmt.Errorf("failed to get %s utilization: %w", m.Resource.Name, err)
			}
			continue
		}
		st := autoscaling.MetricStatus{Type: autoscaling.ResourceMetricSourceType, Resource: &autoscaling.ResourceMetricStatus{Name: m.Resource.Name}}
		avg := resource.NewQuantity(prop.Average, resource.BinarySI)
		if m.Resource.Name == resource.CPU {
			avg = resource.NewMilliQuantity(prop.Average, resource.DecimalSI)
		}
		st.Resource.Current.AverageValue = &avg
		what := string(m.Resource.Name) + " resource"
		if m.Resource.Target.Type == autoscaling.UtilizationMetricType {
			u := prop.Utilization
			st.Resource.Current.AverageUtilization = &u
			what += " utilization (percentage of request)"
		}
		statuses = append(statuses, st)
		if prop.Replicas > best || why == "" {
			best, why = prop.Replicas, what
		}
	}
	if why == "" {
		if firstErr == nil {
			firstErr = fmt.Errorf("no Resource metric to compute from")
		}
		return 0, "", statuses, firstErr
	}
	return best, why, statuses, nil
}

// samplesFor turns the target's pods and their metrics into samples for
// one resource; a Utilization target needs every container's request.
func samplesFor(pods []*core.Pod, byName map[string]metrics.PodMetrics, name resource.Name, needRequests bool, now time.Time) ([]PodSample, error) {
	var out []PodSample
	for _, p := range pods {
		s := PodSample{Name: p.Name}
		for _, c := range p.Spec.Containers {
			q, ok := c.Resources.Requests[name]
			if !ok && needRequests {
				return nil, fmt.Errorf("missing request for %s in container %s of Pod %s", name, c.Name, p.Name)
			}
			s.Request += amount(name, q)
		}
		m, has := byName[p.Name]
		switch {
		case p.DeletionTimestamp != nil || p.Status.Phase == core.PodFailed || p.Status.Phase == core.PodSucceeded:
			s.Ignored = true
		case p.Status.Phase == core.PodPending:
			s.Unready = true
		case !has:
		case name == resource.CPU && cpuUnready(p, m, now):
			s.Unready = true
		}
		if has && !s.Ignored && !s.Unready {
			s.HasMetric = true
			for _, c := range m.Containers {
				s.Usage += amount(name, c.Usage[name])
			}
		}
		out = append(out, s)
	}
	return out, nil
}

func amount(name resource.Name, q resource.Quantity) int64 {
	if name == resource.CPU {
		return q.MilliValue()
	}
	return q.Value()
}

// cpuUnready is Kubernetes' rule for trusting a pod's CPU: within its
// first 5 minutes only once it has been Ready for a whole metrics window;
// later, unless it turned unready soon after its start and stayed so.
func cpuUnready(p *core.Pod, m metrics.PodMetrics, now time.Time) bool {
	var ready *core.PodCondition
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == core.PodReady {
			ready = &p.Status.Conditions[i]
		}
	}
	if ready == nil || p.Status.StartTime == nil {
		return true
	}
	start := p.Status.StartTime.Time
	if start.Add(CPUInitializationPeriod).After(now) {
		window, _ := time.ParseDuration(m.Window)
		return ready.Status == meta.ConditionFalse || m.Timestamp.Before(ready.LastTransitionTime.Add(window))
	}
	return ready.Status == meta.ConditionFalse && start.Add(DelayOfInitialReadinessStatus).After(ready.LastTransitionTime.Time)
}

// setCondition sets a condition, keeping its transition time when its
// status does not change.
func setCondition(h *autoscaling.HorizontalPodAutoscaler, typ string, st meta.ConditionStatus, reason, msg string, now time.Time) {
	for i := range h.Status.Conditions {
		c := &h.Status.Conditions[i]
		if c.Type == typ {
			if c.Status != st {
				c.LastTransitionTime = meta.Time{Time: now}
			}
			c.Status, c.Reason, c.Message = st, reason, msg
			return
		}
	}
	h.Status.Conditions = append(h.Status.Conditions, autoscaling.HorizontalPodAutoscalerCondition{Type: typ, Status: st, Reason: reason, Message: msg, LastTransitionTime: meta.Time{Time: now}})
}

func (hc *Controller) writeStatus(ctx context.Context, h *autoscaling.HorizontalPodAutoscaler) error {
	_, err := client.For[*autoscaling.HorizontalPodAutoscaler](hc.client).UpdateStatus(ctx, h)
	if client.IsNotFound(err) {
		return nil
	}
	return err
}
