package podautoscaler

import (
	"math"
	"time"

	"github.com/kobune/kobune/api/autoscaling"
)

// Tolerance is how far the usage ratio may stray from 1 before the
// autoscaler acts (Kubernetes' --horizontal-pod-autoscaler-tolerance).
const Tolerance = 0.1

// CPU readiness periods, Kubernetes' defaults: a pod's CPU is not
// trusted while it starts (its first 5 minutes, until it has been Ready
// for a whole metrics window), nor while it is not Ready shortly after
// its start.
const (
	CPUInitializationPeriod       = 5 * time.Minute
	DelayOfInitialReadinessStatus = 30 * time.Second
)

// PodSample is one pod of the target as the autoscaler sees it.
type PodSample struct {
	Name string
	// Ignored pods (being deleted, failed) count for nothing; Unready
	// ones (pending, or — for cpu — not yet trusted) are set aside.
	Ignored, Unready bool
	// HasMetric: the metrics API has the pod; Usage is its containers'
	// sum (milli-cpu or bytes) and Request their requests' sum.
	HasMetric bool
	Usage     int64
	Request   int64
}

// Proposal is what one metric asks for, with what it saw.
type Proposal struct {
	Replicas int32
	// Utilization is the ready pods' usage as a percentage of their
	// requests (Utilization targets); Average their mean usage.
	Utilization int32
	Average     int64
}

// ReplicasForUtilization is Kubernetes' algorithm for a Utilization
// target: the ratio of the measured utilization to the target, times
// the ready pods; no change within the tolerance; pods without metrics
// assumed at 100 % (when scaling down) or 0 (up), unready pods at 0 when
// scaling up, and no change if that reverses the direction.
func ReplicasForUtilization(current int32, pods []PodSample, target int32) (Proposal, error) {
	return replicas(current, pods, func(usage, request int64, _ int) float64 {
		// Kubernetes rounds the utilization down to a whole percent first.
		return float64(usage*100/request) / float64(target)
	}, func(p PodSample) int64 { return p.Request * int64(max(100, target)) / 100 })
}

// ReplicasForAverageValue is the algorithm for an AverageValue target
// (in the same unit as the usage).
func ReplicasForAverageValue(current int32, pods []PodSample, target int64) (Proposal, error) {
	return replicas(current, pods, func(usage, _ int64, n int) float64 {
		return float64(usage) / float64(n) / float64(target)
	}, func(PodSample) int64 { return target })
}

// errNoMetrics: no ready pod has metrics.
type errNoMetrics struct{}

func (errNoMetrics) Error() string {
	return "did not receive metrics for targeted pods (pods might be unready)"
}

func replicas(current int32, pods []PodSample, ratioOf func(usage, request int64, n int) float64, fallback func(PodSample) int64) (Proposal, error) {
	var usage, request int64
	var measured []PodSample
	var missing, unready []PodSample
	for _, p := range pods {
		switch {
		case p.Ignored:
		case p.Unready:
			unready = append(unready, p)
		case !p.HasMetric:
			missing = append(missing, p)
		default:
			measured = append(measured, p)
			usage += p.Usage
			request += p.Request
		}
	}
	if len(measured) == 0 {
		return Proposal{Replicas: current}, errNoMetrics{}
	}
	prop := Proposal{Average: usage / int64(len(measured))}
	if request > 0 {
		prop.Utilization = int32(usage * 100 / request)
	}
	ratio := ratioOf(usage, request, len(measured))
	scaleUpWithUnready := len(unready) > 0 && ratio > 1
	if !scaleUpWithUnready && len(missing) == 0 {
		if math.Abs(1-ratio) <= Tolerance {
			prop.Replicas = current
			return prop, nil
		}
		prop.Replicas = int32(math.Ceil(ratio * float64(len(measured))))
		return prop, nil
	}
	n := len(measured)
	if len(missing) > 0 {
		for _, p := range missing {
			if ratio < 1 {
				usage += fallback(p) // scaling down: they may be busy
			}
			request += p.Request
			n++
		}
	}
	if scaleUpWithUnready {
		for _, p := range unready {
			request += p.Request // scaling up: they use nothing yet
			n++
		}
	}
	newRatio := ratioOf(usage, request, n)
	if math.Abs(1-newRatio) <= Tolerance || (ratio < 1 && newRatio > 1) || (ratio > 1 && newRatio < 1) {
		prop.Replicas = current
		return prop, nil
	}
	want := int32(math.Ceil(newRatio * float64(n)))
	if (newRatio < 1 && want > current) || (newRatio > 1 && want < current) {
		want = current
	}
	prop.Replicas = want
	return prop, nil
}

// timestamped is a recommendation or a scale event.
type timestamped struct {
	at    time.Time
	value int32
}

// History is one autoscaler's recent recommendations and scale events,
// kept in memory as Kubernetes' controller keeps them.
type History struct {
	recommendations  []timestamped
	scaleUp, scaleDn []timestamped // replicas added or removed
}

// Limit is why the desired count is not what the metrics asked for.
type Limit struct {
	Reason, Message string
}

