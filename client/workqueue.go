package client

import (
	"container/heap"
	"math"
	"sync"
	"time"
)

// Queue is a deduplicating, rate-limited work queue of keys, as in
// client-go's workqueue:
//
//   - a key added many times before a worker takes it is processed once (dirty set);
//   - a key is never processed by two workers at once (processing set): if it
//     is added while being processed, it is queued again when Done is called;
//   - AddRateLimited delays a failing key with per-key exponential backoff
//     (5 ms doubling to 1000 s) and an overall token bucket (10/s, burst 100);
//   - AddAfter delays a key (for RequeueAfter).
//
// Workers loop: key, quit := q.Get(); if quit return; reconcile; then
// q.Forget(key) on success or q.AddRateLimited(key) on error; always q.Done(key).
type Queue struct {
	clock Clock

	mu         sync.Mutex
	cond       *sync.Cond
	queue      []string
	dirty      map[string]struct{}
	processing map[string]struct{}
	shutdown   bool

	failures map[string]int
	maxDelay time.Duration // SetMaxDelay; MaxDelay when zero
	tokens   float64
	lastFill time.Time

	waiting waitHeap
	wake    chan struct{}
}

// Rate-limiter settings (client-go's DefaultControllerRateLimiter).
const (
	BaseDelay   = 5 * time.Millisecond
	MaxDelay    = 1000 * time.Second
	bucketQPS   = 10.0
	bucketBurst = 100.0
)

// NewQueue returns a queue on clock (nil: the wall clock).
func NewQueue(clock Clock) *Queue {
	if clock == nil {
		clock = RealClock{}
	}
	q := &Queue{
		clock: clock, dirty: map[string]struct{}{}, processing: map[string]struct{}{},
		failures: map[string]int{}, tokens: bucketBurst, lastFill: clock.Now(),
		wake: make(chan struct{}, 1),
	}
	q.cond = sync.NewCond(&q.mu)
	go q.delayLoop()
	return q
}

// Add queues key unless it is already waiting.
func (q *Queue) Add(key string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.addLocked(key)
}

func (q *Queue) addLocked(key string) {
	if q.shutdown {
		return
	}
	if _, ok := q.dirty[key]; ok {
		return
	}
	q.dirty[key] = struct{}{}
	if _, ok := q.processing[key]; ok {
		return // Done will queue it
	}
	q.queue = append(q.queue, key)
	q.cond.Signal()
}

// Get blocks until a key is available; quit is true after ShutDown.
func (q *Queue) Get() (key string, quit bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for len(q.queue) == 0 && !q.shutdown {
		q.cond.Wait()
	}
	if len(q.queue) == 0 {
		return "", true
	}
	key, q.queue = q.queue[0], q.queue[1:]
	q.processing[key] = struct{}{}
	delete(q.dirty, key)
	return key, false
}

// Done marks key as processed; if it was added meanwhile, it is queued again.
func (q *Queue) Done(key string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	delete(q.processing, key)
	if _, ok := q.dirty[key]; ok {
		q.queue = append(q.queue, key)
		q.cond.Signal()
	}
}

// Len returns the number of keys waiting (not counting delayed ones).
func (q *Queue) Len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.queue)
}

// ShutDown makes Get return quit once the queue drains.
func (q *Queue) ShutDown() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.shutdown = true
	q.cond.Broadcast()
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// SetMaxDelay caps the per-key backoff below MaxDelay, for a queue whose
// failures are mostly waits on something else (the kubelet retries a pod
// whose sync failed every 10 s, not after minutes).
func (q *Queue) SetMaxDelay(d time.Duration) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.maxDelay = d
}

// AddRateLimited queues key after its backoff delay.
func (q *Queue) AddRateLimited(key string) {
	q.mu.Lock()
	n := q.failures[key]
	q.failures[key] = n + 1
	limit := MaxDelay
	if q.maxDelay > 0 {
		limit = q.maxDelay
	}
	delay := time.Duration(float64(BaseDelay) * math.Pow(2, float64(n)))
	if delay > limit || delay <= 0 {
		delay = limit
	}
	if b := q.bucketDelayLocked(); b > delay {
		delay = b
	}
	q.mu.Unlock()
	q.AddAfter(key, delay)
}

// bucketDelayLocked takes a token and returns how long until it was available.
func (q *Queue) bucketDelayLocked() time.Duration {
	now := q.clock.Now()
	q.tokens = math.Min(bucketBurst, q.tokens+now.Sub(q.lastFill).Seconds()*bucketQPS)
	q.lastFill = now
	q.tokens--
	if q.tokens >= 0 {
		return 0
	}
	return time.Duration(-q.tokens / bucketQPS * float64(time.Second))
}

// Forget clears key's failure count (call after a success).
func (q *Queue) Forget(key string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	delete(q.failures, key)
}

// NumRequeues returns how many times key has failed since its last Forget.
func (q *Queue) NumRequeues(key string) int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.failures[key]
}

// AddAfter queues key once d has passed (at once if d ≤ 0).
func (q *Queue) AddAfter(key string, d time.Duration) {
	if d <= 0 {
		q.Add(key)
		return
	}
	q.mu.Lock()
	heap.Push(&q.waiting, waitItem{key: key, at: q.clock.Now().Add(d)})
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// delayLoop moves delayed keys into the queue when they come due.
func (q *Queue) delayLoop() {
	for {
		q.mu.Lock()
		if q.shutdown {
			q.mu.Unlock()
			return
		}
		now := q.clock.Now()
		for q.waiting.Len() > 0 && !q.waiting[0].at.After(now) {
			it := heap.Pop(&q.waiting).(waitItem)
			q.addLocked(it.key)
		}
		var timer <-chan time.Time
		if q.waiting.Len() > 0 {
			timer = q.clock.After(q.waiting[0].at.Sub(now))
		}
		q.mu.Unlock()
		select {
		case <-q.wake:
		case <-timer:
		}
	}
}

type waitItem struct {
	key string
	at  time.Time
}

type waitHeap []waitItem

func (h waitHeap) Len() int           { return len(h) }
func (h waitHeap) Less(i, j int) bool { return h[i].at.Before(h[j].at) }
func (h waitHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *waitHeap) Push(x any)        { *h = append(*h, x.(waitItem)) }
func (h *waitHeap) Pop() any {
	old := *h
	it := old[len(old)-1]
	*h = old[:len(old)-1]
	return it
}
