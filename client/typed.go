package client

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"time"

	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/api/scheme"
	"github.com/kobune/kobune/proto/apipb"
)

// Typed is the client for one kind, such as For[*core.Pod](c).
type Typed[T meta.Object] struct {
	c    *Client
	Kind *scheme.Kind
}

// For returns the typed client for T, a pointer to a registered kind.
func For[T meta.Object](c *Client) *Typed[T] {
	var zero T
	o := reflect.New(reflect.TypeOf(zero).Elem()).Interface().(meta.Object)
	k, err := scheme.KindOf(o)
	if err != nil {
		panic(err) // a programming error: T is not an API kind
	}
	return &Typed[T]{c: c, Kind: k}
}

// ForKind returns the client for kind k with objects of type T: a custom
// kind (found with Discover) as *meta.Unstructured.
func ForKind[T meta.Object](c *Client, k *scheme.Kind) *Typed[T] { return &Typed[T]{c: c, Kind: k} }

// ListOptions narrow a List or Watch.
type ListOptions struct {
	LabelSelector string // "app=web,tier!=db"
	FieldSelector string // "spec.nodeName=node-1"
}

// DeleteOptions are Kubernetes' delete options.
type DeleteOptions struct {
	GracePeriodSeconds *int64
	PropagationPolicy  string // Background (default), Foreground, Orphan
	UID                string // precondition
	ResourceVersion    string // precondition
	DryRun             bool   // checked and answered, nothing deleted
}

func (t *Typed[T]) decode(b []byte) (T, error) {
	var zero T
	o, err := t.Kind.Decode(b)
	if err != nil {
		return zero, fmt.Errorf("decode %s: %w", t.Kind.Kind, err)
	}
	return o.(T), nil
}

func (t *Typed[T]) encode(o T) ([]byte, error) {
	*o.GetTypeMeta() = meta.TypeMeta{APIVersion: t.Kind.APIVersion, Kind: t.Kind.Kind}
	return json.Marshal(o)
}

// raw is the untyped client the typed one speaks through.
func (t *Typed[T]) raw() *Resource { return t.c.Resource(t.Kind) }

// Create stores a new object and returns it as stored.
func (t *Typed[T]) Create(ctx context.Context, o T) (T, error) {
	return t.write(ctx, o, t.raw().Create)
}

// Get reads one object (namespace "" for cluster-scoped kinds).
func (t *Typed[T]) Get(ctx context.Context, namespace, name string) (T, error) {
	var zero T
	b, err := t.raw().Get(ctx, namespace, name)
	if err != nil {
		return zero, err
	}
	return t.decode(b)
}

// List reads the matching objects (namespace "" for all) and the revision
// to watch from.
func (t *Typed[T]) List(ctx context.Context, namespace string, opts ListOptions) ([]T, int64, error) {
	items, rv, err := t.raw().List(ctx, namespace, opts)
	if err != nil {
		return nil, 0, err
	}
	out := make([]T, 0, len(items))
	for _, b := range items {
		o, err := t.decode(b)
		if err != nil {
			return nil, 0, err
		}
		out = append(out, o)
	}
	return out, rv, nil
}

// Update writes spec and metadata; the object's resourceVersion is the
// revision expected (a conflict error if it moved; IsConflict tells).
func (t *Typed[T]) Update(ctx context.Context, o T) (T, error) {
	return t.write(ctx, o, t.raw().Update)
}

// UpdateStatus writes the status subresource.
func (t *Typed[T]) UpdateStatus(ctx context.Context, o T) (T, error) {
	return t.write(ctx, o, t.raw().UpdateStatus)
}

// Modify reads an object, lets change edit it and writes it back, again
// from a fresh read when another writer moved it in between (a
// controller writing status, say): client-go's retry.RetryOnConflict
// around a get and an update. It gives up after modifyAttempts
// conflicts, returning the last; an error from change writes nothing.
func (t *Typed[T]) Modify(ctx context.Context, namespace, name string, change func(T) error) (T, error) {
	var zero T
	for attempt := 1; ; attempt++ {
		o, err := t.Get(ctx, namespace, name)
		if err != nil {
			return zero, err
		}
		if err := change(o); err != nil {
			return zero, err
		}
		written, err := t.Update(ctx, o)
		if err == nil || !IsConflict(err) || attempt == modifyAttempts {
			return written, err
		}
		select {
		case <-ctx.Done():
			return zero, ctx.Err()
		case <-time.After(time.Duration(attempt) * 10 * time.Millisecond):
		}
	}
}

