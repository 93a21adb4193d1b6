// Package garbagecollector is kube-controller-manager's garbage collector:
// it deletes objects whose owners (metadata.ownerReferences) are gone, and
// carries out the two deletion modes that need the owner to wait:
//
//   - Background (the default): the API server removes the owner at once;
//     the collector then finds its dependents with no remaining owner and
//     deletes them, and so on down (Deployment → ReplicaSets → pods);
//   - Foreground: the API server marks the owner with a deletionTimestamp
//     and the foregroundDeletion finalizer; the collector deletes its
//     dependents (in the foreground too) and removes the finalizer once no
//     dependent with blockOwnerDeletion is left, and the owner goes last;
//   - Orphan: the owner carries the orphan finalizer; the collector removes
//     the owner's references from its dependents, then the finalizer, and
//     the dependents live on.
//
// A dependent with several owners is deleted only when all are gone; the
// references to the missing ones are removed. The collector watches the
// kinds controllers create and own (pods, ReplicaSets, Deployments, DaemonSets,
// StatefulSets, Jobs, CronJobs, Services, EndpointSlices) and every custom
// kind the server's CustomResourceDefinitions add (FollowCustomKinds asks
// the server every 10 s, as Kubernetes' collector rereads discovery), so a
// custom resource is collected like a built-in dependent and its deletion
// frees its dependents at once. An owner of another kind — a ConfigMap, a
// Secret — is looked up through the API, and its dependents are looked at
// again every 15 s, since nothing here announces its deletion.
package garbagecollector

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/api/scheme"
	"github.com/kobune/kobune/client"
	"github.com/kobune/kobune/client/reconcile"
	"github.com/kobune/kobune/controller"
	"github.com/kobune/kobune/proto/apipb"
)

// Name is the controller's name in logs and events.
const Name = "garbage-collector-controller"

// Finalizers the API server adds for Foreground and Orphan deletion.
const (
	FinalizerForeground = "foregroundDeletion"
	FinalizerOrphan     = "orphan"
)

// watched is one kind the collector follows, behind a kind-free face.
type watched struct {
	kind, resource string
	group          string // a reference names the kind and its group
	namespaced     bool
	decode         func([]byte) (meta.Object, error)
	get            func(namespace, name string) (meta.Object, bool)
	dependentsOf   func(uid string) []meta.Object
	synced         func() bool
	// stop ends a custom kind's informer (nil for built-in kinds).
	stop context.CancelFunc
}

// watch follows the kind k through inf: its objects are queued as
// "<resource>/<namespace>/<name>".
func watch[T meta.Object](gc *Collector, inf *client.Informer[T], k *scheme.Kind) *watched {
	w := &watched{kind: k.Kind, resource: k.Resource, group: k.Group(), namespaced: k.Namespaced, decode: k.Decode, synced: inf.HasSynced,
		get: func(ns, name string) (meta.Object, bool) { return inf.Get(ns, name) },
		dependentsOf: func(uid string) []meta.Object {
			var out []meta.Object
			for _, o := range inf.ByIndex(controller.IndexByOwner, uid) {
				out = append(out, o)
			}
			return out
		},
	}
	inf.AddHandler(client.Handler[T]{
		OnAdd:    func(o T) { gc.enqueue(w, o) },
		OnUpdate: func(_, o T) { gc.enqueue(w, o) },
		OnDelete: func(o T) {
			// Its dependents may now be dangling, and its owners waiting
			// in the foreground may now be free to go.
			m := o.GetObjectMeta()
			for _, k := range gc.followed() {
				for _, d := range k.dependentsOf(m.UID) {
					gc.enqueue(k, d)
				}
			}
			for _, ref := range m.OwnerReferences {
				if ow, ok := gc.watchedFor(ref); ok {
					gc.Loop.Queue.Add(ow.resource + "/" + m.Namespace + "/" + ref.Name)
				}
			}
		},
	})
	gc.mu.Lock()
	gc.kinds[k.Resource] = w
	gc.mu.Unlock()
	return w
}

// Collector is the garbage collector.
type Collector struct {
	client *client.Client
	// mu guards kinds: custom kinds come and go.
	mu    sync.Mutex
	kinds map[string]*watched // by resource
	// custom are the kinds the server's CustomResourceDefinitions add,
	// asked for when a reference names a kind not known here (customMu).
	customMu    sync.Mutex
	custom      *scheme.Kinds
	customAsked time.Time
	// Loop is the collector's queue ("Kind/namespace/name") and workers.
	Loop *reconcile.Loop
}

