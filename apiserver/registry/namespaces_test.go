package registry

import (
	"context"
	"testing"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/apiserver/storage"
)

// A namespace this server marked Terminating stays Terminating when the
// watch (or a relist) delivers an older state of it afterwards — its
// creation, say, still on its way: a create right after the namespace's
// delete is refused whatever order the cache hears of the writes in.
func TestNamespaceMarkOutlivesOlderWatchEvents(t *testing.T) {
	c := NewNamespaceCache(nil)
	active := func(rv string) *core.Namespace {
		return &core.Namespace{ObjectMeta: meta.ObjectMeta{Name: "shop", ResourceVersion: rv}, Status: core.NamespaceStatus{Phase: core.NamespaceActive}}
	}
	phase := func() string {
		t.Helper()
		p, found, err := c.NamespacePhase(context.Background(), "shop")
		if err != nil || !found {
			t.Fatalf("shop: found %v, %v", found, err)
		}
		return p
	}
	c.markTerminating("shop", 12)
	c.apply(storage.Event{Type: storage.Put, Key: "/registry/namespaces/shop", Created: true, Revision: 10}, active("10"))
	if p := phase(); p != core.NamespaceTerminating {
		t.Errorf("after the creation's event arrived late: phase %q, want Terminating", p)
	}
	c.reset([]meta.Object{active("11")})
	if p := phase(); p != core.NamespaceTerminating {
		t.Errorf("after a relist older than the mark: phase %q, want Terminating", p)
	}
	terminating := active("12")
	terminating.Status.Phase = core.NamespaceTerminating
	c.apply(storage.Event{Type: storage.Put, Key: "/registry/namespaces/shop", Revision: 12}, terminating)
	c.apply(storage.Event{Type: storage.Deleted, Key: "/registry/namespaces/shop", Revision: 13}, nil)
	// The namespace made again, at a later revision, is Active.
	c.apply(storage.Event{Type: storage.Put, Key: "/registry/namespaces/shop", Created: true, Revision: 14}, active("14"))
	if p := phase(); p != core.NamespaceActive {
		t.Errorf("a namespace made again after the deletion: phase %q, want Active", p)
	}
}