// Normalize turns the metrics' proposal into the replicas to set:
// stabilized over the rules' windows (down: the highest recommendation
// of the window; up: the lowest), then bounded by the rules' policies
// (the change allowed per period, given the changes already made in it)
// and by min and max. It records the recommendation.
func (h *History) Normalize(now time.Time, current, proposed, minReplicas, maxReplicas int32, b *autoscaling.HorizontalPodAutoscalerBehavior) (int32, *Limit) {
	up, down := b.ScaleUp, b.ScaleDown
	upRec, downRec := proposed, proposed
	keep := h.recommendations[:0]
	longest := time.Duration(max(*up.StabilizationWindowSeconds, *down.StabilizationWindowSeconds)) * time.Second
	for _, r := range h.recommendations {
		if now.Sub(r.at) > longest {
			continue
		}
		keep = append(keep, r)
		if now.Sub(r.at) <= time.Duration(*up.StabilizationWindowSeconds)*time.Second {
			upRec = min(upRec, r.value)
		}
		if now.Sub(r.at) <= time.Duration(*down.StabilizationWindowSeconds)*time.Second {
			downRec = max(downRec, r.value)
		}
	}
	h.recommendations = append(keep, timestamped{at: now, value: proposed})
	stabilized := current
	if stabilized < upRec {
		stabilized = upRec
	}
	if stabilized > downRec {
		stabilized = downRec
	}
	switch {
	case stabilized > current:
		limit := h.upLimit(now, current, up)
		if limit < maxReplicas {
			if stabilized > limit {
				return limit, &Limit{"ScaleUpLimit", "the desired replica count is increasing faster than the maximum scale rate"}
			}
		} else if stabilized > maxReplicas {
			return maxReplicas, &Limit{"TooManyReplicas", "the desired replica count is more than the maximum replica count"}
		}
		return stabilized, nil
	case stabilized < current:
		limit := h.downLimit(now, current, down)
		if limit > minReplicas {
			if stabilized < limit {
				return limit, &Limit{"ScaleDownLimit", "the desired replica count is decreasing faster than the maximum scale rate"}
			}
		} else if stabilized < minReplicas {
			return minReplicas, &Limit{"TooFewReplicas", "the desired replica count is less than the minimum replica count"}
		}
		return stabilized, nil
	}
	if stabilized > maxReplicas {
		return maxReplicas, &Limit{"TooManyReplicas", "the desired replica count is more than the maximum replica count"}
	}
	if stabilized < minReplicas {
		return minReplicas, &Limit{"TooFewReplicas", "the desired replica count is less than the minimum replica count"}
	}
	return stabilized, nil
}

// changedWithin sums the events of the last period.
func changedWithin(events []timestamped, now time.Time, period int32) int32 {
	var n int32
	for _, e := range events {
		if now.Sub(e.at) <= time.Duration(period)*time.Second {
			n += e.value
		}
	}
	return n
}

func (h *History) upLimit(now time.Time, current int32, r *autoscaling.HPAScalingRules) int32 {
	if *r.SelectPolicy == autoscaling.DisabledPolicySelect {
		return current
	}
	result := int32(math.MinInt32)
	if *r.SelectPolicy == autoscaling.MinChangePolicySelect {
		result = math.MaxInt32
	}
	for _, p := range r.Policies {
		start := current - changedWithin(h.scaleUp, now, p.PeriodSeconds) + changedWithin(h.scaleDn, now, p.PeriodSeconds)
		proposed := start + p.Value
		if p.Type == autoscaling.PercentScalingPolicy {
			proposed = int32(math.Ceil(float64(start) * (1 + float64(p.Value)/100)))
		}
		if *r.SelectPolicy == autoscaling.MinChangePolicySelect {
			result = min(result, proposed)
		} else {
			result = max(result, proposed)
		}
	}
	return max(result, current)
}

func (h *History) downLimit(now time.Time, current int32, r *autoscaling.HPAScalingRules) int32 {
	if *r.SelectPolicy == autoscaling.DisabledPolicySelect {
		return current
	}
	result := int32(math.MaxInt32)
	if *r.SelectPolicy == autoscaling.MinChangePolicySelect {
		result = math.MinInt32
	}
	for _, p := range r.Policies {
		start := current - changedWithin(h.scaleUp, now, p.PeriodSeconds) + changedWithin(h.scaleDn, now, p.PeriodSeconds)
		proposed := start - p.Value
		if p.Type == autoscaling.PercentScalingPolicy {
			proposed = int32(float64(start) * (1 - float64(p.Value)/100))
		}
		if *r.SelectPolicy == autoscaling.MinChangePolicySelect {
			result = max(result, proposed)
		} else {
			result = min(result, proposed)
		}
	}
	return min(result, current)
}

// Scaled records a change from current to desired, for the policies'
// periods (events older than the longest period are dropped).
func (h *History) Scaled(now time.Time, current, desired int32, b *autoscaling.HorizontalPodAutoscalerBehavior) {
	longest := func(r *autoscaling.HPAScalingRules) time.Duration {
		var p int32
		for _, pol := range r.Policies {
			p = max(p, pol.PeriodSeconds)
		}
		return time.Duration(p) * time.Second
	}
	prune := func(events []timestamped, keep time.Duration) []timestamped {
		out := events[:0]
		for _, e := range events {
			if now.Sub(e.at) <= keep {
				out = append(out, e)
			}
		}
		return out
	}
	h.scaleUp, h.scaleDn = prune(h.scaleUp, longest(b.ScaleUp)), prune(h.scaleDn, longest(b.ScaleDown))
	switch {
	case desired > current:
		h.scaleUp = append(h.scaleUp, timestamped{at: now, value: desired - current})
	case desired < current:
		h.scaleDn = append(h.scaleDn, timestamped{at: now, value: current - desired})
	}
}
