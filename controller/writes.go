package controller

import (
	"strconv"
	"sync"
	"time"

	"github.com/kobune/kobune/api/meta"
)

// Writes is a read-your-writes fence for a controller that decides from
// its informer cache what it wrote itself. It remembers, per owner key,
// the objects the controller created or updated and the resourceVersion
// the API server returned, until the informer shows that version (or a
// later one, or the object's deletion). Until then Pending reports the
// owner's view as stale: a Deployment pass that does not yet see the
// ReplicaSet it just created or scaled would count too few replicas and
// surge past maxSurge. (Kubernetes' Deployment controller has no such
// fence and can briefly exceed maxSurge; Kobune's rollouts never do.)
// Entries expire after WritesTimeout, in case an event was missed.
type Writes struct {
	mu     sync.Mutex
	now    func() time.Time
	cached func(namespace, name string) (meta.Object, bool)
	m      map[string]write // object key → the last write
}

type write struct {
	owner, rv string
	at        time.Time
}

// WritesTimeout is how long an unseen write keeps its owner pending.
const WritesTimeout = 30 * time.Second

// NewWrites returns an empty fence over the informer cache that cached
// reads (CachedIn).
func NewWrites(cached func(namespace, name string) (meta.Object, bool)) *Writes {
	return &Writes{now: time.Now, cached: cached, m: map[string]write{}}
}

// Wrote records that the controller, working for owner, wrote obj (the
// object the API server returned). The watch event may have come first:
// a cache that already shows this version records nothing. (The informer
// updates its cache before it calls the handlers, and both Wrote and
// Observed hold the fence's lock, so no event slips between.) A write
// the cache will never show, because someone deleted the object before
// the informer saw it, keeps the owner pending until WritesTimeout.
func (w *Writes) Wrote(owner string, obj meta.Object) {
	m := obj.GetObjectMeta()
	w.mu.Lock()
	defer w.mu.Unlock()
	if c, ok := w.cached(m.Namespace, m.Name); ok && !olderVersion(c.GetObjectMeta().ResourceVersion, m.ResourceVersion) {
		return
	}
	w.m[meta.Key(obj)] = write{owner: owner, rv: m.ResourceVersion, at: w.now()}
}

// Observed settles the writes the informer has caught up with: call it
// from the informer's handlers before they enqueue anything.
func (w *Writes) Observed(obj meta.Object, deleted bool) {
	key := meta.Key(obj)
	w.mu.Lock()
	defer w.mu.Unlock()
	x, ok := w.m[key]
	if ok && (deleted || !olderVersion(obj.GetObjectMeta().ResourceVersion, x.rv)) {
		delete(w.m, key)
	}
}

// Pending reports whether a write made for owner is not in the cache yet.
func (w *Writes) Pending(owner string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	now := w.now()
	for key, x := range w.m {
		if now.Sub(x.at) > WritesTimeout {
			delete(w.m, key)
			continue
		}
		if x.owner == owner {
			return true
		}
	}
	return false
}

// olderVersion reports whether resourceVersion a is before b. Kobune's
// resource versions are etcd revisions (decimal, increasing), which is
// what lets a controller compare them; clients outside Kobune must treat
// them as opaque, as Kubernetes asks.
func olderVersion(a, b string) bool {
	x, errA := strconv.ParseUint(a, 10, 64)
	y, errB := strconv.ParseUint(b, 10, 64)
	if errA != nil || errB != nil {
		return a != b
	}
	return x < y
}
