package client

import (
	"context"
	"fmt"

	"github.com/kobune/kobune/api/meta"
)

// WaitFor watches one object until cond holds for it, and returns it. The
// watch starts at revision from, or, with 0, with the object's current
// state; deleted is true for its DELETED event (watch from a revision
// before a delete to be sure to see it). Bound the wait with ctx.
func WaitFor[T meta.Object](ctx context.Context, t *Typed[T], namespace, name string, from int64, cond func(obj T, deleted bool) bool) (T, error) {
	var last T
	w, err := t.Watch(ctx, namespace, ListOptions{FieldSelector: "metadata.name=" + name}, from)
	if err != nil {
		return last, err
	}
	seen := false
	for ev := range w.Events {
		if ev.Type == "BOOKMARK" {
			continue
		}
		last, seen = ev.Object, true
		if cond(ev.Object, ev.Type == "DELETED") {
			return ev.Object, nil
		}
	}
	if err := w.Err(); err != nil {
		return last, err
	}
	if !seen {
		return last, fmt.Errorf("%s %s/%s: no event before the wait ended (%w)", t.Kind.Kind, namespace, name, ctx.Err())
	}
	return last, fmt.Errorf("%s %s/%s: condition not met before the wait ended (%w); last seen: %+v", t.Kind.Kind, namespace, name, ctx.Err(), last)
}
