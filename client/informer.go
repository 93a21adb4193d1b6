package client

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
)

// Handler receives an informer's notifications. Handlers should only
// enqueue keys; they run on the informer's goroutine.
type Handler[T meta.Object] struct {
	OnAdd    func(obj T)
	OnUpdate func(oldObj, newObj T)
	OnDelete func(obj T)
}

// IndexFunc returns the index values of an object.
type IndexFunc[T meta.Object] func(obj T) []string

// Index names built into every informer.
const (
	IndexNamespace = "namespace"
)

// IndexNodeName indexes pods by spec.nodeName; add it with
// AddIndex(IndexByNodeName, client.IndexNodeName).
const IndexByNodeName = "spec.nodeName"

// IndexNodeName is the index function for IndexByNodeName.
func IndexNodeName(p *core.Pod) []string { return []string{p.Spec.NodeName} }

// Informer keeps a local cache of one kind: it lists, then watches from the
// list's revision, applies each event to the cache and tells its handlers.
// When the watch's revision has been compacted ("expired") it lists again
// and tells handlers what changed in between. This is client-go's
// SharedIndexInformer, in one file.
//
// Objects from the cache are shared: copy before changing them.
type Informer[T meta.Object] struct {
	typed     *Typed[T]
	namespace string
	opts      ListOptions
	// ResyncPeriod, when set, replays OnUpdate(obj, obj) for every cached
	// object periodically, so level-based controllers look again.
	ResyncPeriod time.Duration

	mu       sync.RWMutex
	items    map[string]T
	indexers map[string]IndexFunc[T]
	indices  map[string]map[string]map[string]struct{} // index → value → keys
	handlers []Handler[T]
	rv       int64

	synced  atomic.Bool
	relists atomic.Int64
}

// NewInformer returns an informer over one namespace ("" for all) and selectors.
func NewInformer[T meta.Object](typed *Typed[T], namespace string, opts ListOptions) *Informer[T] {
	inf := &Informer[T]{
		typed: typed, namespace: namespace, opts: opts,
		items:    map[string]T{},
		indexers: map[string]IndexFunc[T]{},
		indices:  map[string]map[string]map[string]struct{}{},
	}
	inf.AddIndex(IndexNamespace, func(o T) []string { return []string{o.GetObjectMeta().Namespace} })
	return inf
}

// Seed puts objects into the cache as if a list had returned them, without
// calling handlers, and marks the informer synced. Controller unit tests
// use it for the pre-filled cache their reconcile reads.
func (inf *Informer[T]) Seed(objs ...T) {
	inf.mu.Lock()
	for _, o := range objs {
		key := meta.Key(o)
		if old, had := inf.items[key]; had {
			inf.unindex(key, old)
		}
		inf.items[key] = o
		inf.index(key, o)
	}
	inf.mu.Unlock()
	inf.synced.Store(true)
}

// AddIndex adds an index; call before Run.
func (inf *Informer[T]) AddIndex(name string, fn IndexFunc[T]) {
	inf.mu.Lock()
	defer inf.mu.Unlock()
	inf.indexers[name] = fn
	inf.indices[name] = map[string]map[string]struct{}{}
}

// AddHandler registers a handler; call before Run.
func (inf *Informer[T]) AddHandler(h Handler[T]) {
	inf.mu.Lock()
	defer inf.mu.Unlock()
	inf.handlers = append(inf.handlers, h)
}

// HasSynced reports whether the first list has been applied.
func (inf *Informer[T]) HasSynced() bool { return inf.synced.Load() }

// Relists counts the lists after the first (each after an expired watch).
func (inf *Informer[T]) Relists() int64 { return inf.relists.Load() }

// LastResourceVersion is the revision the cache has reached.
func (inf *Informer[T]) LastResourceVersion() int64 {
	inf.mu.RLock()
	defer inf.mu.RUnlock()
	return inf.rv
}

// Get returns a cached object by namespace and name.
func (inf *Informer[T]) Get(namespace, name string) (T, bool) {
	key := name
	if namespace != "" {
		key = namespace + "/" + name
	}
	return inf.GetByKey(key)
}

// GetByKey returns a cached object by its "namespace/name" key.
func (inf *Informer[T]) GetByKey(key string) (T, bool) {
	inf.mu.RLock()
	defer inf.mu.RUnlock()
	o, ok := inf.items[key]
	return o, ok
}

// List returns every cached object.
func (inf *Informer[T]) List() []T {
	inf.mu.RLock()
	defer inf.mu.RUnlock()
	out := make([]T, 0, len(inf.items))
	for _, o := range inf.items {
		out = append(out, o)
	}
	return out
}

// ByIndex returns the cached objects whose index has value.
func (inf *Informer[T]) ByIndex(index, value string) []T {
	inf.mu.RLock()
	defer inf.mu.RUnlock()
	keys := inf.indices[index][value]
	out := make([]T, 0, len(keys))
	for k := range keys {
		out = append(out, inf.items[k])
	}
	return out
}

