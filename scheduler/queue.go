package scheduler

import (
	"container/heap"
	"sync"
	"time"
)

// queueInfo tells the queue a pending pod's priority and age.
type queueInfo func(key string) (priority int32, created time.Time, ok bool)

// Queue is the scheduling queue, in three parts as in kube-scheduler:
//
//   - active: pods to try now, highest priority first, then oldest;
//   - backoff: pods that failed, waiting out their back-off (base doubling to max);
//   - unschedulable: pods that fit nowhere; they move back (through back-off)
//     when something changes that could help (MoveAllToActive), or after
//     unschedulableTimeout at the latest.
//
// A key is in at most one part, and never handed out twice at once.
type Queue struct {
	info      queueInfo
	base, max time.Duration
	now       func() time.Time

	mu            sync.Mutex
	cond          *sync.Cond
	active        activeHeap
	inActive      map[string]bool
	backoff       map[string]time.Time // key → when it may go back to active
	unschedulable map[string]time.Time // key → when it was parked
	attempts      map[string]int
	processing    map[string]uint64 // key → the move cycle when it was popped
	dirty         map[string]bool   // added while processing
	moveCycle     uint64            // counts MoveAllToActive calls
	seq           uint64            // orders pushes, for pods of equal priority and age
	closed        bool
}

// unschedulableTimeout bounds how long a pod waits for a helpful change.
const unschedulableTimeout = 60 * time.Second

func newQueue(info queueInfo, base, max time.Duration, now func() time.Time) *Queue {
	q := &Queue{info: info, base: base, max: max, now: now, inActive: map[string]bool{},
		backoff: map[string]time.Time{}, unschedulable: map[string]time.Time{}, attempts: map[string]int{},
		processing: map[string]uint64{}, dirty: map[string]bool{}}
	q.cond = sync.NewCond(&q.mu)
	return q
}

// Add makes a pod active (a new or changed pending pod).
func (q *Queue) Add(key string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if _, busy := q.processing[key]; busy {
		q.dirty[key] = true
		return
	}
	delete(q.backoff, key)
	delete(q.unschedulable, key)
	q.pushActive(key)
}

func (q *Queue) pushActive(key string) {
	if q.inActive[key] {
		return
	}
	q.inActive[key] = true
	prio, created, _ := q.info(key)
	q.seq++
	heap.Push(&q.active, activeItem{key: key, priority: prio, created: created, seq: q.seq})
	q.cond.Signal()
}

// Pop blocks until a pod is active; ok is false once the queue is closed.
func (q *Queue) Pop() (key string, ok bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for q.active.Len() == 0 && !q.closed {
		q.cond.Wait()
	}
	if q.closed {
		return "", false
	}
	key = heap.Pop(&q.active).(activeItem).key
	delete(q.inActive, key)
	q.processing[key] = q.moveCycle
	return key, true
}

// Done ends an attempt. failed: the pod goes to back-off (error) or is
// parked as unschedulable; success forgets its attempts.
func (q *Queue) Done(key string, unschedulable, failed bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	popped := q.processing[key]
	delete(q.processing, key)
	if q.dirty[key] {
		delete(q.dirty, key)
		q.pushActive(key)
		return
	}
	if !failed {
		delete(q.attempts, key)
		return
	}
	q.attempts[key]++
	if unschedulable && q.moveCycle == popped {
		q.unschedulable[key] = q.now()
		return
	}
	// An error, or the cluster changed while this attempt ran (its verdict
	// may be stale): back off and try again.
	q.backoff[key] = q.now().Add(q.delay(key))
}

// delay is the back-off after the key's attempts: base, doubling, to max.
func (q *Queue) delay(key string) time.Duration {
	d := q.base
	for i := 1; i < q.attempts[key] && d < q.max; i++ {
		d *= 2
	}
	return min(d, q.max)
}

// MoveAllToActive sends parked pods back, through their back-off: the
// cluster changed in a way that may help them.
func (q *Queue) MoveAllToActive() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.moveCycle++
	for key, parked := range q.unschedulable {
		delete(q.unschedulable, key)
		q.backoff[key] = parked.Add(q.delay(key))
	}
	q.flushLocked()
}

// Forget drops a pod (deleted, or bound by someone else).
func (q *Queue) Forget(key string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	delete(q.backoff, key)
	delete(q.unschedulable, key)
	delete(q.attempts, key)
}

// flush moves pods whose back-off is over to active, and parked pods that
// waited unschedulableTimeout to back-off.
func (q *Queue) flush() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.flushLocked()
}

func (q *Queue) flushLocked() {
	now := q.now()
	for key, parked := range q.unschedulable {
		if now.Sub(parked) >= unschedulableTimeout {
			delete(q.unschedulable, key)
			q.backoff[key] = now
		}
	}
	for key, ready := range q.backoff {
		if !ready.After(now) {
			delete(q.backoff, key)
			q.pushActive(key)
		}
	}
}

// Run flushes every interval until stop is closed, then closes the queue.
func (q *Queue) Run(stop <-chan struct{}, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-stop:
			q.mu.Lock()
			q.closed = true
			q.cond.Broadcast()
			q.mu.Unlock()
			return
		case <-t.C:
			q.flush()
		}
	}
}

// Lens returns the sizes of the three parts.
func (q *Queue) Lens() (active, backoff, unschedulable int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.active.Len(), len(q.backoff), len(q.unschedulable)
}

// activeItem is a key with its priority and creation time, read once when
// it is pushed.
type activeItem struct {
	key      string
	priority int32
	created  time.Time
	seq      uint64
}

// activeHeap orders pods by priority (high first), then creation (old
// first), then the order they were added.
type activeHeap []activeItem

func (h activeHeap) Len() int { return len(h) }
func (h activeHeap) Less(i, j int) bool {
	if h[i].priority != h[j].priority {
		return h[i].priority > h[j].priority
	}
	if !h[i].created.Equal(h[j].created) {
		return h[i].created.Before(h[j].created)
	}
	return h[i].seq < h[j].seq
}
func (h activeHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *activeHeap) Push(x any)   { *h = append(*h, x.(activeItem)) }
func (h *activeHeap) Pop() any {
	old := *h
	it := old[len(old)-1]
	*h = old[:len(old)-1]
	return it
}
