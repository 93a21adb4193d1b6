package client

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"sync"
	"sync/atomic"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/api/scheme"
)

// Recorder writes Events about objects, as client-go's EventRecorder does:
// `kobectl describe` shows them under the object.
type Recorder struct {
	Client    *Client
	Component string // e.g. "default-scheduler"
}

// Event records that reason happened to obj; typ is Normal or Warning.
// Failing to record is not an error for the caller: it returns it only so
// tests can see it.
func (r *Recorder) Event(ctx context.Context, obj meta.Object, typ, reason, message string) error {
	m := obj.GetObjectMeta()
	kind := obj.GetTypeMeta().Kind
	apiVersion := obj.GetTypeMeta().APIVersion
	if k, err := scheme.KindOf(obj); err == nil {
		kind, apiVersion = k.Kind, k.APIVersion
	}
	suffix := make([]byte, 8)
	_, _ = rand.Read(suffix)
	ns := m.Namespace
	if ns == "" {
		ns = "default"
	}
	now := meta.Now()
	ev := &core.Event{
		ObjectMeta:     meta.ObjectMeta{Name: m.Name + "." + hex.EncodeToString(suffix), Namespace: ns},
		InvolvedObject: core.ObjectReference{Kind: kind, APIVersion: apiVersion, Namespace: m.Namespace, Name: m.Name, UID: m.UID},
		Reason:         reason, Message: message, Type: typ, Count: 1,
		Source:         core.EventSource{Component: r.Component},
		FirstTimestamp: now, LastTimestamp: now, ReportingController: r.Component,
	}
	_, err := For[*core.Event](r.Client).Create(ctx, ev)
	return err
}

// AsyncRecorder writes events from a bounded queue in the background, so
// that a busy controller or scheduler never waits on an event write. Like
// client-go's event broadcaster it drops events when the queue is full
// (events are best effort in Kubernetes too) and counts what it dropped.
type AsyncRecorder struct {
	Recorder *Recorder
	queue    chan asyncEvent
	dropped  atomic.Int64
}

type asyncEvent struct {
	obj                  meta.Object
	typ, reason, message string
}

// NewAsyncRecorder returns a recorder with a queue of size events; call Run.
func NewAsyncRecorder(r *Recorder, size int) *AsyncRecorder {
	return &AsyncRecorder{Recorder: r, queue: make(chan asyncEvent, size)}
}

// Event queues an event; obj must not be modified afterwards (informer
// objects never are).
func (a *AsyncRecorder) Event(obj meta.Object, typ, reason, message string) {
	select {
	case a.queue <- asyncEvent{obj, typ, reason, message}:
	default:
		a.dropped.Add(1)
	}
}

// Dropped is how many events were dropped because the queue was full.
func (a *AsyncRecorder) Dropped() int64 { return a.dropped.Load() }

// Run writes queued events with workers goroutines until ctx ends.
func (a *AsyncRecorder) Run(ctx context.Context, workers int) {
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-ctx.Done():
					return
				case e := <-a.queue:
					_ = a.Recorder.Event(ctx, e.obj, e.typ, e.reason, e.message)
				}
			}
		}()
	}
	wg.Wait()
}
