package installer_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/apiserver/testserver"
	"github.com/kobune/kobune/client"
	"github.com/kobune/kobune/installer"
)

// TestSnapshotSaveAndRestore: a snapshot taken while 4 clients create
// ConfigMaps as fast as they can, the control plane's data wiped and
// restored from it: every object whose create was acknowledged at or
// before the snapshot's revision is there, with its content; the
// restored server's revisions are past every one it handed out before
// (a client's later resourceVersion is never taken for a newer state),
// and a watch from one of those is told to relist (Expired);
// a truncated or altered snapshot, and a restore over existing data, are
// refused and change nothing.
func TestSnapshotSaveAndRestore(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := t.TempDir()
	data := filepath.Join(dir, "etcd")
	s, err := testserver.Start(data, "")
	if err != nil {
		t.Fatal(err)
	}
	cms := client.For[*core.ConfigMap](s.Client)

	type acked struct {
		name string
		rv   int64
	}
	var mu sync.Mutex
	var done []acked
	stormCtx, stopStorm := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; stormCtx.Err() == nil; i++ {
				name := fmt.Sprintf("w%d-%d", w, i)
				cm, err := cms.Create(stormCtx, &core.ConfigMap{ObjectMeta: meta.ObjectMeta{Namespace: "default", Name: name}, Data: map[string]string{"n": name}})
				if err == nil {
					rv, _ := strconv.ParseInt(cm.ResourceVersion, 10, 64)
					mu.Lock()
					done = append(done, acked{name, rv})
					mu.Unlock()
				}
			}
		}()
	}
	time.Sleep(700 * time.Millisecond)
	file := filepath.Join(dir, "snap.db")
	info, err := installer.SaveSnapshot(ctx, data, file)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond) // creates after the snapshot
	stopStorm()
	wg.Wait()
	var maxRV int64
	before := 0
	for _, a := range done {
		maxRV = max(maxRV, a.rv)
		if a.rv <= info.Revision {
			before++
		}
	}
	t.Logf("snapshot at revision %d (%d keys, %d bytes): %d of %d acknowledged creates at or before it", info.Revision, info.Keys, info.Bytes, before, len(done))
	if before == 0 || before == len(done) {
		t.Fatalf("the snapshot was not taken during the storm: %d of %d creates before it", before, len(done))
	}
	s.Stop()

	// Refused: a truncated and an altered copy; a restore over data.
	whole, _ := os.ReadFile(file)
	for what, b := range map[string][]byte{"truncated": whole[:len(whole)-4096], "altered": append(append([]byte{}, whole[:100]...), append([]byte{whole[100] ^ 0xff}, whole[101:]...)...)} {
		bad := filepath.Join(dir, what+".db")
		os.WriteFile(bad, b, 0o600)
		target := filepath.Join(dir, "restored-"+what)
		if _, err := installer.RestoreSnapshot(bad, target); err == nil || !strings.Contains(err.Error(), "kobeadm snapshot save") {
			t.Errorf("restore from a %s snapshot: %v; want a refusal saying to take a new one", what, err)
		}
		if _, err := os.Stat(target); err == nil {
			t.Errorf("a refused restore (%s) made %s", what, target)
		}
	}
	if _, err := installer.RestoreSnapshot(file, data); err == nil || !strings.Contains(err.Error(), "not empty") {
		t.Errorf("restore over the existing data: %v; want a refusal", err)
	}

	// Wiped and restored.
	if err := os.RemoveAll(data); err != nil {
		t.Fatal(err)
	}
	if _, err := installer.RestoreSnapshot(file, data); err != nil {
		t.Fatal(err)
	}
	s, err = testserver.Start(data, "")
	if err != nil {
		t.Fatalf("the API server on the restored data: %v", err)
	}
	defer s.Stop()
	cms = client.For[*core.ConfigMap](s.Client)
	list, rv, err := cms.List(ctx, "default", client.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	have := map[string]bool{}
	for _, cm := range list {
		have[cm.Name] = cm.Data["n"] == cm.Name
	}
	missing := 0
	for _, a := range done {
		if a.rv <= info.Revision && !have[a.name] {
			missing++
		}
		if a.rv > info.Revision && have[a.name] {
			t.Errorf("%s (revision %d, after the snapshot's %d) is in the restored state", a.name, a.rv, info.Revision)
		}
	}
	if missing > 0 {
		t.Errorf("%d objects acknowledged before the snapshot are missing after the restore", missing)
	}
	if rv <= maxRV {
		t.Errorf("the restored server's revision %d is not past %d, the last one it handed out before", rv, maxRV)
	}
	// A client that watches on from a resourceVersion it got before the
	// restore is told its revision is gone (410 Expired, etcd's revisions
	// are marked compacted), so that an informer lists again instead of
	// waiting for changes that will never come at those revisions.
	wctx, wcancel := context.WithTimeout(ctx, 20*time.Second)
	defer wcancel()
	w, err := cms.Watch(wctx, "default", client.ListOptions{}, maxRV)
	if err == nil {
		for range w.Events {
		}
		err = w.Err()
	}
	if !client.IsExpired(err) {
		t.Errorf("a watch from revision %d, handed out before the restore: %v; want Expired, so that informers relist", maxRV, err)
	}
	// It takes writes.
	if _, err := cms.Create(ctx, &core.ConfigMap{ObjectMeta: meta.ObjectMeta{Namespace: "default", Name: "after-restore"}}); err != nil {
		t.Errorf("create after the restore: %v", err)
	}
}