// New returns a collector over the shared informers.
func New(c *client.Client, inf *controller.Informers) *Collector {
	gc := &Collector{client: c, kinds: map[string]*watched{}}
	gc.Loop = reconcile.NewLoop(Name, gc, 5)
	watch(gc, inf.Pods, builtin("pods"))
	watch(gc, inf.ReplicaSets, builtin("replicasets"))
	watch(gc, inf.ReplicationControllers, builtin("replicationcontrollers"))
	watch(gc, inf.Deployments, builtin("deployments"))
	watch(gc, inf.DaemonSets, builtin("daemonsets"))
	watch(gc, inf.StatefulSets, builtin("statefulsets"))
	watch(gc, inf.Revisions, builtin("controllerrevisions"))
	watch(gc, inf.Jobs, builtin("jobs"))
	watch(gc, inf.CronJobs, builtin("cronjobs"))
	watch(gc, inf.Services, builtin("services"))
	watch(gc, inf.EndpointSlices, builtin("endpointslices"))
	return gc
}

func builtin(resource string) *scheme.Kind {
	k, ok := scheme.ByResource(resource)
	if !ok {
		panic("garbagecollector: no built-in kind " + resource)
	}
	return k
}

// CustomKindsInterval is how often FollowCustomKinds asks the server for
// the custom kinds (Kubernetes' collector rereads discovery every 30 s).
const CustomKindsInterval = 10 * time.Second

// FollowCustomKinds follows every custom kind the server serves, until ctx
// ends: an informer for each kind that appears, stopped when its
// definition goes.
func (gc *Collector) FollowCustomKinds(ctx context.Context) {
	for {
		if err := gc.syncCustomKinds(ctx); err != nil && ctx.Err() == nil {
			log.Printf("%s: custom kinds: %s", Name, client.Message(err))
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(CustomKindsInterval):
		}
	}
}

// syncCustomKinds starts following the custom kinds the server serves now
// and stops following those it no longer serves.
func (gc *Collector) syncCustomKinds(ctx context.Context) error {
	kinds, err := gc.client.Discover(ctx)
	if err != nil {
		return err
	}
	serving := map[string]bool{}
	for _, k := range kinds.Custom() {
		serving[k.Resource] = true
		gc.mu.Lock()
		_, known := gc.kinds[k.Resource]
		gc.mu.Unlock()
		if known {
			continue
		}
		inf := client.NewInformer(client.ForKind[*meta.Unstructured](gc.client, k), "", client.ListOptions{})
		inf.AddIndex(controller.IndexByOwner, controller.OwnerUIDs[*meta.Unstructured])
		w := watch(gc, inf, k)
		kctx, cancel := context.WithCancel(ctx)
		w.stop = cancel
		go inf.Run(kctx)
	}
	gc.customMu.Lock()
	gc.custom, gc.customAsked = kinds, time.Now()
	gc.customMu.Unlock()
	gc.mu.Lock()
	defer gc.mu.Unlock()
	for r, w := range gc.kinds {
		if w.stop != nil && !serving[r] {
			w.stop()
			delete(gc.kinds, r)
		}
	}
	return nil
}

// followed are the kinds followed now.
func (gc *Collector) followed() []*watched {
	gc.mu.Lock()
	defer gc.mu.Unlock()
	out := make([]*watched, 0, len(gc.kinds))
	for _, w := range gc.kinds {
		out = append(out, w)
	}
	return out
}

func (gc *Collector) enqueue(w *watched, o meta.Object) {
	m := o.GetObjectMeta()
	if len(m.OwnerReferences) > 0 || (m.DeletionTimestamp != nil && len(m.Finalizers) > 0) {
		gc.Loop.Queue.Add(w.resource + "/" + m.Namespace + "/" + m.Name)
	}
}

