package flowcontrol

import (
	"cmp"
	"context"
	"math"
	"path"
	"slices"
	"sync"
	"time"

	fc "github.com/kobune/kobune/api/flowcontrol"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/apiserver/registry"
	"github.com/kobune/kobune/apiserver/storage"
)

// Config is what the controller needs.
type Config struct {
	// Store is where the FlowSchemas and PriorityLevelConfigurations are
	// read from (nil: the bootstrap configuration, fixed).
	Store *storage.Store
	// ServerConcurrencyLimit is the seats the limited levels share
	// (kube-apiserver: --max-requests-inflight +
	// --max-mutating-requests-inflight, 600 by default).
	ServerConcurrencyLimit int
	// QueueWaitLimit is how long a request may wait in a queue before it
	// is refused (kube-apiserver: a quarter of --request-timeout, 15 s).
	QueueWaitLimit time.Duration
}

// Controller classifies requests and hands out seats.
type Controller struct {
	cfg Config

	mu        sync.Mutex
	schemas   []*schema                         // by matchingPrecedence, then name
	levels    map[string]*level                 // by name
	order     []*level                          // the levels by name: where borrowing looks
	have      map[string]map[string]meta.Object // resource → name → object
	counts    map[string]int64                  // resource → stored objects (width.go)
	countedAt map[string]time.Time              // resource → when it was counted
	counting  sync.Mutex                        // one count at a time (width.go)
}

// A schema is a FlowSchema as the controller matches it.
type schema struct {
	fs *fc.FlowSchema
}

// New builds a controller that starts from the bootstrap configuration;
// Run then follows the stored objects.
func New(cfg Config) *Controller {
	if cfg.ServerConcurrencyLimit <= 0 {
		cfg.ServerConcurrencyLimit = 600
	}
	if cfg.QueueWaitLimit <= 0 {
		cfg.QueueWaitLimit = 15 * time.Second
	}
	c := &Controller{cfg: cfg, levels: map[string]*level{}, counts: map[string]int64{}, countedAt: map[string]time.Time{},
		have: map[string]map[string]meta.Object{"flowschemas": {}, "prioritylevelconfigurations": {}}}
	levels, schemas := fc.Bootstrap()
	for _, l := range levels {
		fc.SetDefaultsPriorityLevelConfiguration(l)
		c.have["prioritylevelconfigurations"][l.Name] = l
	}
	for _, s := range schemas {
		fc.SetDefaultsFlowSchema(s)
		c.have["flowschemas"][s.Name] = s
	}
	c.rebuild()
	return c
}

// Run follows the FlowSchemas and PriorityLevelConfigurations until ctx
// ends, rebuilding the configuration on every change. Until the stored
// objects are read, the bootstrap configuration New started from holds.
func (c *Controller) Run(ctx context.Context) {
	if c.cfg.Store == nil {
		return
	}
	var wg sync.WaitGroup
	for _, res := range []string{"flowschemas", "prioritylevelconfigurations"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			registry.Follow(ctx, c.cfg.Store, res, nil, func(objs []meta.Object) {
				c.mu.Lock()
				defer c.mu.Unlock()
				c.have[res] = map[string]meta.Object{}
				for _, o := range objs {
					c.have[res][o.GetObjectMeta().Name] = o
				}
				c.rebuild()
			}, func(ev storage.Event, o meta.Object) {
				c.mu.Lock()
				defer c.mu.Unlock()
				if o == nil {
					delete(c.have[res], path.Base(ev.Key))
				} else {
					c.have[res][o.GetObjectMeta().Name] = o
				}
				c.rebuild()
			})
		}()
	}
	wg.Wait()
}

