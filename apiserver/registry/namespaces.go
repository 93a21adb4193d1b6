package registry

import (
	"context"
	"errors"
	"path"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/api/scheme"
	"github.com/kobune/kobune/apiserver/apierrors"
	"github.com/kobune/kobune/apiserver/storage"
)

// NamespaceCache answers "does namespace X exist, and is it terminating?"
// from memory, kept current by a watch; a miss falls back to etcd, so a
// namespace created a moment ago is never refused.
type NamespaceCache struct {
	store  *storage.Store
	mu     sync.RWMutex
	phases map[string]string
	// labels are the namespaces' labels (Pod Security admission reads
	// them).
	labels map[string]map[string]string
	synced bool
}

func NewNamespaceCache(st *storage.Store) *NamespaceCache {
	return &NamespaceCache{store: st, phases: map[string]string{}, labels: map[string]map[string]string{}}
}

// NamespaceLabels implements admission.NamespaceLabeler.
func (c *NamespaceCache) NamespaceLabels(ctx context.Context, name string) (map[string]string, bool, error) {
	c.mu.RLock()
	labels, ok := c.labels[name]
	c.mu.RUnlock()
	if ok {
		return labels, true, nil
	}
	kv, err := c.store.Get(ctx, storage.Key("namespaces", "", name))
	if errors.Is(err, storage.ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	ns, err := decodeNamespace(kv.Value)
	if err != nil {
		return nil, false, err
	}
	return ns.Labels, true, nil
}

// NamespacePhase implements admission.NamespaceGetter.
func (c *NamespaceCache) NamespacePhase(ctx context.Context, name string) (string, bool, error) {
	c.mu.RLock()
	phase, ok := c.phases[name]
	c.mu.RUnlock()
	if ok {
		return phase, true, nil
	}
	kv, err := c.store.Get(ctx, storage.Key("namespaces", "", name))
	if errors.Is(err, storage.ErrNotFound) {
		return "", false, nil
	}
	if err != nil {
		return "", false, err
	}
	ns, err := decodeNamespace(kv.Value)
	if err != nil {
		return "", false, err
	}
	return ns.Status.Phase, true, nil
}

func decodeNamespace(b []byte) (*core.Namespace, error) {
	k, _ := scheme.ByResource("namespaces")
	o, err := k.Decode(b)
	if err != nil {
		return nil, err
	}
	return o.(*core.Namespace), nil
}

// markTerminating records at once a namespace this server has just marked
// for deletion, without waiting for the watch: a create right after the
// delete must already be refused (Kubernetes' NamespaceLifecycle keeps a
// similar "recently deleted" lookup for the same reason). Anything that
// still slips in meanwhile is deleted by the cleanup loop.
func (c *NamespaceCache) markTerminating(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.phases[name] = core.NamespaceTerminating
}

// run lists and watches namespaces until ctx ends, relisting after errors.
func (c *NamespaceCache) run(ctx context.Context) {
	Follow(ctx, c.store, "namespaces", nil, func(objs []meta.Object) {
		fresh, labels := map[string]string{}, map[string]map[string]string{}
		for _, o := range objs {
			ns := o.(*core.Namespace)
			fresh[ns.Name], labels[ns.Name] = ns.Status.Phase, ns.Labels
		}
		c.mu.Lock()
		c.phases, c.labels, c.synced = fresh, labels, true
		c.mu.Unlock()
	}, func(ev storage.Event, o meta.Object) {
		name := path.Base(ev.Key)
		c.mu.Lock()
		defer c.mu.Unlock()
		if o == nil {
			delete(c.phases, name)
			delete(c.labels, name)
			return
		}
		ns := o.(*core.Namespace)
		c.phases[name], c.labels[name] = ns.Status.Phase, ns.Labels
	})
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// namespaceCleanup empties terminating namespaces and then removes them.
// Kubernetes runs this in kube-controller-manager's namespace controller;
// Kobune runs it inside the API server so that deleting a namespace works
// with nothing else running (see docs/differences.md).
type namespaceCleanup struct {
	r *Registry
	// wake starts a round now (a namespace was just marked).
	wake chan struct{}
}

// run cleans up every 2 s, and when woken, until ctx ends.
func (c *namespaceCleanup) run(ctx context.Context) {
	t := time.NewTicker(2 * time.Second)
	defer t.Stop()
	for {
		c.cleanup(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-c.wake:
		}
	}
}

func (c *namespaceCleanup) poke() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// cleanup deletes what is left in each terminating namespace, and the
// namespace once nothing is.
func (c *namespaceCleanup) cleanup(ctx context.Context) {
	s := c.r
	kvs, _, err := s.store.List(ctx, storage.ListPrefix("namespaces", ""))
	if err != nil {
		return
	}
	for _, kv := range kvs {
		ns, err := decodeNamespace(kv.Value)
		if err != nil || ns.DeletionTimestamp == nil {
			continue
		}
		remaining := 0
		for _, k := range scheme.All() {
			if !k.Namespaced {
				continue
			}
			items, _, err := s.store.List(ctx, storage.ListPrefix(k.Resource, ns.Name))
			if err != nil {
				remaining++
				continue
			}
			remaining += len(items)
			for _, it := range items {
				o, err := DecodeStored(k, it.Value, it.Revision)
				if err != nil || o.GetObjectMeta().DeletionTimestamp != nil {
					continue
				}
				if _, err := s.delete(ctx, k, o.GetObjectMeta().Namespace, o.GetObjectMeta().Name, deleteOptions{propagation: "Background"}); err != nil && status.Code(err) != codes.NotFound {
					s.cfg.Logf("namespace %s cleanup: delete %s %s: %v", ns.Name, k.Resource, o.GetObjectMeta().Name, err)
				}
			}
		}
		if remaining == 0 {
			if _, err := s.store.Delete(ctx, kv.Key, kv.Revision); err == nil {
				s.cfg.Logf("namespace %s deleted", ns.Name)
			}
		}
	}
}

// markTerminating is the namespace's part of Delete: it gets a
// deletionTimestamp and phase Terminating, and the cleanup loop does the rest.
func (c *namespaceCleanup) markTerminating(ctx context.Context, k *scheme.Kind, o meta.Object, rev int64) (meta.Object, int64, error) {
	s := c.r
	ns := o.(*core.Namespace)
	for _, sys := range SystemNamespaces {
		if ns.Name == sys {
			return nil, 0, status.Errorf(codes.FailedPrecondition, "namespace %s may not be deleted", ns.Name)
		}
	}
	if ns.DeletionTimestamp == nil {
		now := meta.Now()
		ns.DeletionTimestamp = &now
		ns.Status.Phase = core.NamespaceTerminating
		b, err := encodeForStorage(ns)
		if err != nil {
			return nil, 0, err
		}
		rev, err = s.store.Update(ctx, objectKey(k, ns), b, rev)
		if err != nil {
			return nil, 0, apierrors.FromStorage(err, k, ns.Name)
		}
		s.namespaces.markTerminating(ns.Name)
	}
	c.poke()
	return ns, rev, nil
}