// modifyAttempts bounds Modify: ten writers racing for one object settle
// well within it, and a client never spins on an object that keeps moving.
const modifyAttempts = 10

func (t *Typed[T]) write(ctx context.Context, o T, call func(context.Context, string, []byte, WriteOptions) (Written, error)) (T, error) {
	var zero T
	b, err := t.encode(o)
	if err != nil {
		return zero, err
	}
	w, err := call(ctx, o.GetObjectMeta().Namespace, b, WriteOptions{})
	if err != nil {
		return zero, err
	}
	return t.decode(w.Object)
}

// Delete deletes (or starts the graceful deletion of) an object.
func (t *Typed[T]) Delete(ctx context.Context, namespace, name string, opts DeleteOptions) error {
	return t.raw().Delete(ctx, namespace, name, opts)
}

// Event is one watch event.
type Event[T meta.Object] struct {
	Type            string // ADDED, MODIFIED, DELETED, BOOKMARK
	Object          T      // for BOOKMARK only its resourceVersion is set
	ResourceVersion int64
}

// Watcher streams events until its context ends or the stream fails.
type Watcher[T meta.Object] struct {
	Events <-chan Event[T]
	err    error
}

// Err is valid once Events is closed: nil after the context ended, an
// IsExpired error when the revision was compacted, or the stream's error.
func (w *Watcher[T]) Err() error { return w.err }

// Watch streams changes after revision rv (0: the current objects as
// ADDED, then changes): ADDED, MODIFIED and DELETED events only.
func (t *Typed[T]) Watch(ctx context.Context, namespace string, opts ListOptions, rv int64) (*Watcher[T], error) {
	return t.watch(ctx, namespace, opts, rv, false)
}

// WatchWithBookmarks is Watch with BOOKMARK events too (every
// BookmarkInterval, only their ResourceVersion set): what an informer
// resumes from, as client-go's reflector asks allowWatchBookmarks.
func (t *Typed[T]) WatchWithBookmarks(ctx context.Context, namespace string, opts ListOptions, rv int64) (*Watcher[T], error) {
	return t.watch(ctx, namespace, opts, rv, true)
}

func (t *Typed[T]) watch(ctx context.Context, namespace string, opts ListOptions, rv int64, bookmarks bool) (*Watcher[T], error) {
	stream, err := t.raw().Watch(ctx, namespace, opts, rv, bookmarks)
	if err != nil {
		return nil, err
	}
	events := make(chan Event[T], 64)
	w := &Watcher[T]{Events: events}
	go func() {
		defer close(events)
		for {
			ev, err := stream.Next()
			if err != nil {
				if ctx.Err() == nil {
					w.err = err
				}
				return
			}
			o, err := t.decode(ev.Object)
			if err != nil {
				w.err = err
				return
			}
			select {
			case events <- Event[T]{Type: ev.Type, Object: o, ResourceVersion: ev.ResourceVersion}:
			case <-ctx.Done():
				return
			}
		}
	}()
	return w, nil
}

// ResourceVersion parses an object's resourceVersion (0 if unset).
func ResourceVersion(o meta.Object) int64 {
	rv, _ := strconv.ParseInt(o.GetObjectMeta().ResourceVersion, 10, 64)
	return rv
}

// Bind assigns a pod to a node (the scheduler's write), if the pod still
// has uid (when not empty); annotations, if any, are set on the pod in the
// same write.
func (c *Client) Bind(ctx context.Context, namespace, name, uid, node string, annotations ...map[string]string) error {
	req := &apipb.BindRequest{Namespace: namespace, Name: name, Uid: uid, NodeName: node}
	for _, a := range annotations {
		for k, v := range a {
			if req.Annotations == nil {
				req.Annotations = map[string]string{}
			}
			req.Annotations[k] = v
		}
	}
	_, err := c.API.Bind(ctx, req)
	return err
}
