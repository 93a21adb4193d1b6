package flowcontrol

import (
	"context"
	"time"

	"github.com/kobune/kobune/apiserver/request"
	"github.com/kobune/kobune/apiserver/storage"
)

// A request's width is the seats it holds while it runs, Kubernetes'
// work estimate: a list takes one seat per 100 objects it may return, so
// that 200 lists of 20,000 objects wait their turn instead of running all
// at once (each holds its whole response in memory, and 30 of them at
// once on two cores took longer than a minute each while a second
// user's creates waited). Kubernetes caps a list at 10 seats, as its
// lists come from the watch cache; Kobune's are read from etcd and cost
// in proportion to what they return, so the cap is the level's own
// limit (clampWidth; docs/differences.md). Everything else takes one.
const (
	objectsPerSeat = 100
	// countFresh is how old a resource's count may be when a list is
	// estimated from it; older, it is counted again first (one count-only
	// etcd range, at most one per resource per second). kube-apiserver
	// counts every minute, from its watch cache; a count 5 s old let 300
	// watches of 20,000 ConfigMaps created a moment before in at one seat
	// each, 8 GB at once (TestFairnessUnderAttack).
	countFresh = time.Second
)

// Width estimates a request's seats: for a list, from the number of
// objects of its resource (all namespaces: the count etcd gives cheaply)
// or its page limit if smaller.
func (c *Controller) Width(ctx context.Context, a *request.Attributes, limit int64) int {
	if a.Verb != "list" {
		return 1
	}
	n := c.objects(ctx, a.Resource)
	if limit > 0 && limit < n {
		n = limit
	}
	return int(max((n+objectsPerSeat-1)/objectsPerSeat, 1))
}

// objects is how many objects of resource are stored, counted again when
// the count is older than countFresh (one caller counts, the others wait
// for it); if the count fails, the last one stands.
func (c *Controller) objects(ctx context.Context, resource string) int64 {
	fresh := func() (int64, bool) {
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.counts[resource], time.Since(c.countedAt[resource]) < countFresh
	}
	n, ok := fresh()
	if ok || c.cfg.Store == nil {
		return n
	}
	c.counting.Lock()
	defer c.counting.Unlock()
	if n, ok = fresh(); ok {
		return n
	}
	counted, err := c.cfg.Store.Count(ctx, storage.ListPrefix(resource, ""))
	if err != nil {
		return n
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.counts[resource], c.countedAt[resource] = counted, time.Now()
	return counted
}

// Observe raises a resource's count to what a list just returned, so that
// the next lists are estimated from it without waiting for the count.
func (c *Controller) Observe(resource string, items int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.counts[resource] = max(c.counts[resource], int64(items))
}
