package flowcontrol

import (
	"context"
	"time"

	"github.com/kobune/kobune/api/scheme"
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
	// countInterval is how often the objects of each resource are
	// counted (kube-apiserver: every minute); a list's answer raises its
	// resource's count at once (Observe).
	countInterval = 5 * time.Second
)

// Width estimates a request's seats: for a list, from the number of
// objects of its resource (all namespaces: the count etcd gives cheaply)
// or its page limit if smaller.
func (c *Controller) Width(a *request.Attributes, limit int64) int {
	if a.Verb != "list" {
		return 1
	}
	c.mu.Lock()
	n := c.counts[a.Resource]
	c.mu.Unlock()
	if limit > 0 && limit < n {
		n = limit
	}
	return int(max((n+objectsPerSeat-1)/objectsPerSeat, 1))
}

// countObjects keeps c.counts: every countInterval, the number of stored
// objects of each resource.
func (c *Controller) countObjects(ctx context.Context) {
	for {
		counts := map[string]int64{}
		for _, k := range scheme.All() {
			n, err := c.cfg.Store.Count(ctx, storage.ListPrefix(k.Resource, ""))
			if err != nil {
				break
			}
			counts[k.Resource] = n
		}
		c.mu.Lock()
		c.counts = counts
		c.mu.Unlock()
		select {
		case <-ctx.Done():
			return
		case <-time.After(countInterval):
		}
	}
}

// Observe raises a resource's count to what a list just returned, so that
// the next lists are estimated from it without waiting for the count.
func (c *Controller) Observe(resource string, items int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.counts == nil {
		c.counts = map[string]int64{}
	}
	c.counts[resource] = max(c.counts[resource], int64(items))
}
