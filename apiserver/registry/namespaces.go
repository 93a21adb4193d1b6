package registry

import (
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/api/scheme"
	"github.com/kobune/kobune/apiserver/admission"
	"github.com/kobune/kobune/apiserver/apierrors"
	"github.com/kobune/kobune/apiserver/storage"
	"github.com/kobune/kobune/proto/apipb"
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
	// marked holds, per namespace this server marked Terminating, the
	// revision of that write: the watch may still deliver older states of
	// the namespace (its creation, an Active update) after the mark, and
	// those must not undo it.
	marked map[string]int64
	synced bool
}

func NewNamespaceCache(st *storage.Store) *NamespaceCache {
	return &NamespaceCache{store: st, phases: map[string]string{}, labels: map[string]map[string]string{}, marked: map[string]int64{}}
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
// for deletion (written at revision rev), without waiting for the watch: a
// create right after the delete must already be refused (Kubernetes'
// NamespaceLifecycle keeps a similar "recently deleted" lookup for the
// same reason). Anything that still slips in meanwhile is deleted by the
// cleanup loop.
func (c *NamespaceCache) markTerminating(name string, rev int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.phases[name] = core.NamespaceTerminating
	c.marked[name] = max(c.marked[name], rev)
}

// run lists and watches namespaces until ctx ends, relisting after errors.
func (c *NamespaceCache) run(ctx context.Context) {
	Follow(ctx, c.store, "namespaces", nil, c.reset, c.apply)
}

// reset replaces the cache with a fresh list; a namespace marked
// Terminating after the state listed stays Terminating.
func (c *NamespaceCache) reset(objs []meta.Object) {
	fresh, labels := map[string]string{}, map[string]map[string]string{}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, o := range objs {
		ns := o.(*core.Namespace)
		fresh[ns.Name], labels[ns.Name] = ns.Status.Phase, ns.Labels
		if rev, _ := strconv.ParseInt(ns.ResourceVersion, 10, 64); rev < c.marked[ns.Name] {
			fresh[ns.Name] = core.NamespaceTerminating
		}
	}
	c.phases, c.labels, c.synced = fresh, labels, true
}

// apply is one watch event; a state older than this server's own mark of
// the namespace is skipped.
func (c *NamespaceCache) apply(ev storage.Event, o meta.Object) {
	name := path.Base(ev.Key)
	c.mu.Lock()
	defer c.mu.Unlock()
	if o == nil {
		delete(c.phases, name)
		delete(c.labels, name)
		delete(c.marked, name)
		return
	}
	if ev.Revision < c.marked[name] {
		return
	}
	delete(c.marked, name)
	ns := o.(*core.Namespace)
	c.phases[name], c.labels[name] = ns.Status.Phase, ns.Labels
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

// cleanup deletes what is left in each terminating namespace — its pods
// first, the rest once no pod is left (Kubernetes' ordered namespace
// deletion: a pod can still use its ConfigMaps, Secrets and
// ServiceAccount while it stops) — and writes conditions saying what
// holds the deletion up, as Kubernetes' namespace controller does. Once
// nothing is left it takes the spec finalizer "kubernetes" away; the
// namespace goes when no other finalizer holds it.
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
		left := c.deleteContent(ctx, ns)
		conds := left.conditions(ns.Name)
		gone := left.instances() == 0
		if gone {
			ns.Spec.Finalizers = slices.DeleteFunc(slices.Clone(ns.Spec.Finalizers), func(f string) bool { return f == core.FinalizerKubernetes })
			if len(ns.Spec.Finalizers) == 0 && len(ns.Finalizers) == 0 {
				if _, err := s.store.Delete(ctx, kv.Key, kv.Revision); err == nil {
					s.cfg.Logf("namespace %s deleted", ns.Name)
				}
				continue
			}
		}
		changed := setNamespaceConditions(ns, conds)
		if !changed && !gone {
			continue
		}
		b, err := encodeForStorage(ns)
		if err != nil {
			continue
		}
		if _, err := s.store.Update(ctx, kv.Key, b, kv.Revision); err != nil && !errors.Is(err, storage.ErrConflict) {
			s.cfg.Logf("namespace %s cleanup: write its conditions: %v", ns.Name, err)
		}
	}
}

// remaining is what a namespace still holds after a round of deletes.
type remaining struct {
	counts     map[string]int // "pods." → instances (resource.group, as Kubernetes names them)
	finalizers map[string]int // finalizer → instances that carry it
	podsLeft   int            // pods still there: nothing else is deleted yet
}

func (r *remaining) instances() int {
	n := 0
	for _, c := range r.counts {
		n += c
	}
	return n
}

