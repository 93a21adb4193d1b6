package nodelifecycle

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/client"
)

// evict deletes the pods on the node that do not tolerate its NoExecute
// taints (any longer), at most rate per second in the node's zone (none
// when rate is 0); it returns when to look again.
func (nc *Controller) evict(ctx context.Context, n *core.Node, now time.Time, rate float64) (time.Duration, error) {
	var noExec []core.Taint
	for _, t := range n.Spec.Taints {
		if t.Effect == core.TaintNoExecute {
			noExec = append(noExec, t)
		}
	}
	if len(noExec) == 0 {
		return 0, nil
	}
	var next time.Duration
	pods := client.For[*core.Pod](nc.client)
	for _, p := range nc.pods.ByIndex(client.IndexByNodeName, n.Name) {
		if p.DeletionTimestamp != nil || p.Status.Phase == core.PodSucceeded || p.Status.Phase == core.PodFailed {
			continue
		}
		at, ok := evictionTime(p, noExec)
		if !ok {
			continue // tolerates them for ever
		}
		if wait := at.Sub(now); wait > 0 {
			if next == 0 || wait < next {
				next = wait
			}
			continue
		}
		if nc.recentlyEvicted(p.UID, now) {
			continue
		}
		if rate <= 0 {
			continue // evictions are stopped in this zone (disruption.go)
		}
		if wait := nc.bucket(n.Labels[ZoneLabel], rate).take(); wait > 0 {
			if next == 0 || wait < next {
				next = wait
			}
			continue
		}
		err := pods.Delete(ctx, p.Namespace, p.Name, client.DeleteOptions{UID: p.UID})
		if err != nil && !client.IsNotFound(err) {
			return 0, fmt.Errorf("evict %s/%s: %w", p.Namespace, p.Name, err)
		}
		nc.markEvicted(p.UID, now)
		nc.recorder.Event(p, core.EventTypeNormal, "TaintManagerEviction", "Marking for deletion Pod "+p.Namespace+"/"+p.Name)
	}
	return next, nil
}

// bucket is the zone's token bucket at rate (a new one when the rate changed).
func (nc *Controller) bucket(zone string, rate float64) *bucket {
	nc.bucketsMu.Lock()
	defer nc.bucketsMu.Unlock()
	b, ok := nc.buckets[zone]
	if !ok || b.rate != rate {
		b = newBucket(rate, func() time.Time { return nc.now() })
		nc.buckets[zone] = b
	}
	return b
}

func (nc *Controller) recentlyEvicted(uid string, now time.Time) bool {
	nc.evictedMu.Lock()
	defer nc.evictedMu.Unlock()
	for u, at := range nc.evicted {
		if now.Sub(at) > time.Minute {
			delete(nc.evicted, u)
		}
	}
	_, ok := nc.evicted[uid]
	return ok
}

func (nc *Controller) markEvicted(uid string, now time.Time) {
	nc.evictedMu.Lock()
	nc.evicted[uid] = now
	nc.evictedMu.Unlock()
}

// evictionTime is when a pod must leave a node with these NoExecute
// taints: now for an untolerated taint, the taint's time plus
// tolerationSeconds for a bounded toleration; ok is false when it may stay.
func evictionTime(p *core.Pod, taints []core.Taint) (time.Time, bool) {
	var at time.Time
	found := false
	for i := range taints {
		t := &taints[i]
		added := time.Time{}
		if t.TimeAdded != nil {
			added = t.TimeAdded.Time
		}
		idx := slices.IndexFunc(p.Spec.Tolerations, func(tol core.Toleration) bool { return tol.ToleratesTaint(t) })
		var when time.Time
		switch {
		case idx < 0:
			when = added // untolerated: at once
		case p.Spec.Tolerations[idx].TolerationSeconds == nil:
			continue // tolerated for ever
		default:
			when = added.Add(time.Duration(*p.Spec.Tolerations[idx].TolerationSeconds) * time.Second)
		}
		if !found || when.Before(at) {
			at, found = when, true
		}
	}
	return at, found
}

// bucket is a token bucket: rate tokens per second, as many at most.
type bucket struct {
	mu     sync.Mutex
	rate   float64
	tokens float64
	last   time.Time
	now    func() time.Time
}

func newBucket(rate float64, now func() time.Time) *bucket {
	return &bucket{rate: rate, tokens: max(rate, 1), now: now}
}

// take takes a token, or says how long until one is there.
func (b *bucket) take() time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.now()
	if !b.last.IsZero() {
		b.tokens = min(max(b.rate, 1), b.tokens+now.Sub(b.last).Seconds()*b.rate)
	}
	b.last = now
	if b.tokens >= 1 {
		b.tokens--
		return 0
	}
	return time.Duration((1 - b.tokens) / b.rate * float64(time.Second))
}
