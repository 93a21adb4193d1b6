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
	// executing counts the seats the level's running requests hold
	// (a request holds its width: one seat, or more for a large list),
	// borrowed those of them that are another level's, lent this level's
	// seats that others' requests hold.
	executing, borrowed, lent int
	queues                    []*queue
	handSize, queueLength     int
	waiting                   int // requests in the queues
	// now is the level's virtual clock: the seat-seconds served of the
	// queue dispatched from last. A queue that wakes up starts there, so
	// that it neither jumps ahead for the time it was idle nor waits
	// behind what the busy queues have been served.
	now      float64
	gone     bool
	rejected map[string]int // reason → count, for the metrics
}

// A queue is a FIFO of waiting requests; executing counts its requests
// running, so that a flow is dealt the least busy queue of its hand;
// served is the seat-seconds its requests have held (fair queuing's
// virtual time): the queue served least goes next.
type queue struct {
	waiters   []*waiter
	executing int
	served    float64
}

// estimate is the seconds a request is charged when it starts; its
// queue is charged the rest (or given back the difference) when it ends.
const estimate = 0.05

// A waiter is one request in a queue.
type waiter struct {
	ready      chan struct{}
	dispatched bool
	lender     *level
	q          *queue
	width      int
}

// ownInUse is how many of the level's own seats are taken, by its own
// requests or lent.
func (l *level) ownInUse() int { return l.executing - l.borrowed + l.lent }

// seat finds width seats for one more request of l: its own, or
// borrowed from one level that leaves that many lendable seats idle
// (returned as the lender). ok is false when there are not enough free.
func (c *Controller) seat(l *level, width int) (lender *level, ok bool) {
	if l.exempt || l.gone {
		return nil, true
	}
	if l.ownInUse()+width <= l.limit {
		return nil, true
	}
	if l.borrowLimit >= 0 && l.borrowed+width > l.borrowLimit {
		return nil, false
	}
	for _, j := range c.order {
		// A level lends only what it leaves idle: never while requests
		// of its own wait.
		if j != l && !j.exempt && j.waiting == 0 && j.lent+width <= j.lendable && j.ownInUse()+width <= j.limit {
			return j, true
		}
	}
	return nil, false
}

// take runs a request of l on width seats: its own or the lender's.
func take(l, lender *level, q *queue, width int) {
	l.executing += width
	if q != nil {
		q.executing++
		q.served += float64(width) * estimate
	}
	if lender != nil {
		lender.lent += width
		l.borrowed += width
	}
}

// clampWidth keeps a request's width within what its level could ever
// give it, as Kubernetes does: a list estimated at 200 seats on a level
// of 49 takes 49.
func (l *level) clampWidth(width int) int {
	if l.limit > 0 {
		width = min(width, l.limit)
	}
	return max(width, 1)
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

// Admit classifies a request and waits for width seats for it (see
// Width): at once when its level has them free and nobody queued ahead,
// else in the queue its flow is dealt. done gives the seat back; call it once the request has
// been answered. A request refused (queue full, level that rejects,
// waited too long) gets a ResourceExhausted error (HTTP 429 with
// Retry-After); one whose client left while it waited gets ctx's error.
func (c *Controller) Admit(ctx context.Context, u request.UserInfo, a *request.Attributes, width int) (d Decision, done func(), err error) {
	c.mu.Lock()
	s, l := c.classify(u, a)
	if l == nil { // no schema matched (catch-all deleted and not yet restored)
		c.mu.Unlock()
		return Decision{}, func() {}, nil
	}
	d = Decision{s.fs.Name, string(s.fs.UID), l.name, l.uid}
	width = l.clampWidth(width)
	var q *queue // the flow's queue, charged for what its requests hold
	if len(l.queues) > 0 {
		q = l.queues[l.shuffleShard(flowOf(s.fs, u, a))]
	}
	if l.waiting == 0 {
		if lender, ok := c.seat(l, width); ok {
			take(l, lender, q, width)
			c.mu.Unlock()
			return d, c.releaser(l, lender, q, width), nil
		}
	}
	if q == nil {
		l.rejected[ReasonConcurrencyLimit]++
		c.mu.Unlock()
		return d, nil, tooMany(d, "the priority level has no seat free and does not queue")
	}
	if len(q.waiters) >= l.queueLength {
		l.rejected[ReasonQueueFull]++
		c.mu.Unlock()
		return d, nil, tooMany(d, "the flow's queues are full")
	}
	w := &waiter{ready: make(chan struct{}), q: q, width: width}
	if len(q.waiters) == 0 {
		q.served = max(q.served, l.now)
	}
	q.waiters = append(q.waiters, w)
	l.waiting++
	c.dispatch(l) // it may run at once: on seats borrowed, or as the least served
	c.mu.Unlock()

	timer := time.NewTimer(c.cfg.QueueWaitLimit)
	defer timer.Stop()
	var reason error
	select {
	case <-w.ready:
		return d, c.releaser(l, w.lender, w.q, w.width), nil
	case <-ctx.Done():
		reason = ctx.Err()
	case <-timer.C:
		reason = tooMany(d, "the request waited "+c.cfg.QueueWaitLimit.String()+" in its queue")
	}
	c.mu.Lock()
	if w.dispatched { // a seat came at the same moment: give it back
		c.mu.Unlock()
		c.releaser(l, w.lender, w.q, w.width)()
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
func (c *Controller) releaser(l, lender *level, q *queue, width int) func() {
	start := time.Now()
	return func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		l.executing -= width
		if q != nil {
			q.executing--
			q.served += float64(width) * (time.Since(start).Seconds() - estimate)
		}
		first := l
		if lender != nil {
			lender.lent -= width
			l.borrowed -= width
			first = lender // the seat is the lender's again
		}
		c.dispatch(first)
	}
}

// dispatch starts as many waiting requests as seats allow: first of the
// level whose seat was freed, then of the others (which may borrow).
// Within a level it is fair queuing (Kubernetes' virtual finish time,
// simplified): the queue whose requests have held the fewest
// seat-seconds goes next, so a flow of large lists and a flow of small
// creates each get their share of the seats, not of the turns; when that
// request does not fit in the seats free, nothing else jumps ahead of it.
func (c *Controller) dispatch(first *level) {
	for _, l := range append([]*level{first}, c.order...) {
		for l.waiting > 0 {
			q := l.leastServed()
			w := q.waiters[0]
			lender, ok := c.seat(l, w.width)
			if !ok {
				break
			}
			q.waiters = q.waiters[1:]
			l.waiting--
			l.now = max(l.now, q.served)
			w.dispatched, w.lender = true, lender
			take(l, lender, q, w.width)
			close(w.ready)
		}
	}
}

// leastServed is the non-empty queue served least; on a tie, the one
// whose first request is narrowest (a flow that just woke up starts at
// the level's clock, as the busy flows' queues do: a create then goes
// before a list that must wait for many seats to be free).
func (l *level) leastServed() *queue {
	var best *queue
	for _, q := range l.queues {
		if len(q.waiters) == 0 {
			continue
		}
		if best == nil || q.served < best.served || q.served == best.served && q.waiters[0].width < best.waiters[0].width {
			best = q
		}
	}
	if best == nil {
		panic("flowcontrol: level counts waiters its queues do not hold")
	}
	return best
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