// Reconcile implements reconcile.Reconciler for "resource/namespace/name".
func (gc *Collector) Reconcile(ctx context.Context, key string) (reconcile.Result, error) {
	resource, rest, _ := strings.Cut(key, "/")
	gc.mu.Lock()
	w, ok := gc.kinds[resource]
	gc.mu.Unlock()
	if !ok {
		return reconcile.Result{}, nil
	}
	for _, k := range gc.followed() {
		if !k.synced() {
			return reconcile.Result{}, fmt.Errorf("caches not synced yet") // an owner missing from a cold cache is not gone
		}
	}
	ns, name, _ := strings.Cut(rest, "/")
	o, ok := w.get(ns, name)
	if !ok {
		return reconcile.Result{}, nil
	}
	m := o.GetObjectMeta()
	if m.DeletionTimestamp != nil {
		switch {
		case slices.Contains(m.Finalizers, FinalizerOrphan):
			return reconcile.Result{}, gc.orphanDependents(ctx, w, o)
		case slices.Contains(m.Finalizers, FinalizerForeground):
			return reconcile.Result{}, gc.deleteDependentsFirst(ctx, w, o)
		}
	}
	unwatched, err := gc.collectIfDangling(ctx, w, o)
	if err == nil && unwatched {
		// An owner of a kind not followed here (a ConfigMap, a custom
		// resource) announces no deletion: look again after a while.
		return reconcile.Result{RequeueAfter: UnwatchedOwnerRecheck}, nil
	}
	return reconcile.Result{}, err
}

// UnwatchedOwnerRecheck is how often a dependent whose owner is of a kind
// the collector does not follow is looked at again: the longest a
// custom resource's dependents outlive it.
const UnwatchedOwnerRecheck = 15 * time.Second

// watchedFor is the followed kind a reference names: same kind, same
// group (a custom kind may be called Deployment too).
func (gc *Collector) watchedFor(ref meta.OwnerReference) (*watched, bool) {
	group, _, found := strings.Cut(ref.APIVersion, "/")
	if !found {
		group = ""
	}
	for _, w := range gc.followed() {
		if w.kind == ref.Kind && w.group == group {
			return w, true
		}
	}
	return nil, false
}

// kindOf is the kind a reference names: a built-in one, or one the
// server's CustomResourceDefinitions add (asked again at most every 10 s
// when a reference names a kind not known yet).
func (gc *Collector) kindOf(ctx context.Context, ref meta.OwnerReference) (*scheme.Kind, error) {
	gc.customMu.Lock()
	defer gc.customMu.Unlock()
	k, err := gc.custom.ByKind(ref.APIVersion, ref.Kind)
	if err == nil || time.Since(gc.customAsked) < 10*time.Second {
		return k, err
	}
	gc.customAsked = time.Now()
	kinds, derr := gc.client.Discover(ctx)
	if derr != nil {
		return nil, derr
	}
	gc.custom = kinds
	return kinds.ByKind(ref.APIVersion, ref.Kind)
}

// ownerExists reports whether the owner a reference names is there (same
// uid), from the caches for watched kinds and through the API otherwise;
// watched is false for the latter. An owner of a kind the server does
// not serve is taken as there, as Kubernetes' collector keeps a dependent
// whose owner it cannot look up.
func (gc *Collector) ownerExists(ctx context.Context, ns string, ref meta.OwnerReference) (exists, watched bool, err error) {
	if w, ok := gc.watchedFor(ref); ok {
		if o, ok := w.get(ns, ref.Name); ok && o.GetObjectMeta().UID == ref.UID {
			return true, true, nil
		}
		// Not in the cache, or another object of that name: the cache may
		// lag behind a create (an owner made a moment before its
		// dependent). As Kubernetes' collector does before it deletes,
		// ask the API server.
		if !w.namespaced {
			ns = ""
		}
		resp, err := gc.client.API.Get(ctx, &apipb.GetRequest{Resource: w.resource, Namespace: ns, Name: ref.Name})
		if client.IsNotFound(err) {
			return false, true, nil
		}
		if err != nil {
			return false, true, err
		}
		owner, err := w.decode(resp.Object)
		if err != nil {
			return false, true, err
		}
		return owner.GetObjectMeta().UID == ref.UID, true, nil
	}
	k, err := gc.kindOf(ctx, ref)
	if err != nil {
		var unknown *scheme.UnknownKindError
		if errors.As(err, &unknown) {
			return true, false, nil
		}
		return false, false, err
	}
	if !k.Namespaced {
		ns = ""
	}
	resp, err := gc.client.API.Get(ctx, &apipb.GetRequest{Resource: k.Resource, Namespace: ns, Name: ref.Name})
	if client.IsNotFound(err) {
		return false, false, nil
	}
	if err != nil {
		return false, false, err
	}
	owner, err := k.Decode(resp.Object)
	if err != nil {
		return false, false, err
	}
	return owner.GetObjectMeta().UID == ref.UID, false, nil
}

