package reconcile

import (
	"context"
	"errors"
	"fmt"
	"log"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/client"
)

// Result tells the loop when to look at a key again.
type Result struct {
	// RequeueAfter, when positive, reconciles the key again after this
	// long (a condition that only time changes, such as minReadySeconds).
	RequeueAfter time.Duration
}

// Reconciler is one controller's logic. Reconcile(ctx, key) makes the
// world match the object named by key, recomputing from the informer
// caches rather than trusting any single event (level-based):
//
//   - a nil error and an empty Result: done until something changes;
//   - Result.RequeueAfter: done for now, look again after that long;
//   - an error: retry with per-key exponential back-off;
//   - an error wrapped with Terminal: log it, do not retry;
//   - the object not found: it is gone; clean up and return nil.
type Reconciler interface {
	Reconcile(ctx context.Context, key string) (Result, error)
}

// Func adapts a function to Reconciler.
type Func func(ctx context.Context, key string) (Result, error)

// Reconcile implements Reconciler.
func (f Func) Reconcile(ctx context.Context, key string) (Result, error) { return f(ctx, key) }

// terminalError marks an error that retrying cannot fix.
type terminalError struct{ error }

func (t terminalError) Unwrap() error { return t.error }

// Terminal marks err as not worth retrying.
func Terminal(err error) error { return terminalError{err} }

// Loop runs a Reconciler's workers over its queue.
type Loop struct {
	Name       string
	Queue      *client.Queue
	Reconciler Reconciler
	Workers    int
	Logf       func(format string, args ...any)
	// Object, when set, finds the object a key names (ObjectsOf), and
	// Recorder writes events: a panic in Reconcile is then also a Warning
	// event on the object, beside the log line with its stack.
	Object   func(key string) (meta.Object, bool)
	Recorder *client.AsyncRecorder
	// Observe, when set, is told the result ("success", "requeue_after",
	// "error" or "panic") and duration of every reconcile (the
	// controller manager's metrics).
	Observe func(result string, d time.Duration)
	panics  atomic.Int64
}

// ObjectsOf looks keys up in an informer's cache, for Loop.Object.
func ObjectsOf[T meta.Object](inf *client.Informer[T]) func(key string) (meta.Object, bool) {
	return func(key string) (meta.Object, bool) { return inf.GetByKey(key) }
}

// Panics is how many reconciles panicked.
func (l *Loop) Panics() int64 { return l.panics.Load() }

// reconcile calls the Reconciler, turning a panic into an error, as
// controller-runtime does: one object that trips a bug (a CronJob schedule
// the parser mishandles) must not take the whole process down on every
// restart. The key is retried with back-off like any other error.
func (l *Loop) reconcile(ctx context.Context, key string) (res Result, err error) {
	defer func() {
		v := recover()
		if v == nil {
			return
		}
		l.panics.Add(1)
		l.Logf("%s: %s: reconcile panicked: %v\n%s", l.Name, key, v, debug.Stack())
		err = fmt.Errorf("reconcile panicked: %v", v)
		if l.Object == nil || l.Recorder == nil {
			return
		}
		if obj, ok := l.Object(key); ok {
			l.Recorder.Event(obj, "Warning", "ReconcilePanic", fmt.Sprintf("%s panicked reconciling this object: %v; it retries with back-off. This is a bug in kobune-controller: its log has the stack.", l.Name, v))
		}
	}()
	return l.Reconciler.Reconcile(ctx, key)
}

// NewLoop returns a loop with a fresh queue.
func NewLoop(name string, r Reconciler, workers int) *Loop {
	return &Loop{Name: name, Queue: client.NewQueue(nil), Reconciler: r, Workers: workers, Logf: log.Printf}
}

// Run starts the workers and blocks until ctx ends; then it shuts the
// queue down and waits for the workers.
func (l *Loop) Run(ctx context.Context) {
	var wg sync.WaitGroup
	for range max(l.Workers, 1) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for l.processNext(ctx) {
			}
		}()
	}
	<-ctx.Done()
	l.Queue.ShutDown()
	wg.Wait()
}

// processNext is the worker loop's body: Get, defer Done, then Forget on
// success or AddRateLimited on error.
func (l *Loop) processNext(ctx context.Context) bool {
	key, quit := l.Queue.Get()
	if quit {
		return false
	}
	defer l.Queue.Done(key)
	start, panics := time.Now(), l.panics.Load()
	res, err := l.reconcile(ctx, key)
	result := "success"
	switch {
	case l.panics.Load() != panics:
		result = "panic"
	case err != nil:
		result = "error"
	case res.RequeueAfter > 0:
		result = "requeue_after"
	}
	if l.Observe != nil {
		l.Observe(result, time.Since(start))
	}
	var terminal terminalError
	switch {
	case err != nil && errors.As(err, &terminal):
		l.Logf("%s: %s: %v (not retried)", l.Name, key, err)
		l.Queue.Forget(key)
	case err != nil:
		if ctx.Err() == nil && !client.IsConflict(err) {
			l.Logf("%s: %s: %s (retrying)", l.Name, key, client.Message(err))
		}
		l.Queue.AddRateLimited(key)
	default:
		l.Queue.Forget(key)
		if res.RequeueAfter > 0 {
			l.Queue.AddAfter(key, res.RequeueAfter)
		}
	}
	return true
}
