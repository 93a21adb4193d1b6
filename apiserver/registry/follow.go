package registry

import (
	"context"
	"time"

	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/api/scheme"
	"github.com/kobune/kobune/apiserver/storage"
)

// Follow lists a resource and then watches it until ctx ends, relisting
// after a broken watch: reset gets the listed objects, event each change
// (a deleted object is nil). want, when set, picks the stored values worth
// decoding. The authorizer's caches and the namespace cache are kept this
// way.
func Follow(ctx context.Context, st *storage.Store, resource string, want func([]byte) bool, reset func([]meta.Object), event func(ev storage.Event, o meta.Object)) {
	k, _ := scheme.ByResource(resource)
	prefix := storage.ListPrefix(resource, "")
	for ctx.Err() == nil {
		kvs, rev, err := st.List(ctx, prefix)
		if err != nil {
			sleep(ctx, time.Second)
			continue
		}
		var objs []meta.Object
		for _, kv := range kvs {
			if want != nil && !want(kv.Value) {
				continue
			}
			if o, err := DecodeStored(k, kv.Value, kv.Revision); err == nil {
				objs = append(objs, o)
			}
		}
		reset(objs)
		w := st.Watch(ctx, prefix, rev)
		for ev := range w.Events {
			switch ev.Type {
			case storage.Put:
				if want != nil && !want(ev.Value) {
					continue
				}
				if o, err := DecodeStored(k, ev.Value, ev.Revision); err == nil {
					event(ev, o)
				}
			case storage.Deleted:
				event(ev, nil)
			}
		}
	}
}
