package apiserver_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kobune/kobune/api/apps"
	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/apiserver/testserver"
	"github.com/kobune/kobune/client"
)

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func newDeployment(name string, replicas int32) *apps.Deployment {
	return &apps.Deployment{
		ObjectMeta: meta.ObjectMeta{Name: name, Namespace: "default"},
		Spec: apps.DeploymentSpec{
			Replicas: &replicas,
			Selector: &meta.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: core.PodTemplateSpec{
				ObjectMeta: meta.ObjectMeta{Labels: map[string]string{"app": name}},
				Spec:       core.PodSpec{Containers: []core.Container{{Name: "app", Image: "kobune.local/labapp:1.0"}}},
			},
		},
	}
}

func newPod(name, node string) *core.Pod {
	return &core.Pod{
		ObjectMeta: meta.ObjectMeta{Name: name, Namespace: "default", Labels: map[string]string{"app": "web"}},
		Spec:       core.PodSpec{NodeName: node, Containers: []core.Container{{Name: "app", Image: "kobune.local/labapp:1.0"}}},
	}
}

func TestServerOwnedFieldsAndGeneration(t *testing.T) {
	s := testserver.New(t)
	ctx := ctxT(t)
	deps := client.For[*apps.Deployment](s.Client)
	d, err := deps.Create(ctx, newDeployment("web", 2))
	if err != nil {
		t.Fatal(err)
	}
	if d.UID == "" || d.CreationTimestamp.IsZero() || d.ResourceVersion == "" || d.Generation != 1 {
		t.Fatalf("server fields not set: uid=%q created=%v rv=%q gen=%d", d.UID, d.CreationTimestamp, d.ResourceVersion, d.Generation)
	}
	if d.Spec.Strategy.Type != "RollingUpdate" || d.Spec.Template.Spec.RestartPolicy != "Always" {
		t.Errorf("defaults not applied: %+v", d.Spec.Strategy)
	}
	// A spec change bumps generation; status written through Update is ignored.
	d.Spec.Replicas = ptr(int32(5))
	d.Status.Replicas = 99
	d2, err := deps.Update(ctx, d)
	if err != nil {
		t.Fatal(err)
	}
	if d2.Generation != 2 || d2.Status.Replicas != 0 {
		t.Errorf("after spec update: generation %d (want 2), status.replicas %d (want 0)", d2.Generation, d2.Status.Replicas)
	}
	// A status write changes status only and keeps generation.
	d2.Status.Replicas = 5
	d2.Status.ObservedGeneration = 2
	d2.Spec.Replicas = ptr(int32(1))
	d3, err := deps.UpdateStatus(ctx, d2)
	if err != nil {
		t.Fatal(err)
	}
	if d3.Generation != 2 || d3.Status.Replicas != 5 || *d3.Spec.Replicas != 5 {
		t.Errorf("after status update: generation %d, status.replicas %d, spec.replicas %d", d3.Generation, d3.Status.Replicas, *d3.Spec.Replicas)
	}
	// An update that changes nothing writes nothing.
	d4, err := deps.Update(ctx, d3)
	if err != nil {
		t.Fatal(err)
	}
	if d4.ResourceVersion != d3.ResourceVersion {
		t.Errorf("no-op update moved resourceVersion %s -> %s", d3.ResourceVersion, d4.ResourceVersion)
	}
	// A metadata change is written but is not a spec change; the response
	// carries the new resourceVersion and the stored status.
	d4.Labels = map[string]string{"tier": "web"}
	d5, err := deps.Update(ctx, d4)
	if err != nil {
		t.Fatal(err)
	}
	if d5.Generation != 2 || d5.ResourceVersion == d4.ResourceVersion || d5.Labels["tier"] != "web" || d5.Status.Replicas != 5 {
		t.Errorf("after label update: generation %d (want 2), rv %s (was %s), labels %v, status.replicas %d", d5.Generation, d5.ResourceVersion, d4.ResourceVersion, d5.Labels, d5.Status.Replicas)
	}
	if got, err := deps.Get(ctx, "default", "web"); err != nil || got.ResourceVersion != d5.ResourceVersion {
		t.Errorf("read back: %v, rv %v (update said %s)", err, got, d5.ResourceVersion)
	}
}