// Run lists and watches until ctx ends.
func (inf *Informer[T]) Run(ctx context.Context) {
	// At most 2 s between tries: a restarted API server is seen again at once.
	backoff := newBackoff(100*time.Millisecond, 2*time.Second)
	needList := true
	var resync <-chan time.Time
	if inf.ResyncPeriod > 0 {
		t := time.NewTicker(inf.ResyncPeriod)
		defer t.Stop()
		resync = t.C
	}
	for ctx.Err() == nil {
		if needList {
			if err := inf.list(ctx); err != nil {
				sleepCtx(ctx, backoff.next())
				continue
			}
			needList = false
		}
		err := inf.watch(ctx, resync)
		switch {
		case ctx.Err() != nil:
			return
		case IsExpired(err):
			needList = true // the history we needed is gone: start over
		default:
			sleepCtx(ctx, backoff.next()) // server restarting: resume from inf.rv
			continue
		}
		backoff.reset()
	}
}

func (inf *Informer[T]) list(ctx context.Context) error {
	items, rv, err := inf.typed.List(ctx, inf.namespace, inf.opts)
	if err != nil {
		return err
	}
	if inf.synced.Load() {
		inf.relists.Add(1)
	}
	fresh := make(map[string]T, len(items))
	for _, o := range items {
		fresh[meta.Key(o)] = o
	}
	inf.mu.RLock()
	var gone []T
	for k, o := range inf.items {
		if _, ok := fresh[k]; !ok {
			gone = append(gone, o)
		}
	}
	inf.mu.RUnlock()
	for _, o := range gone {
		inf.apply("DELETED", o)
	}
	for _, o := range items {
		inf.apply("ADDED", o)
	}
	inf.mu.Lock()
	inf.rv = rv
	inf.mu.Unlock()
	inf.synced.Store(true)
	return nil
}

func (inf *Informer[T]) watch(ctx context.Context, resync <-chan time.Time) error {
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w, err := inf.typed.WatchWithBookmarks(wctx, inf.namespace, inf.opts, inf.LastResourceVersion())
	if err != nil {
		return err
	}
	for {
		select {
		case ev, ok := <-w.Events:
			if !ok {
				return w.Err()
			}
			if ev.Type != "BOOKMARK" {
				inf.apply(ev.Type, ev.Object)
			}
			inf.mu.Lock()
			inf.rv = ev.ResourceVersion
			inf.mu.Unlock()
		case <-resync:
			for _, o := range inf.List() {
				inf.notify(func(h Handler[T]) {
					if h.OnUpdate != nil {
						h.OnUpdate(o, o)
					}
				})
			}
		}
	}
}

// apply changes the cache and calls the handlers. An ADDED for an object
// already cached (after a relist) is an update if its revision moved.
func (inf *Informer[T]) apply(typ string, o T) {
	key := meta.Key(o)
	inf.mu.Lock()
	old, had := inf.items[key]
	if had {
		inf.unindex(key, old)
	}
	if typ == "DELETED" {
		delete(inf.items, key)
	} else {
		inf.items[key] = o
		inf.index(key, o)
	}
	inf.mu.Unlock()
	switch {
	case typ == "DELETED":
		if had {
			inf.notify(func(h Handler[T]) {
				if h.OnDelete != nil {
					h.OnDelete(o)
				}
			})
		}
	case had:
		if old.GetObjectMeta().ResourceVersion == o.GetObjectMeta().ResourceVersion {
			return
		}
		inf.notify(func(h Handler[T]) {
			if h.OnUpdate != nil {
				h.OnUpdate(old, o)
			}
		})
	default:
		inf.notify(func(h Handler[T]) {
			if h.OnAdd != nil {
				h.OnAdd(o)
			}
		})
	}
}

func (inf *Informer[T]) notify(call func(Handler[T])) {
	inf.mu.RLock()
	hs := inf.handlers
	inf.mu.RUnlock()
	for _, h := range hs {
		call(h)
	}
}

func (inf *Informer[T]) index(key string, o T) {
	for name, fn := range inf.indexers {
		for _, v := range fn(o) {
			set := inf.indices[name][v]
			if set == nil {
				set = map[string]struct{}{}
				inf.indices[name][v] = set
			}
			set[key] = struct{}{}
		}
	}
}

func (inf *Informer[T]) unindex(key string, o T) {
	for name, fn := range inf.indexers {
		for _, v := range fn(o) {
			delete(inf.indices[name][v], key)
			if len(inf.indices[name][v]) == 0 {
				delete(inf.indices[name], v)
			}
		}
	}
}

// WaitForSync blocks until every informer has synced or ctx ends.
func WaitForSync(ctx context.Context, synced ...func() bool) bool {
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for {
		all := true
		for _, s := range synced {
			all = all && s()
		}
		if all {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-t.C:
		}
	}
}

type backoff struct{ base, max, cur time.Duration }

func newBackoff(base, max time.Duration) *backoff { return &backoff{base: base, max: max} }

func (b *backoff) next() time.Duration {
	if b.cur == 0 {
		b.cur = b.base
	} else if b.cur *= 2; b.cur > b.max {
		b.cur = b.max
	}
	return b.cur
}

func (b *backoff) reset() { b.cur = 0 }

func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