// deleteContent deletes the namespace's pods and, once none is left, the
// rest of what it holds, and says what remains.
func (c *namespaceCleanup) deleteContent(ctx context.Context, ns *core.Namespace) *remaining {
	s := c.r
	left := &remaining{counts: map[string]int{}, finalizers: map[string]int{}}
	pods, _ := scheme.ByResource("pods")
	kinds := []*scheme.Kind{pods}
	for _, k := range s.cfg.Kinds.All() {
		if k.Namespaced && k != pods {
			kinds = append(kinds, k)
		}
	}
	for _, k := range kinds {
		if k != pods && left.podsLeft > 0 {
			break // the pods go first
		}
		n, err := s.deleteAll(ctx, k, ns.Name, left.finalizers)
		if err != nil {
			left.counts[k.PluralName()+"."+k.Group()]++ // not known to be empty
			continue
		}
		if n > 0 {
			// Counted as found: a delete takes it away at once, or marks
			// it (a pod stopping, an object with finalizers), and the next
			// round counts again.
			left.counts[k.PluralName()+"."+k.Group()] += n
		}
		if k == pods {
			left.podsLeft = n
		}
	}
	return left
}

// deleteAll deletes every object of kind k in namespace ns ("": every
// one) that is not being deleted already, as a client's delete would
// (finalizers hold an object back). It returns how many objects there
// were, and counts their finalizers into finalizers when that is set.
func (s *Registry) deleteAll(ctx context.Context, k *scheme.Kind, ns string, finalizers map[string]int) (int, error) {
	items, _, err := s.store.List(ctx, storage.ListPrefix(k.Resource, ns))
	if err != nil {
		return 0, err
	}
	for _, it := range items {
		o, err := DecodeStored(k, it.Value, it.Revision)
		if err != nil {
			continue
		}
		m := o.GetObjectMeta()
		if finalizers != nil {
			for _, f := range m.Finalizers {
				finalizers[f]++
			}
		}
		if m.DeletionTimestamp != nil {
			continue
		}
		if _, err := s.delete(ctx, k, m.Namespace, m.Name, deleteOptions{propagation: "Background"}); err != nil && status.Code(err) != codes.NotFound {
			s.cfg.Logf("delete every %s: delete %s/%s: %v", k.QualifiedResource(), m.Namespace, m.Name, err)
		}
	}
	return len(items), nil
}

// DeleteAll deletes every object of kind k, as deleteAll does, and says
// how many there were (a CustomResourceDefinition goes once none is left).
func (s *Registry) DeleteAll(ctx context.Context, k *scheme.Kind) (int, error) {
	return s.deleteAll(ctx, k, "", nil)
}

// conditions are the namespace's deletion conditions for what is left,
// worded as Kubernetes' namespace controller words them.
func (r *remaining) conditions(ns string) []core.NamespaceCondition {
	cond := func(typ string, bad bool, badReason, badMsg, okReason, okMsg string) core.NamespaceCondition {
		if bad {
			return core.NamespaceCondition{Type: typ, Status: meta.ConditionTrue, Reason: badReason, Message: badMsg}
		}
		return core.NamespaceCondition{Type: typ, Status: meta.ConditionFalse, Reason: okReason, Message: okMsg}
	}
	var counts, finalizers []string
	for res, n := range r.counts {
		counts = append(counts, fmt.Sprintf("%s has %d resource instances", res, n))
	}
	for f, n := range r.finalizers {
		finalizers = append(finalizers, fmt.Sprintf("%s in %d resource instances", f, n))
	}
	slices.Sort(counts)
	slices.Sort(finalizers)
	return []core.NamespaceCondition{
		cond(core.NamespaceDeletionDiscoveryFailure, false, "", "", "ResourcesDiscovered", "All resources successfully discovered"),
		cond(core.NamespaceDeletionGroupVersionParsingFailure, false, "", "", "ParsedGroupVersions", "All legacy kube types successfully parsed"),
		cond(core.NamespaceDeletionContentFailure, r.podsLeft > 0, "ContentDeletionFailed",
			fmt.Sprintf("Failed to delete all resource types, 1 remaining: unexpected items still remain in namespace: %s for gvr: /v1, Resource=pods", ns),
			"ContentDeleted", "All content successfully deleted, may be waiting on finalization"),
		cond(core.NamespaceContentRemaining, len(counts) > 0, "SomeResourcesRemain", "Some resources are remaining: "+strings.Join(counts, ", "),
			"ContentRemoved", "All content successfully removed"),
		cond(core.NamespaceFinalizersRemaining, len(finalizers) > 0, "SomeFinalizersRemain", "Some content in the namespace has finalizers remaining: "+strings.Join(finalizers, ", "),
			"ContentHasNoFinalizers", "All content-preserving finalizers finished"),
	}
}