func ptr[T any](v T) *T { return &v }

func TestConcurrentUpdatesConflict(t *testing.T) {
	s := testserver.New(t)
	ctx := ctxT(t)
	cms := client.For[*core.ConfigMap](s.Client)
	cm, err := cms.Create(ctx, &core.ConfigMap{ObjectMeta: meta.ObjectMeta{Name: "counter", Namespace: "default"}, Data: map[string]string{"n": "0"}})
	if err != nil {
		t.Fatal(err)
	}
	const writers = 8
	var wg sync.WaitGroup
	results := make(chan error, writers)
	for i := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			mine := *cm
			mine.Data = map[string]string{"n": string(rune('a' + i))}
			_, err := cms.Update(ctx, &mine) // all carry the same resourceVersion
			results <- err
		}()
	}
	wg.Wait()
	close(results)
	ok, conflicts := 0, 0
	for err := range results {
		switch {
		case err == nil:
			ok++
		case client.IsConflict(err):
			conflicts++
			if !strings.Contains(client.Message(err), "the object has been modified") {
				t.Errorf("conflict message: %s", client.Message(err))
			}
		default:
			t.Errorf("unexpected error: %v", err)
		}
	}
	if ok != 1 || conflicts != writers-1 {
		t.Fatalf("%d updates succeeded and %d conflicted; want 1 and %d", ok, conflicts, writers-1)
	}
}

func TestRestartKeepsObjectsUIDsAndRevisions(t *testing.T) {
	dir := t.TempDir()
	s, err := testserver.Start(dir, "")
	if err != nil {
		t.Fatal(err)
	}
	ctx := ctxT(t)
	created, err := client.For[*apps.Deployment](s.Client).Create(ctx, newDeployment("keep", 3))
	if err != nil {
		t.Fatal(err)
	}
	s.Stop()

	s2, err := testserver.Start(dir, "")
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Stop()
	got, err := client.For[*apps.Deployment](s2.Client).Get(ctx, "default", "keep")
	if err != nil {
		t.Fatal(err)
	}
	if got.UID != created.UID || got.ResourceVersion != created.ResourceVersion || *got.Spec.Replicas != 3 {
		t.Errorf("after restart: uid %s rv %s replicas %d; before: uid %s rv %s", got.UID, got.ResourceVersion, *got.Spec.Replicas, created.UID, created.ResourceVersion)
	}
	_, rev, err := client.For[*apps.Deployment](s2.Client).List(ctx, "", client.ListOptions{})
	if err != nil || rev < client.ResourceVersion(created) {
		t.Errorf("list revision %d after restart is behind the object's %s (%v)", rev, created.ResourceVersion, err)
	}
}

