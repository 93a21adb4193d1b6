package client

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/api/scheme"
)

// Recorder writes Events about objects, as client-go's EventRecorder does:
// `kobectl describe` shows them under the object. Like client-go's
// EventCorrelator it aggregates: an event that repeats (same object, type,
// reason, message and source) updates the earlier one's count and
// lastTimestamp instead of making a new object; and when more than 10
// events with the same object, type and reason but different messages come
// within 10 minutes, the rest become one event "(combined from similar
// events): <latest message>" that counts them.
type Recorder struct {
	Client    *Client
	Component string // e.g. "default-scheduler"
	Host      string // the node, for the agent's events (source.host)
	// Now is the clock (time.Now when nil); tests set it.
	Now func() time.Time

	mu      sync.Mutex
	seen    map[string]*seenEvent // by correlation key; bounded (maxSeen)
	similar map[string]*similarEvents
}

// Kubernetes' correlator defaults.
const (
	combinedPrefix   = "(combined from similar events): "
	maxSeen          = 4096
	similarThreshold = 10
	similarWindow    = 10 * time.Minute
)

type seenEvent struct {
	event *core.Event // the stored event, as last written
	used  time.Time
}

type similarEvents struct {
	first    time.Time
	messages map[string]bool // the different messages seen (at most similarThreshold)
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
	ns := m.Namespace
	if ns == "" {
		ns = "default"
	}
	ref := core.ObjectReference{Kind: kind, APIVersion: apiVersion, Namespace: m.Namespace, Name: m.Name, UID: m.UID}
	now := r.now()
	objKey := strings.Join([]string{r.Component, r.Host, kind, m.Namespace, m.Name, m.UID, typ, reason}, "\x00")
	message, combined := r.aggregate(objKey, message, now)
	key := objKey + "\x00" + message
	if combined {
		key = objKey + "\x00" + combinedPrefix // one combined event per object and reason
	}
	if prev := r.lookup(key); prev != nil {
		ev := *prev
		ev.Count++
		ev.Message = message // the combined event shows the latest
		ev.LastTimestamp = meta.Time{Time: now}
		updated, err := For[*core.Event](r.Client).Update(ctx, &ev)
		if err == nil {
			r.remember(key, updated, now)
			return nil
		}
		if !IsNotFound(err) && !IsConflict(err) {
			return err
		}
		// Gone (events expire) or changed by someone else: start a new one.
	}
	t := meta.Time{Time: now}
	ev := &core.Event{
		ObjectMeta:     meta.ObjectMeta{Namespace: ns},
		InvolvedObject: ref, Reason: reason, Message: message, Type: typ, Count: 1,
		Source:         core.EventSource{Component: r.Component, Host: r.Host},
		FirstTimestamp: t, LastTimestamp: t, ReportingController: r.Component, ReportingInstance: r.Host,
	}
	// Named as Kubernetes names events: the object's name and the time in
	// nanoseconds, in hex. Listed by name (etcd's key order), an object's
	// events come out in the order they happened, also within one second
	// (the timestamps' resolution). Two components writing in the same
	// nanosecond: the second takes the next one.
	var created *core.Event
	var err error
	for n := int64(0); n < 3; n++ {
		ev.Name = fmt.Sprintf("%s.%x", m.Name, now.UnixNano()+n)
		if created, err = For[*core.Event](r.Client).Create(ctx, ev); !IsAlreadyExists(err) {
			break
		}
	}
	if err != nil {
		return err
	}
	r.remember(key, created, now)
	return nil
}

func (r *Recorder) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

// aggregate returns the message to record: message itself, or the combined
// form once more than similarThreshold different messages came for the
// same object and reason within similarWindow (Kubernetes' EventAggregator).
func (r *Recorder) aggregate(objKey, message string, now time.Time) (string, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.similar == nil {
		r.similar = map[string]*similarEvents{}
	}
	s := r.similar[objKey]
	if s == nil || now.Sub(s.first) > similarWindow {
		if len(r.similar) >= maxSeen {
			clear(r.similar)
		}
		s = &similarEvents{first: now, messages: map[string]bool{}}
		r.similar[objKey] = s
	}
	if s.messages[message] {
		return message, false // a repeat: counted on its own event
	}
	if len(s.messages) >= similarThreshold {
		return combinedPrefix + message, true
	}
	s.messages[message] = true
	return message, false
}

func (r *Recorder) lookup(key string) *core.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	if e := r.seen[key]; e != nil {
		return e.event
	}
	return nil
}

// remember keeps the stored event for key, evicting the least recently
// used one when the cache is full (memory stays bounded).
func (r *Recorder) remember(key string, ev *core.Event, now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.seen == nil {
		r.seen = map[string]*seenEvent{}
	}
	if _, ok := r.seen[key]; !ok && len(r.seen) >= maxSeen {
		var oldest string
		var at time.Time
		for k, e := range r.seen {
			if oldest == "" || e.used.Before(at) {
				oldest, at = k, e.used
			}
		}
		delete(r.seen, oldest)
	}
	r.seen[key] = &seenEvent{event: ev, used: now}
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
