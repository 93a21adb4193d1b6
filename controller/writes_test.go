package controller

import (
	"testing"
	"time"

	"github.com/kobune/kobune/api/apps"
	"github.com/kobune/kobune/api/meta"
)

func TestWritesFence(t *testing.T) {
	cache := map[string]meta.Object{}
	w := NewWrites(func(ns, name string) (meta.Object, bool) { o, ok := cache[ns+"/"+name]; return o, ok })
	clock := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	w.now = func() time.Time { return clock }
	rs := func(name, rv string) *apps.ReplicaSet {
		return &apps.ReplicaSet{ObjectMeta: meta.ObjectMeta{Name: name, Namespace: "default", ResourceVersion: rv}}
	}

	w.Wrote("default/web", rs("web-1", "10"))
	if !w.Pending("default/web") || w.Pending("default/other") {
		t.Fatal("a write not in the cache must keep its owner (and only it) pending")
	}
	w.Observed(rs("web-1", "9"), false) // an older event still on its way
	if !w.Pending("default/web") {
		t.Error("an event older than the write settled it")
	}
	w.Observed(rs("web-1", "12"), false) // the write, or a later change
	if w.Pending("default/web") {
		t.Error("the write's event did not settle it")
	}

	// The watch was faster than the response: nothing to wait for.
	cache["default/web-2"] = rs("web-2", "20")
	w.Wrote("default/web", rs("web-2", "20"))
	if w.Pending("default/web") {
		t.Error("a write the cache already shows keeps its owner pending")
	}

	// Deleted before it was seen; or never seen at all.
	w.Wrote("default/web", rs("web-3", "30"))
	w.Observed(rs("web-3", "25"), true)
	if w.Pending("default/web") {
		t.Error("the object's deletion did not settle its write")
	}
	w.Wrote("default/web", rs("web-4", "40"))
	clock = clock.Add(WritesTimeout + time.Second)
	if w.Pending("default/web") {
		t.Error("an unseen write kept its owner pending past WritesTimeout")
	}
}
