package installer_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/apiserver/testserver"
	"github.com/kobune/kobune/client"
	"github.com/kobune/kobune/installer"
	"github.com/kobune/kobune/test/benchreport"
)

// TestBenchSnapshot is `make bench`'s backup benchmark (only when
// KOBUNE_BENCH_REPORT names the report): 10,000 ConfigMaps of 1 KiB in
// an API server's embedded etcd; kobeadm snapshot save while it runs,
// status (the integrity check), restore into a new data directory, and an
// API server started on it listing all 10,000.
func TestBenchSnapshot(t *testing.T) {
	report := benchreport.Path(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	dir := t.TempDir()
	data := filepath.Join(dir, "etcd")
	s, err := testserver.Start(data, "")
	if err != nil {
		t.Fatal(err)
	}
	const n = 10000
	payload := string(make([]byte, 1024))
	var next atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for w := 0; w < 16; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := next.Add(1); i <= n; i = next.Add(1) {
				if _, err := client.For[*core.ConfigMap](s.Client).Create(ctx, &core.ConfigMap{ObjectMeta: meta.ObjectMeta{Namespace: "default", Name: fmt.Sprintf("cm-%05d", i)},
					Data: map[string]string{"payload": payload}}); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	fill := time.Since(start)
	file := filepath.Join(dir, "snap.db")
	start = time.Now()
	info, err := installer.SaveSnapshot(ctx, data, file)
	save := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	s.Stop()
	start = time.Now()
	if _, err := installer.CheckSnapshot(file); err != nil {
		t.Fatal(err)
	}
	check := time.Since(start)
	restored := filepath.Join(dir, "restored")
	start = time.Now()
	if _, err := installer.RestoreSnapshot(file, restored); err != nil {
		t.Fatal(err)
	}
	restore := time.Since(start)
	start = time.Now()
	s2, err := testserver.Start(restored, "")
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Stop()
	boot := time.Since(start)
	list, _, err := client.For[*core.ConfigMap](s2.Client).List(ctx, "default", client.ListOptions{})
	if err != nil || len(list) < n {
		t.Fatalf("after the restore: %d ConfigMaps (%v), want %d", len(list), err, n)
	}
	st, _ := os.Stat(file)
	ms := func(d time.Duration) string { return fmt.Sprintf("%d ms", d.Milliseconds()) }
	benchreport.Append(t, report, fmt.Sprintf(`
## Backups: snapshot save and restore (installer TestBenchSnapshot)

Written by `+"`make bench`"+` on %s: %d ConfigMaps of 1 KiB written by 16 clients (%.1f s) into an API server's embedded etcd; `+"`kobeadm snapshot save`"+` (etcd's snapshot API over the data directory's client socket, the server running), `+"`snapshot status`"+` (the SHA-256 check), `+"`snapshot restore`"+` into a new data directory (etcd's own restore, the revision moved on by a billion), and an API server started on it, listing all %d.

| snapshot | save | status | restore | API server up on it |
|---|---|---|---|---|
| %.1f MB, revision %d, %d keys | %s | %s | %s | %s |
`, time.Now().UTC().Format("2006-01-02 15:04 MST"), n, fill.Seconds(), len(list), float64(st.Size())/1e6, info.Revision, info.Keys, ms(save), ms(check), ms(restore), ms(boot)))
}
