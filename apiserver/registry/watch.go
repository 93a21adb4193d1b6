package registry

import (
	"context"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/kobune/kobune/api/scheme"
	"github.com/kobune/kobune/apiserver/apierrors"
	"github.com/kobune/kobune/apiserver/request"
	"github.com/kobune/kobune/apiserver/storage"
	"github.com/kobune/kobune/proto/apipb"
)

// Watch event types, as in Kubernetes.
const (
	Added    = "ADDED"
	Modified = "MODIFIED"
	Deleted  = "DELETED"
	Bookmark = "BOOKMARK"
)

// Watch implements the Watch RPC. From resourceVersion 0 it first sends an
// ADDED event for every existing object (Kubernetes' "most recent" start).
// Changes are filtered with the selectors: an object that stops matching is
// sent as DELETED, one that starts matching as ADDED.
func (s *Registry) Watch(ctx context.Context, req *apipb.WatchRequest, stream Sender[apipb.WatchEvent]) error {
	k, ok := s.cfg.Kinds.ByResource(req.Resource)
	if !ok {
		return apierrors.Invalid("unknown resource %q (see kobectl api-resources)", req.Resource)
	}
	f, err := newFilter(k, req.LabelSelector, req.FieldSelector)
	if err != nil {
		return err
	}
	ns := req.Namespace
	if !k.Namespaced {
		ns = ""
	}
	prefix := storage.ListPrefix(k.Resource, ns)
	from := req.ResourceVersion
	if from < 0 {
		return apierrors.Invalid("resourceVersion: must be 0 or a revision from a List or an event")
	}
	if from > 0 {
		cur, err := s.store.Revision(ctx)
		if err != nil {
			return apierrors.FromStorage(err, k, "")
		}
		if from > cur {
			// Kubernetes answers the same (after waiting briefly for its
			// cache): a revision nobody was given cannot be watched from.
			return status.Errorf(codes.OutOfRange, "Too large resource version: %d, current: %d: list again to get a current resourceVersion", from, cur)
		}
	}
	// The watch is accepted: headers go out now, so that a client waiting
	// for the response (REST's watch) is not held until the first change.
	if err := stream.SendHeader(metadata.MD{}); err != nil {
		return err
	}
	if from == 0 {
		if from, err = sendInitial(ctx, s.store, k, f, prefix, stream); err != nil {
			return err
		}
		if req.SendInitialEvents && req.AllowBookmarks {
			end := bookmarkAnnotated(k, from, `{"k8s.io/initial-events-end":"true"}`)
			if err := stream.Send(&apipb.WatchEvent{Type: Bookmark, Object: end, ResourceVersion: from}); err != nil {
				return err
			}
		}
	}
	request.Initialized(ctx)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w := s.store.Watch(ctx, prefix, from)
	var tick <-chan time.Time
	if req.AllowBookmarks {
		t := time.NewTicker(s.cfg.BookmarkInterval)
		defer t.Stop()
		tick = t.C
	}
	// Bookmarks: each tick asks etcd for a progress notification, which
	// becomes a bookmark at the revision etcd has sent everything up to.
	// etcd sends none while its revision is below the one the watch
	// started after (a quiet cluster); that tick's bookmark is then the
	// newest revision this watch has seen, so that a bookmark comes every
	// BookmarkInterval, as docs/api.md says.
	last, progressed := from, false
	for {
		select {
		case ev, ok := <-w.Events:
			if !ok {
				if err := w.Err(); err != nil && ctx.Err() == nil {
					return apierrors.FromStorage(err, k, "")
				}
				return nil
			}
			if err := sendEvent(ctx, k, f, ev, req.AllowBookmarks, req.PreviousObjects, stream); err != nil {
				return err
			}
			last = max(last, ev.Revision)
			progressed = progressed || ev.Type == storage.Progress
		case <-tick:
			if !progressed && last > 0 {
				if err := stream.Send(&apipb.WatchEvent{Type: Bookmark, Object: bookmark(k, last), ResourceVersion: last}); err != nil {
					return err
				}
			}
			progressed = false
			if err := w.RequestProgress(ctx); err != nil && ctx.Err() == nil {
				s.cfg.Logf("watch %s: request progress: %v", k.Resource, err)
			}
		case <-ctx.Done():
			return nil
		}
	}
}

func sendInitial(ctx context.Context, store *storage.Store, k *scheme.Kind, f *filter, prefix string, stream Sender[apipb.WatchEvent]) (int64, error) {
	kvs, rev, err := store.List(ctx, prefix)
	if err != nil {
		return 0, apierrors.FromStorage(err, k, "")
	}
	for _, kv := range kvs {
		if ok, err := f.matchesStored(kv.Value); err != nil || !ok {
			continue
		}
		b, err := answered(ctx, k, kv.Value, kv.Revision)
		if err != nil {
			return 0, err
		}
		if err := stream.Send(&apipb.WatchEvent{Type: Added, Object: b, ResourceVersion: kv.Revision}); err != nil {
			return 0, err
		}
	}
	return rev, nil
}

func sendEvent(ctx context.Context, k *scheme.Kind, f *filter, ev storage.Event, bookmarks, previous bool, stream Sender[apipb.WatchEvent]) error {
	if ev.Type == storage.Progress {
		if !bookmarks {
			return nil
		}
		return stream.Send(&apipb.WatchEvent{Type: Bookmark, Object: bookmark(k, ev.Revision), ResourceVersion: ev.Revision})
	}
	curMatch, err := ev.Value != nil, error(nil)
	if curMatch {
		if curMatch, err = f.matchesStored(ev.Value); err != nil {
			return status.Errorf(codes.Internal, "decode %s: %v", ev.Key, err)
		}
	}
	prevMatch := ev.Prev != nil
	if prevMatch {
		if prevMatch, err = f.matchesStored(ev.Prev); err != nil {
			return status.Errorf(codes.Internal, "decode %s: %v", ev.Key, err)
		}
	}
	var typ string
	var obj []byte
	switch {
	case ev.Type == storage.Deleted && prevMatch:
		typ, obj = Deleted, ev.Prev // the last state, at the deletion's revision
	case ev.Type == storage.Put && curMatch && prevMatch:
		typ, obj = Modified, ev.Value
	case ev.Type == storage.Put && curMatch:
		typ, obj = Added, ev.Value
	case ev.Type == storage.Put && prevMatch:
		typ, obj = Deleted, ev.Value // it no longer matches the selector
	default:
		return nil
	}
	b, err := answered(ctx, k, obj, ev.Revision)
	if err != nil {
		return err
	}
	out := &apipb.WatchEvent{Type: typ, Object: b, ResourceVersion: ev.Revision}
	if previous && typ == Modified && ev.Prev != nil {
		if out.PrevObject, err = answered(ctx, k, ev.Prev, ev.Revision); err != nil {
			return err
		}
	}
	return stream.Send(out)
}