// rebuild turns the objects into schemas and levels, keeping the state
// (running requests, queues) of the levels that stay. c.mu is held.
func (c *Controller) rebuild() {
	var schemas []*schema
	for _, o := range c.have["flowschemas"] {
		schemas = append(schemas, &schema{fs: o.(*fc.FlowSchema)})
	}
	slices.SortFunc(schemas, func(a, b *schema) int {
		return cmp.Or(cmp.Compare(a.fs.Spec.MatchingPrecedence, b.fs.Spec.MatchingPrecedence), cmp.Compare(a.fs.Name, b.fs.Name))
	})
	c.schemas = schemas

	shares := 0
	for _, o := range c.have["prioritylevelconfigurations"] {
		shares += sharesOf(o.(*fc.PriorityLevelConfiguration))
	}
	old := c.levels
	c.levels = map[string]*level{}
	c.order = nil
	for name, o := range c.have["prioritylevelconfigurations"] {
		pl := o.(*fc.PriorityLevelConfiguration)
		l := old[name]
		if l == nil {
			l = &level{name: name, rejected: map[string]int{}}
		}
		delete(old, name)
		l.configure(pl, c.cfg.ServerConcurrencyLimit, shares)
		c.levels[name] = l
		c.order = append(c.order, l)
	}
	slices.SortFunc(c.order, func(a, b *level) int { return cmp.Compare(a.name, b.name) })
	// A level that is gone lets its waiting requests run: they were
	// admitted under a configuration that no longer exists.
	for _, l := range old {
		l.gone = true
		c.dispatch(l)
	}
	for _, l := range c.order {
		c.dispatch(l)
	}
}

func sharesOf(pl *fc.PriorityLevelConfiguration) int {
	switch {
	case pl.Spec.Limited != nil && pl.Spec.Limited.NominalConcurrencyShares != nil:
		return int(*pl.Spec.Limited.NominalConcurrencyShares)
	case pl.Spec.Exempt != nil && pl.Spec.Exempt.NominalConcurrencyShares != nil:
		return int(*pl.Spec.Exempt.NominalConcurrencyShares)
	}
	return 0
}

// configure sets the level's limits from its object: its nominal limit
// is ceil(server × shares / all shares), as Kubernetes computes it.
func (l *level) configure(pl *fc.PriorityLevelConfiguration, server, allShares int) {
	l.uid = string(pl.UID)
	l.exempt = pl.Spec.Type == fc.PriorityLevelExempt
	l.reject, l.limit, l.lendable, l.borrowLimit = false, 0, 0, -1
	lim := pl.Spec.Limited
	if l.exempt || lim == nil {
		l.setQueues(0, 0, 0)
		return
	}
	if allShares > 0 {
		l.limit = int(math.Ceil(float64(server) * float64(sharesOf(pl)) / float64(allShares)))
	}
	if p := lim.LendablePercent; p != nil {
		l.lendable = int(math.Round(float64(l.limit) * float64(*p) / 100))
	}
	if p := lim.BorrowingLimitPercent; p != nil {
		l.borrowLimit = int(math.Round(float64(l.limit) * float64(*p) / 100))
	}
	q := lim.LimitResponse.Queuing
	if lim.LimitResponse.Type != fc.LimitResponseQueue || q == nil {
		l.reject = true
		l.setQueues(0, 0, 0)
		return
	}
	l.setQueues(int(q.Queues), int(q.HandSize), int(q.QueueLengthLimit))
}

// setQueues gives the level n queues; when their number changes, the
// requests waiting are spread over the new ones in their order.
func (l *level) setQueues(n, hand, length int) {
	l.handSize, l.queueLength = hand, length
	if n == len(l.queues) {
		return
	}
	var waiting []*waiter
	for _, q := range l.queues {
		waiting = append(waiting, q.waiters...)
	}
	l.queues = make([]*queue, n)
	for i := range l.queues {
		l.queues[i] = &queue{}
	}
	if n == 0 {
		// No queues any more (Reject, or Exempt): the waiting run.
		for _, w := range waiting {
			w.dispatched = true
			l.executing += w.width
			close(w.ready)
		}
		l.waiting = 0
		return
	}
	for i, w := range waiting {
		w.q = l.queues[i%n]
		w.q.waiters = append(w.q.waiters, w)
	}
}
