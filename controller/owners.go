package controller

import (
	"context"
	"reflect"
	"slices"

	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/api/selector"
	"github.com/kobune/kobune/client"
)

// ControllerRef is a controller reference to owner: OwnerRef with
// controller and blockOwnerDeletion set, as the workload controllers put
// on what they create or adopt.
func ControllerRef(owner meta.Object) meta.OwnerReference {
	ref := OwnerRef(owner)
	yes := true
	ref.Controller, ref.BlockOwnerDeletion = &yes, &yes
	return ref
}

// OwnedBy builds the handler an owner's controller registers on the
// informer of the objects it owns (controller-runtime's
// EnqueueRequestForOwner with OnlyControllerOwner, plus client-go's
// expectations): every change to an owned object enqueues the key of its
// controller owner of kind Kind.
type OwnedBy[T meta.Object] struct {
	// Kind is the owner's kind ("ReplicaSet"); objects controlled by
	// another kind are ignored.
	Kind string
	// Queue gets the owner keys ("namespace/name").
	Queue *client.Queue
	// Owner, when set, finds an owner in its cache: a reference whose
	// owner is gone or has another uid (deleted and made again under the
	// same name) then enqueues nothing, as Kubernetes' resolveControllerRef.
	Owner func(namespace, name string) (meta.Object, bool)
	// Expectations, when set, are settled: an add is an observed create, a
	// delete (or the start of a graceful deletion) an observed delete.
	Expectations *Expectations
	// Adopters, when set, are the keys of the owners that might adopt an
	// orphan (one without a controller): they look at it on add and update.
	Adopters func(orphan T) []string
	// Writes, when set, observe every event first (the owner's writes to
	// these objects settle before the owner is enqueued).
	Writes *Writes
}

// Handler is the informer handler.
func (o OwnedBy[T]) Handler() client.Handler[T] {
	return client.Handler[T]{
		OnAdd: func(obj T) { o.observe(obj, false); o.changed(obj, true, false) },
		OnUpdate: func(old, obj T) {
			o.observe(obj, false)
			// An object that starts terminating counts as deleted for the
			// expectations (its replacement may be made now).
			o.changed(obj, false, old.GetObjectMeta().DeletionTimestamp == nil && obj.GetObjectMeta().DeletionTimestamp != nil)
			if oc, nc := meta.ControllerOf(old), meta.ControllerOf(obj); oc != nil && (nc == nil || nc.UID != oc.UID) {
				o.changed(old, false, false) // released or moved: the old owner must look again
			}
		},
		OnDelete: func(obj T) {
			o.observe(obj, true)
			if meta.ControllerOf(obj) == nil {
				return // no owner cares about an orphan's deletion
			}
			o.changed(obj, false, obj.GetObjectMeta().DeletionTimestamp == nil) // else counted when it started terminating
		},
	}
}

func (o OwnedBy[T]) observe(obj T, deleted bool) {
	if o.Writes != nil {
		o.Writes.Observed(obj, deleted)
	}
}

// Enqueue enqueues obj's controller owner (or its adopters) as for an
// update that changed nothing else.
func (o OwnedBy[T]) Enqueue(obj T) { o.changed(obj, false, false) }

// CachedIn looks objects up in an informer's cache (for OwnedBy.Owner
// and NewWrites).
func CachedIn[O meta.Object](inf *client.Informer[O]) func(namespace, name string) (meta.Object, bool) {
	return func(namespace, name string) (meta.Object, bool) { return inf.Get(namespace, name) }
}

func (o OwnedBy[T]) changed(obj T, added, deleted bool) {
	m := obj.GetObjectMeta()
	ref := meta.ControllerOf(obj)
	if ref == nil {
		if o.Adopters != nil && !deleted {
			for _, key := range o.Adopters(obj) {
				o.Queue.Add(key)
			}
		}
		return
	}
	if ref.Kind != o.Kind {
		return
	}
	if o.Owner != nil {
		if owner, ok := o.Owner(m.Namespace, ref.Name); !ok || owner.GetObjectMeta().UID != ref.UID {
			return
		}
	}
	key := ref.Name
	if m.Namespace != "" {
		key = m.Namespace + "/" + ref.Name
	}
	if o.Expectations != nil {
		if added {
			o.Expectations.Observed(key, true)
		}
		if deleted {
			o.Expectations.Observed(key, false)
		}
	}
	o.Queue.Add(key)
}

// SelectedBy lists, for OwnedBy.Adopters, the owners in the orphan's
// namespace whose selector matches its labels.
func SelectedBy[O, T meta.Object](owners *client.Informer[O], selectorOf func(O) *meta.LabelSelector) func(T) []string {
	return func(orphan T) []string {
		m := orphan.GetObjectMeta()
		var keys []string
		for _, owner := range owners.ByIndex(client.IndexNamespace, m.Namespace) {
			if sel, err := selector.FromLabelSelector(selectorOf(owner)); err == nil && !sel.Empty() && sel.Matches(m.Labels) {
				keys = append(keys, meta.Key(owner))
			}
		}
		return keys
	}
}

// Claim returns the objects among candidates that owner controls, after
// adopting the orphans that match sel (and that adoptable, when set,
// accepts) and releasing owner's objects that no longer match —
// Kubernetes' ControllerRefManager. While owner is being deleted it
// adopts and releases nothing. An object deleted meanwhile is skipped.
func Claim[T meta.Object](ctx context.Context, c *client.Client, owner meta.Object, sel selector.Selector, candidates []T, adoptable func(T) bool) ([]T, error) {
	om := owner.GetObjectMeta()
	typed := client.For[T](c)
	var out []T
	for _, obj := range candidates {
		m := obj.GetObjectMeta()
		ref := meta.ControllerOf(obj)
		switch {
		case ref != nil && ref.UID == om.UID:
			if sel.Matches(m.Labels) || om.DeletionTimestamp != nil {
				out = append(out, obj)
				continue
			}
			if _, err := typed.Update(ctx, withOwners(obj, withoutOwner(m.OwnerReferences, om.UID))); err != nil && !client.IsNotFound(err) {
				return nil, err
			}
		case ref == nil && sel.Matches(m.Labels) && om.DeletionTimestamp == nil && m.DeletionTimestamp == nil && (adoptable == nil || adoptable(obj)):
			adopted, err := typed.Update(ctx, withOwners(obj, append(withoutOwner(m.OwnerReferences, om.UID), ControllerRef(owner))))
			if client.IsNotFound(err) {
				continue
			}
			if err != nil {
				return nil, err
			}
			out = append(out, adopted)
		}
	}
	return out, nil
}

// withOwners is a shallow copy of obj (never the informer's cached
// object itself) with other owner references.
func withOwners[T meta.Object](obj T, refs []meta.OwnerReference) T {
	v := reflect.New(reflect.TypeOf(obj).Elem())
	v.Elem().Set(reflect.ValueOf(obj).Elem())
	cp := v.Interface().(T)
	cp.GetObjectMeta().OwnerReferences = refs
	return cp
}

func withoutOwner(refs []meta.OwnerReference, uid string) []meta.OwnerReference {
	return slices.DeleteFunc(slices.Clone(refs), func(r meta.OwnerReference) bool { return r.UID == uid })
}