// collectIfDangling deletes an object whose owners are all gone, or drops
// the references to the gone ones when some remain.
// It reports whether an owner that is still there is of a kind not
// followed here (its deletion is found by looking again).
func (gc *Collector) collectIfDangling(ctx context.Context, w *watched, o meta.Object) (unwatched bool, err error) {
	m := o.GetObjectMeta()
	if len(m.OwnerReferences) == 0 || m.DeletionTimestamp != nil {
		return false, nil
	}
	var gone []string
	for _, ref := range m.OwnerReferences {
		exists, watched, err := gc.ownerExists(ctx, m.Namespace, ref)
		if err != nil {
			return false, err
		}
		if !exists {
			gone = append(gone, ref.UID)
		} else if !watched {
			unwatched = true
		}
	}
	switch {
	case len(gone) == 0:
		return unwatched, nil
	case len(gone) < len(m.OwnerReferences):
		return unwatched, gc.updateMeta(ctx, w, m.Namespace, m.Name, func(om *meta.ObjectMeta) {
			om.OwnerReferences = slices.DeleteFunc(om.OwnerReferences, func(r meta.OwnerReference) bool { return slices.Contains(gone, r.UID) })
		})
	}
	// Every owner is gone. An owner being deleted in the foreground passes
	// the mode on (Kubernetes does the same for dependents that block it).
	return false, gc.delete(ctx, w, m, "Background")
}

// deleteDependentsFirst deletes the owner's dependents in the foreground
// and lifts the finalizer once none that blocks it is left.
func (gc *Collector) deleteDependentsFirst(ctx context.Context, w *watched, o meta.Object) error {
	m := o.GetObjectMeta()
	blocking := 0
	for _, k := range gc.followed() {
		for _, d := range k.dependentsOf(m.UID) {
			dm := d.GetObjectMeta()
			ref := refTo(dm, m.UID)
			if ref != nil && ref.BlockOwnerDeletion != nil && *ref.BlockOwnerDeletion && gc.waitsInCircle(dm) {
				// A dependent that waits for its own dependents, one of
				// which waits too, may wait for this owner in a circle
				// (pod1 → pod2 → pod3 → pod1): as Kubernetes' collector
				// does, it stops blocking its owners and goes on in the
				// foreground; the circle unwinds.
				if err := gc.updateMeta(ctx, k, dm.Namespace, dm.Name, func(om *meta.ObjectMeta) {
					for i := range om.OwnerReferences {
						om.OwnerReferences[i].BlockOwnerDeletion = nil
					}
				}); err != nil {
					return err
				}
				continue
			}
			if dm.DeletionTimestamp == nil {
				// The cache may lag behind a reference just added (another
				// owner): decide on the object as the API server has it
				// now, as Kubernetes' collector does before it deletes.
				latest, err := gc.latest(ctx, k, dm)
				if err != nil {
					return err
				}
				if latest == nil || refTo(latest, m.UID) == nil {
					continue // gone already, or no longer this owner's
				}
				dm = latest
			}
			if dm.DeletionTimestamp == nil && len(dm.OwnerReferences) > 1 {
				// As Kubernetes' collector: a dependent that another owner
				// still holds (there, and not deleting its own dependents)
				// stays; only its reference to this owner goes.
				solid, err := gc.heldByAnother(ctx, dm, m.UID)
				if err != nil {
					return err
				}
				if solid {
					if err := gc.updateMeta(ctx, k, dm.Namespace, dm.Name, func(om *meta.ObjectMeta) {
						om.OwnerReferences = slices.DeleteFunc(om.OwnerReferences, func(r meta.OwnerReference) bool { return r.UID == m.UID })
					}); err != nil {
						return err
					}
					continue
				}
			}
			if ref != nil && ref.BlockOwnerDeletion != nil && *ref.BlockOwnerDeletion {
				blocking++
			}
			if dm.DeletionTimestamp == nil {
				if err := gc.delete(ctx, k, dm, "Foreground"); err != nil {
					return err
				}
			}
		}
	}
	if blocking > 0 {
		return nil // their deletion requeues this owner
	}
	return gc.removeFinalizer(ctx, w, m, FinalizerForeground)
}

// latest is an object as the API server has it now (nil when it is gone,
// or another object of that name replaced it).
func (gc *Collector) latest(ctx context.Context, w *watched, m *meta.ObjectMeta) (*meta.ObjectMeta, error) {
	ns := m.Namespace
	if !w.namespaced {
		ns = ""
	}
	resp, err := gc.client.API.Get(ctx, &apipb.GetRequest{Resource: w.resource, Namespace: ns, Name: m.Name})
	if client.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	o, err := w.decode(resp.Object)
	if err != nil {
		return nil, err
	}
	if lm := o.GetObjectMeta(); lm.UID == m.UID {
		return lm, nil
	}
	return nil, nil
}

