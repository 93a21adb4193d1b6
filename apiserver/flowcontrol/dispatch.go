package flowcontrol

import (
	"context"
	"hash/fnv"
	"slices"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kobune/kobune/apiserver/request"
)

// A level is one PriorityLevelConfiguration's share of the seats and its
// queues. Every field is guarded by Controller.mu.
type level struct {
	name, uid string
	exempt    bool // never limited, never queued
	reject    bool // limitResponse Reject: no queues
	// limit is the nominal concurrency limit: the server's seats × this
	// level's shares / all levels' shares, rounded up. lendable of them
	// may be lent while idle; the level may borrow up to borrowLimit
	// seats from others (-1: no bound).
	limit, lendable, borrowLimit int
	// executing counts the level's running requests, borrowed those of
	// them that run on another level's seat, lent this level's seats
	// running others' requests.
	executing, borrowed, lent int
	queues                    []*queue
	handSize, queueLength     int
	waiting                   int // requests in the queues
	next                      int // the queue to look at first: round robin
	gone                      bool
	rejected                  map[string]int // reason → count, for the metrics
}

// A queue is a FIFO of waiting requests; executing counts its requests
// running, so that a flow is dealt the least busy queue of its hand.
type queue struct {
	waiters   []*waiter
	executing int
}

// A waiter is one request in a queue.
type waiter struct {
	ready      chan struct{}
	dispatched bool
	lender     *level
	q          *queue
}

// ownInUse is how many of the level's own seats are taken, by its own
// requests or lent.
func (l *level) ownInUse() int { return l.executing - l.borrowed + l.lent }

// seat finds a seat for one more request of l: one of its own, or one
// borrowed from a level that has a lendable seat idle (returned as the
// lender). ok is false when none is free.
func (c *Controller) seat(l *level) (lender *level, ok bool) {
	if l.exempt || l.gone {
		return nil, true
	}
	if l.ownInUse() < l.limit {
		return nil, true
	}
	if l.borrowLimit >= 0 && l.borrowed >= l.borrowLimit {
		return nil, false
	}
	for _, j := range c.order {
		// A level lends only what it leaves idle: never while requests
		// of its own wait.
		if j != l && !j.exempt && j.waiting == 0 && j.lent < j.lendable && j.ownInUse() < j.limit {
			return j, true
		}
	}
	return nil, false
}

// take runs a request of l on a seat: its own or the lender's.
func take(l, lender *level, q *queue) {
	l.executing++
	if q != nil {
		q.executing++
	}
	if lender != nil {
		lender.lent++
		l.borrowed++
	}
}

// Rejected is the reason a request was refused: "queue-full",
// "concurrency-limit" (a level that does not queue), "time-out" (it
// waited longer than the queue wait limit), as Kubernetes' metric
// apiserver_flowcontrol_rejected_requests_total labels them.
const (
	ReasonQueueFull        = "queue-full"
	ReasonConcurrencyLimit = "concurrency-limit"
	ReasonTimeOut          = "time-out"
)

// Decision is how a request was classified: what the X-Kubernetes-PF-*
// response headers report.
type Decision struct {
	FlowSchema, FlowSchemaUID, PriorityLevel, PriorityLevelUID string
}

// Classify finds the schema and level of a request (without taking a
// seat): the first schema by precedence whose level exists and whose
// rules match.
func (c *Controller) Classify(u request.UserInfo, a *request.Attributes) (Decision, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s, l := c.classify(u, a)
	if l == nil {
		return Decision{}, false
	}
	return Decision{s.fs.Name, string(s.fs.UID), l.name, l.uid}, true
}

func (c *Controller) classify(u request.UserInfo, a *request.Attributes) (*schema, *level) {
	for _, s := range c.schemas {
		if l := c.levels[s.fs.Spec.PriorityLevelConfiguration.Name]; l != nil && matches(s.fs, u, a) {
			return s, l
		}
	}
	return nil, nil
}