// setNamespaceConditions puts conds into the namespace's status, keeping
// a condition's lastTransitionTime while its status stays, and says
// whether anything changed.
func setNamespaceConditions(ns *core.Namespace, conds []core.NamespaceCondition) bool {
	changed := len(conds) != len(ns.Status.Conditions)
	now := meta.Now()
	for i := range conds {
		c := &conds[i]
		c.LastTransitionTime = now
		for _, old := range ns.Status.Conditions {
			if old.Type != c.Type {
				continue
			}
			if old.Status == c.Status {
				c.LastTransitionTime = old.LastTransitionTime
			}
			changed = changed || old.Status != c.Status || old.Reason != c.Reason || old.Message != c.Message
		}
	}
	if changed {
		ns.Status.Conditions = conds
	}
	return changed
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
		s.namespaces.markTerminating(ns.Name, rev)
	}
	c.poke()
	return ns, rev, nil
}

// finalizeNamespace is PUT namespaces/NAME/finalize (an Update of
// client.NamespaceFinalizeSubresource): only the namespace's
// spec.finalizers change, as Kubernetes' finalize subresource. A
// namespace being deleted goes once no finalizer is left, in its spec or
// its metadata; the cleanup loop takes "kubernetes" away when the content
// is gone, and whoever added another takes that one away.
func (s *Registry) finalizeNamespace(ctx context.Context, req *apipb.UpdateRequest) (*apipb.ObjectResponse, error) {
	k, o, warnings, err := decodeRequest(ctx, s.cfg.Kinds, "namespaces", "", req.Object, req.FieldValidation)
	if err != nil {
		return nil, err
	}
	in := o.(*core.Namespace)
	var expected int64
	if in.ResourceVersion != "" {
		if expected, err = strconv.ParseInt(in.ResourceVersion, 10, 64); err != nil || expected <= 0 {
			return nil, apierrors.Invalid("metadata.resourceVersion: Invalid value: %q: must be a positive integer", in.ResourceVersion)
		}
	}
	for {
		kv, err := s.store.Get(ctx, objectKey(k, in))
		if err != nil {
			return nil, apierrors.FromStorage(err, k, in.Name)
		}
		if expected != 0 && kv.Revision != expected {
			return nil, apierrors.FromStorage(storage.ErrConflict, k, in.Name)
		}
		stored, err := DecodeStored(k, kv.Value, kv.Revision)
		if err != nil {
			return nil, status.Errorf(codes.Internal, "decode stored %s: %v", k.Kind, err)
		}
		old := stored.(*core.Namespace)
		if in.UID != "" && in.UID != old.UID {
			return nil, status.Errorf(codes.Aborted, "Precondition failed: UID in precondition: %s, UID in object meta: %s", in.UID, old.UID)
		}
		out := copyObject(k, old).(*core.Namespace)
		out.Spec.Finalizers = in.Spec.Finalizers
		if errs := k.Validate(out); len(errs) > 0 {
			return nil, admission.InvalidError(fmt.Sprintf("Namespace %q is invalid: %v", out.Name, errs.ToError()), errs)
		}
		if err := s.admission.AdmitStatus(ctx, &admission.Attributes{Operation: admission.Update, Kind: k, Object: out, OldObject: old}); err != nil {
			return nil, err
		}
		rev := kv.Revision
		switch {
		case req.DryRun:
		case out.DeletionTimestamp != nil && len(out.Spec.Finalizers) == 0 && len(out.Finalizers) == 0:
			rev, err = s.store.Delete(ctx, kv.Key, kv.Revision) // the last finalizer is gone
		default:
			b, eerr := encodeForStorage(out)
			if eerr != nil {
				return nil, status.Errorf(codes.Internal, "encode %s: %v", k.Kind, eerr)
			}
			rev, err = s.store.Update(ctx, kv.Key, b, kv.Revision)
		}
		if errors.Is(err, storage.ErrConflict) && expected == 0 {
			continue // written in between: finalize the new state
		}
		if err != nil {
			return nil, apierrors.FromStorage(err, k, in.Name)
		}
		b, err := encodeWithRevision(out, rev)
		if err != nil {
			return nil, status.Errorf(codes.Internal, "encode %s: %v", k.Kind, err)
		}
		return &apipb.ObjectResponse{Object: b, Warnings: warnings}, nil
	}
}