// heldByAnother: an owner of the dependent other than the one with uid
// is there and not being deleted in the foreground (Kubernetes' "solid"
// owner).
func (gc *Collector) heldByAnother(ctx context.Context, dm *meta.ObjectMeta, uid string) (bool, error) {
	for _, ref := range dm.OwnerReferences {
		if ref.UID == uid {
			continue
		}
		if w, ok := gc.watchedFor(ref); ok {
			if o, ok := w.get(dm.Namespace, ref.Name); ok && o.GetObjectMeta().UID == ref.UID {
				if !deletingDependents(o.GetObjectMeta()) {
					return true, nil
				}
				continue
			}
		}
		exists, _, err := gc.ownerExists(ctx, dm.Namespace, ref)
		if err != nil {
			return false, err
		}
		if exists {
			return true, nil
		}
	}
	return false, nil
}

// waitsInCircle: the object waits for its dependents (a foreground
// deletion) and one of them waits for its own too.
func (gc *Collector) waitsInCircle(m *meta.ObjectMeta) bool {
	if !deletingDependents(m) {
		return false
	}
	for _, k := range gc.followed() {
		for _, d := range k.dependentsOf(m.UID) {
			if deletingDependents(d.GetObjectMeta()) {
				return true
			}
		}
	}
	return false
}

func deletingDependents(m *meta.ObjectMeta) bool {
	return m.DeletionTimestamp != nil && slices.Contains(m.Finalizers, FinalizerForeground)
}

// orphanDependents removes the owner from its dependents' references, then
// the orphan finalizer.
func (gc *Collector) orphanDependents(ctx context.Context, w *watched, o meta.Object) error {
	m := o.GetObjectMeta()
	for _, k := range gc.followed() {
		for _, d := range k.dependentsOf(m.UID) {
			dm := d.GetObjectMeta()
			err := gc.updateMeta(ctx, k, dm.Namespace, dm.Name, func(om *meta.ObjectMeta) {
				om.OwnerReferences = slices.DeleteFunc(om.OwnerReferences, func(r meta.OwnerReference) bool { return r.UID == m.UID })
			})
			if err != nil {
				return err
			}
		}
	}
	return gc.removeFinalizer(ctx, w, m, FinalizerOrphan)
}

func refTo(m *meta.ObjectMeta, uid string) *meta.OwnerReference {
	for i := range m.OwnerReferences {
		if m.OwnerReferences[i].UID == uid {
			return &m.OwnerReferences[i]
		}
	}
	return nil
}

func (gc *Collector) delete(ctx context.Context, w *watched, m *meta.ObjectMeta, policy string) error {
	_, err := gc.client.API.Delete(ctx, &apipb.DeleteRequest{Resource: w.resource, Namespace: m.Namespace, Name: m.Name,
		Preconditions: &apipb.Preconditions{Uid: m.UID}, PropagationPolicy: policy})
	if err != nil && !client.IsNotFound(err) && !client.IsConflict(err) {
		return fmt.Errorf("delete %s %s/%s: %w", w.kind, m.Namespace, m.Name, err)
	}
	return nil
}

func (gc *Collector) removeFinalizer(ctx context.Context, w *watched, m *meta.ObjectMeta, finalizer string) error {
	return gc.updateMeta(ctx, w, m.Namespace, m.Name, func(om *meta.ObjectMeta) {
		om.Finalizers = slices.DeleteFunc(om.Finalizers, func(f string) bool { return f == finalizer })
	})
}

// updateMeta reads the object fresh (cached objects are shared), changes
// its metadata and writes it back; a conflict is retried by the queue.
func (gc *Collector) updateMeta(ctx context.Context, w *watched, ns, name string, change func(*meta.ObjectMeta)) error {
	resp, err := gc.client.API.Get(ctx, &apipb.GetRequest{Resource: w.resource, Namespace: ns, Name: name})
	if client.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	o, err := w.decode(resp.Object)
	if err != nil {
		return err
	}
	change(o.GetObjectMeta())
	b, err := json.Marshal(o)
	if err != nil {
		return err
	}
	_, err = gc.client.API.Update(ctx, &apipb.UpdateRequest{Resource: w.resource, Namespace: ns, Object: b})
	if client.IsNotFound(err) {
		return nil
	}
	return err
}