// Admit classifies a request and waits for a seat for it: at once when
// its level has one free and nobody queued ahead, else in the queue its
// flow is dealt. done gives the seat back; call it once the request has
// been answered. A request refused (queue full, level that rejects,
// waited too long) gets a ResourceExhausted error (HTTP 429 with
// Retry-After); one whose client left while it waited gets ctx's error.
func (c *Controller) Admit(ctx context.Context, u request.UserInfo, a *request.Attributes) (d Decision, done func(), err error) {
	c.mu.Lock()
	s, l := c.classify(u, a)
	if l == nil { // no schema matched (catch-all deleted and not yet restored)
		c.mu.Unlock()
		return Decision{}, func() {}, nil
	}
	d = Decision{s.fs.Name, string(s.fs.UID), l.name, l.uid}
	if l.waiting == 0 {
		if lender, ok := c.seat(l); ok {
			take(l, lender, nil)
			c.mu.Unlock()
			return d, c.releaser(l, lender, nil), nil
		}
	}
	if l.reject || len(l.queues) == 0 {
		l.rejected[ReasonConcurrencyLimit]++
		c.mu.Unlock()
		return d, nil, tooMany(d, "the priority level has no seat free and does not queue")
	}
	q := l.queues[l.shuffleShard(flowOf(s.fs, u, a))]
	if len(q.waiters) >= l.queueLength {
		l.rejected[ReasonQueueFull]++
		c.mu.Unlock()
		return d, nil, tooMany(d, "the flow's queues are full")
	}
	w := &waiter{ready: make(chan struct{}), q: q}
	q.waiters = append(q.waiters, w)
	l.waiting++
	c.mu.Unlock()

	timer := time.NewTimer(c.cfg.QueueWaitLimit)
	defer timer.Stop()
	var reason error
	select {
	case <-w.ready:
		return d, c.releaser(l, w.lender, w.q), nil
	case <-ctx.Done():
		reason = ctx.Err()
	case <-timer.C:
		reason = tooMany(d, "the request waited "+c.cfg.QueueWaitLimit.String()+" in its queue")
	}
	c.mu.Lock()
	if w.dispatched { // a seat came at the same moment: give it back
		c.mu.Unlock()
		c.releaser(l, w.lender, w.q)()
		return d, nil, reason
	}
	w.q.remove(w)
	l.waiting--
	if ctx.Err() == nil {
		l.rejected[ReasonTimeOut]++
	}
	c.mu.Unlock()
	return d, nil, reason
}

func tooMany(d Decision, why string) error {
	return status.Errorf(codes.ResourceExhausted, "Too many requests, please try again later: %s (priority level %q, flow schema %q)", why, d.PriorityLevel, d.FlowSchema)
}

// releaser gives a request's seat back and lets waiting requests take
// the seats now free.
func (c *Controller) releaser(l, lender *level, q *queue) func() {
	return func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		l.executing--
		if q != nil {
			q.executing--
		}
		first := l
		if lender != nil {
			lender.lent--
			l.borrowed--
			first = lender // the seat is the lender's again
		}
		c.dispatch(first)
	}
}

// dispatch starts as many waiting requests as seats allow: first of the
// level whose seat was freed, then of the others (which may borrow).
func (c *Controller) dispatch(first *level) {
	for _, l := range append([]*level{first}, c.order...) {
		for l.waiting > 0 {
			lender, ok := c.seat(l)
			if !ok {
				break
			}
			w := l.pop()
			w.dispatched, w.lender = true, lender
			take(l, lender, w.q)
			close(w.ready)
		}
	}
}

// pop takes the first request of the next non-empty queue, round robin:
// each flow's queue gets its turn however many requests another has.
func (l *level) pop() *waiter {
	for range l.queues {
		q := l.queues[l.next]
		l.next = (l.next + 1) % len(l.queues)
		if len(q.waiters) > 0 {
			w := q.waiters[0]
			q.waiters = q.waiters[1:]
			l.waiting--
			return w
		}
	}
	panic("flowcontrol: level counts waiters its queues do not hold")
}

func (q *queue) remove(w *waiter) {
	for i, x := range q.waiters {
		if x == w {
			q.waiters = append(q.waiters[:i], q.waiters[i+1:]...)
			return
		}
	}
}

// shuffleShard deals the flow a hand of handSize distinct queues from its
// hash (the same flow always gets the same hand) and picks the one with
// the fewest requests waiting and running. Two flows share a whole hand
// only rarely, so a flow that floods its queues leaves most others' free.
func (l *level) shuffleShard(flow string) int {
	h := fnv.New64a()
	h.Write([]byte(flow))
	v := h.Sum64()
	deck := len(l.queues)
	hand := min(l.handSize, deck)
	dealt := make([]int, 0, hand)
	best, bestLen := -1, 0
	for i := range hand {
		card := int(v % uint64(deck-i))
		v /= uint64(deck - i)
		// card indexes the cards not yet dealt: skip past those dealt,
		// in increasing order.
		sorted := slices.Clone(dealt)
		slices.Sort(sorted)
		for _, d := range sorted {
			if card >= d {
				card++
			}
		}
		dealt = append(dealt, card)
		q := l.queues[card]
		if n := len(q.waiters) + q.executing; best < 0 || n < bestLen {
			best, bestLen = card, n
		}
	}
	return best
}