// TestWatchResumesAcrossRestart: a watcher that saw events up to revision R,
// then lost the server, resumes from R after the restart and receives every
// later event exactly once, in order.
func TestWatchResumesAcrossRestart(t *testing.T) {
	dir := t.TempDir()
	s, err := testserver.Start(dir, testserver.StableAddr())
	if err != nil {
		t.Fatal(err)
	}
	addr := s.Addr()
	ctx := ctxT(t)
	cms := client.For[*core.ConfigMap](s.Client)
	mk := func(c *client.Typed[*core.ConfigMap], name string) {
		t.Helper()
		if _, err := c.Create(ctx, &core.ConfigMap{ObjectMeta: meta.ObjectMeta{Name: name, Namespace: "default"}}); err != nil {
			t.Fatal(err)
		}
	}
	wctx, wcancel := context.WithCancel(ctx)
	w, err := cms.Watch(wctx, "default", client.ListOptions{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	mk(cms, "a")
	mk(cms, "b")
	var last int64
	for range 2 {
		ev := <-w.Events
		last = ev.ResourceVersion
	}
	wcancel()
	mk(cms, "c") // written while nobody watches
	s.Stop()

	s2, err := testserver.Start(dir, addr)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Stop()
	cms2 := client.For[*core.ConfigMap](s2.Client)
	mk(cms2, "d")
	if err := cms2.Delete(ctx, "default", "a", client.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	w2, err := cms2.Watch(ctx, "default", client.ListOptions{}, last)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"ADDED c", "ADDED d", "DELETED a"}
	var got []string
	prev := last
	for len(got) < len(want) {
		select {
		case ev := <-w2.Events:
			if ev.Type == "BOOKMARK" {
				continue
			}
			if ev.ResourceVersion <= prev {
				t.Fatalf("event %s %s at revision %d is not after %d", ev.Type, ev.Object.Name, ev.ResourceVersion, prev)
			}
			prev = ev.ResourceVersion
			got = append(got, ev.Type+" "+ev.Object.Name)
		case <-time.After(10 * time.Second):
			t.Fatalf("got %v, still waiting for %v", got, want)
		}
	}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("resumed events %v, want %v", got, want)
	}
	select {
	case ev := <-w2.Events:
		if ev.Type != "BOOKMARK" {
			t.Fatalf("extra event after the expected ones: %s %s", ev.Type, ev.Object.Name)
		}
	case <-time.After(300 * time.Millisecond):
	}
}

// TestWatchExpiredAndInformerRelists: history the informer needs is
// compacted while it is away; its watch gets "expired" and it lists again,
// reporting what changed meanwhile.
func TestWatchExpiredAndInformerRelists(t *testing.T) {
	dir := t.TempDir()
	s, err := testserver.Start(dir, testserver.StableAddr())
	if err != nil {
		t.Fatal(err)
	}
	addr := s.Addr()
	ctx := ctxT(t)
	cms := client.For[*core.ConfigMap](s.Client)
	for _, n := range []string{"one", "two"} {
		if _, err := cms.Create(ctx, &core.ConfigMap{ObjectMeta: meta.ObjectMeta{Name: n, Namespace: "default"}}); err != nil {
			t.Fatal(err)
		}
	}
	// The informer's own connection survives server restarts on the same address.
	ic, err := client.New(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer ic.Close()
	inf := client.NewInformer(client.For[*core.ConfigMap](ic), "default", client.ListOptions{})
	events := make(chan string, 100)
	inf.AddHandler(client.Handler[*core.ConfigMap]{
		OnAdd:    func(c *core.ConfigMap) { events <- "add " + c.Name },
		OnDelete: func(c *core.ConfigMap) { events <- "delete " + c.Name },
	})
	ictx, icancel := context.WithCancel(ctx)
	defer icancel()
	go inf.Run(ictx)
	if !client.WaitForSync(ctx, inf.HasSynced) {
		t.Fatal("informer did not sync")
	}
	oldRV := inf.LastResourceVersion()
	s.Stop()

	// Change things and compact on a server the informer cannot reach.
	side, err := testserver.Start(dir, "")
	if err != nil {
		t.Fatal(err)
	}
	sideCMs := client.For[*core.ConfigMap](side.Client)
	if _, err := sideCMs.Create(ctx, &core.ConfigMap{ObjectMeta: meta.ObjectMeta{Name: "three", Namespace: "default"}}); err != nil {
		t.Fatal(err)
	}
	if err := sideCMs.Delete(ctx, "default", "one", client.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	rev, err := side.Store().Revision(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := side.Store().Compact(ctx, rev); err != nil {
		t.Fatal(err)
	}
	// A plain watch from the old revision is told it expired.
	w, err := sideCMs.Watch(ctx, "default", client.ListOptions{}, oldRV)
	if err != nil {
		t.Fatal(err)
	}
	for range w.Events {
	}
	if !client.IsExpired(w.Err()) {
		t.Fatalf("watch from compacted revision %d: err %v, want expired", oldRV, w.Err())
	}
	side.Stop()

	s2, err := testserver.Start(dir, addr)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Stop()
	seen := map[string]bool{}
	for !(seen["add three"] && seen["delete one"]) {
		select {
		case e := <-events:
			seen[e] = true
		case <-time.After(20 * time.Second):
			t.Fatalf("informer did not report the changes made while it was away; saw %v", seen)
		}
	}
	if inf.Relists() < 1 {
		t.Errorf("informer relists = %d, want ≥ 1", inf.Relists())
	}
	if _, ok := inf.Get("default", "one"); ok {
		t.Error("deleted object still in the informer cache")
	}
	if len(inf.ByIndex(client.IndexNamespace, "default")) != 2 {
		t.Errorf("namespace index has %d objects, want 2", len(inf.ByIndex(client.IndexNamespace, "default")))
	}
}
