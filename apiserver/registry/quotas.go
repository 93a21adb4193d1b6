package registry

import (
	"context"
	"strconv"
	"sync"
	"time"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/scheme"
	"github.com/kobune/kobune/apiserver/admission"
	"github.com/kobune/kobune/apiserver/storage"
)

// QuotaCache keeps every ResourceQuota from a watch, so that the
// ResourceQuota admission step reads no etcd on a write. A cached view is
// safe because the write's transaction also checks that no quota of the
// namespace was written after the view's revision (storage.Also
// Unchanged) and that each charged quota is still at its version; when
// either fails the write is judged again on a fresh read.
type QuotaCache struct {
	store  *storage.Store
	mu     sync.RWMutex
	synced bool
	rev    int64
	byNS   map[string]map[string]*core.ResourceQuota
}

func NewQuotaCache(st *storage.Store) *QuotaCache {
	return &QuotaCache{store: st, byNS: map[string]map[string]*core.ResourceQuota{}}
}

var quotaKind = func() *scheme.Kind { k, _ := scheme.ByResource("resourcequotas"); return k }()

// Quotas implements admission.QuotaLister.
func (c *QuotaCache) Quotas(ctx context.Context, ns string, fresh bool) ([]*core.ResourceQuota, int64, error) {
	if !fresh {
		c.mu.RLock()
		if c.synced {
			out := make([]*core.ResourceQuota, 0, len(c.byNS[ns]))
			for _, q := range c.byNS[ns] {
				out = append(out, q)
			}
			rev := c.rev
			c.mu.RUnlock()
			return out, rev, nil
		}
		c.mu.RUnlock()
	}
	kvs, rev, err := c.store.List(ctx, storage.ListPrefix("resourcequotas", ns))
	if err != nil {
		return nil, 0, err
	}
	out := make([]*core.ResourceQuota, 0, len(kvs))
	for _, kv := range kvs {
		o, err := DecodeStored(quotaKind, kv.Value, kv.Revision)
		if err != nil {
			return nil, 0, err
		}
		out = append(out, o.(*core.ResourceQuota))
	}
	return out, rev, nil
}

// mayCharge reports whether a write in the namespace may be charged (and
// so judged again): it has quotas, or the cache does not know yet.
func (c *QuotaCache) mayCharge(ns string) bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return !c.synced || len(c.byNS[ns]) > 0
}

// run lists and watches the quotas until ctx ends, relisting after errors.
func (c *QuotaCache) run(ctx context.Context) {
	prefix := storage.ListPrefix("resourcequotas", "")
	for ctx.Err() == nil {
		kvs, rev, err := c.store.List(ctx, prefix)
		if err != nil {
			sleep(ctx, time.Second)
			continue
		}
		byNS := map[string]map[string]*core.ResourceQuota{}
		for _, kv := range kvs {
			if o, err := DecodeStored(quotaKind, kv.Value, kv.Revision); err == nil {
				c.put(byNS, o.(*core.ResourceQuota))
			}
		}
		c.mu.Lock()
		c.byNS, c.rev, c.synced = byNS, rev, true
		c.mu.Unlock()
		w := c.store.Watch(ctx, prefix, rev)
		for ev := range w.Events {
			c.mu.Lock()
			switch ev.Type {
			case storage.Put:
				if o, err := DecodeStored(quotaKind, ev.Value, ev.Revision); err == nil {
					c.put(c.byNS, o.(*core.ResourceQuota))
				}
			case storage.Deleted:
				if o, err := DecodeStored(quotaKind, ev.Prev, ev.Revision); err == nil {
					m := o.GetObjectMeta()
					delete(c.byNS[m.Namespace], m.Name)
				}
			}
			c.rev = max(c.rev, ev.Revision)
			c.mu.Unlock()
		}
		c.mu.Lock()
		c.synced = false
		c.mu.Unlock()
	}
}

func (c *QuotaCache) put(byNS map[string]map[string]*core.ResourceQuota, q *core.ResourceQuota) {
	if byNS[q.Namespace] == nil {
		byNS[q.Namespace] = map[string]*core.ResourceQuota{}
	}
	byNS[q.Namespace][q.Name] = q
}

// alsoWrites turns a write's quota charges into the writes and guard of
// its transaction.
func alsoWrites(c *admission.QuotaCharges) ([]storage.Also, error) {
	if c == nil || c.Revision == 0 {
		return nil, nil
	}
	also := []storage.Also{{Key: storage.ListPrefix("resourcequotas", c.Namespace), Revision: c.Revision, Unchanged: true}}
	for _, q := range c.Quotas {
		rev, err := strconv.ParseInt(q.ResourceVersion, 10, 64)
		if err != nil {
			return nil, err
		}
		b, err := encodeForStorage(q)
		if err != nil {
			return nil, err
		}
		also = append(also, storage.Also{Key: objectKey(quotaKind, q), Value: b, Revision: rev})
	}
	return also, nil
}
