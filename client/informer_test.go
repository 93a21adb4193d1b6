package client_test

import (
	"context"
	"testing"
	"time"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/apiserver"
	"github.com/kobune/kobune/apiserver/testserver"
	"github.com/kobune/kobune/client"
)

func TestInformerIndexesAndHandlers(t *testing.T) {
	s := testserver.New(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pods := client.For[*core.Pod](s.Client)
	mk := func(name, node string) {
		p := &core.Pod{ObjectMeta: meta.ObjectMeta{Name: name, Namespace: "default"},
			Spec: core.PodSpec{NodeName: node, Containers: []core.Container{{Name: "c", Image: "i"}}}}
		if _, err := pods.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	mk("a", "node-1")
	inf := client.NewInformer(pods, "", client.ListOptions{})
	inf.AddIndex(client.IndexByNodeName, client.IndexNodeName)
	updates := make(chan string, 10)
	inf.AddHandler(client.Handler[*core.Pod]{OnUpdate: func(_, p *core.Pod) { updates <- p.Name + "@" + p.Spec.NodeName }})
	go inf.Run(ctx)
	if !client.WaitForSync(ctx, inf.HasSynced) {
		t.Fatal("no sync")
	}
	mk("b", "")
	p, err := pods.Get(ctx, "default", "b")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Client.Bind(ctx, "default", "b", p.UID, "node-1"); err != nil {
		t.Fatal(err)
	}
	select {
	case u := <-updates:
		if u != "b@node-1" {
			t.Fatalf("update %q, want b@node-1", u)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no update for the bind")
	}
	if got := len(inf.ByIndex(client.IndexByNodeName, "node-1")); got != 2 {
		t.Errorf("node-1 index holds %d pods, want 2", got)
	}
	if got := len(inf.ByIndex(client.IndexByNodeName, "")); got != 0 {
		t.Errorf("unbound index holds %d pods after the bind, want 0", got)
	}
}

// TestWatchBookmarksOnlyWhenAsked: Watch gives object events only, as its
// callers expect (a test that counted pods once took a bookmark's empty
// object for a ninth pod); WatchWithBookmarks, which informers use, also
// gives BOOKMARK events with a resourceVersion, and an informer's
// LastResourceVersion follows them.
func TestWatchBookmarksOnlyWhenAsked(t *testing.T) {
	s := testserver.New(t, func(c *apiserver.Config) { c.BookmarkInterval = 100 * time.Millisecond })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cms := client.For[*core.ConfigMap](s.Client)
	created, err := cms.Create(ctx, &core.ConfigMap{ObjectMeta: meta.ObjectMeta{Name: "a", Namespace: "default"}})
	if err != nil {
		t.Fatal(err)
	}
	types := func(bookmarks bool) map[string]int {
		wctx, stop := context.WithTimeout(ctx, time.Second)
		defer stop()
		watch := cms.Watch
		if bookmarks {
			watch = cms.WatchWithBookmarks
		}
		w, err := watch(wctx, "default", client.ListOptions{}, client.ResourceVersion(created))
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]int{}
		for ev := range w.Events {
			got[ev.Type]++
			if ev.Type == "BOOKMARK" && ev.ResourceVersion < client.ResourceVersion(created) {
				t.Errorf("a bookmark at %d, before the watch's start %d", ev.ResourceVersion, client.ResourceVersion(created))
			}
		}
		return got
	}
	if got := types(false); len(got) != 0 {
		t.Errorf("Watch on a quiet namespace for 1 s: %v; want no events at all", got)
	}
	if got := types(true); got["BOOKMARK"] == 0 {
		t.Errorf("WatchWithBookmarks for 1 s with a 100 ms interval: %v; want bookmarks", got)
	}
}
