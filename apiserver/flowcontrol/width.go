package flowcontrol

import (
	"context"
	"time"

	"github.com/kobune/kobune/api/scheme"
	"github.com/kobune/kobune/apiserver/request"
	"github.com/kobune/kobune/apiserver/storage"
)

// A request's width is the seats it holds while it runs, Kubernetes'
// work estimate: a list takes one seat per 100 objects it may return, at
// most 10, so that 200 lists of 20,000 objects hold 2,000 seats' worth
// of a level and wait their turn instead of running all at once (each
// holds its whole response in memory). Everything else takes one.
const (
	objectsPerSeat = 100
	maxSeats       = 10
	// countInterval is how often the objects of each resource are
	// counted (kube-apiserver: every minute).
	countInterval = 10 * time.Second
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
	return int(min(max((n+objectsPerSeat-1)/objectsPerSeat, 1), maxSeats))
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
