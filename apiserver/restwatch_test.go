package apiserver_test

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/apiserver/rest"
	"github.com/kobune/kobune/apiserver/storage"
	"github.com/kobune/kobune/apiserver/testserver"
	"github.com/kobune/kobune/client"
)

// TestRESTWatcherThatNeverReadsIsClosed (issue #35): 20 REST watches from
// clients that never read, while 100 MiB of changes are written. Each
// handler used to block for good in its write, holding the events queued
// behind it (20 such watchers took the server from 0.5 to 5 GB, and they
// were never closed). Now a write that cannot go out within
// rest.WatchWriteTimeout closes the watch: every connection is closed by
// the server, the handlers are gone, and what they held is freed.
func TestRESTWatcherThatNeverReadsIsClosed(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("writes 100 MiB through etcd: too slow under -short or -race (the plain run of make test has it)")
	}
	writeTimeout, budget := rest.WatchWriteTimeout, storage.SlowWatcherBudget
	rest.WatchWriteTimeout = 2 * time.Second
	storage.SlowWatcherBudget = time.Second
	t.Cleanup(func() { rest.WatchWriteTimeout, storage.SlowWatcherBudget = writeTimeout, budget })
	srv := testserver.New(t)
	ctx := ctxT(t)
	cms := client.For[*core.ConfigMap](srv.Client)
	value := strings.Repeat("x", 512<<10)
	created, err := cms.Create(ctx, &core.ConfigMap{ObjectMeta: meta.ObjectMeta{Name: "big", Namespace: "default"}, Data: map[string]string{"v": value}})
	if err != nil {
		t.Fatal(err)
	}
	baseHeap, baseGoroutines := heapAlloc(), runtime.NumGoroutine()

	const watchers = 20
	conns := make([]*net.TCPConn, watchers)
	for i := range conns {
		c, err := net.Dial("tcp", srv.Addr())
		if err != nil {
			t.Fatal(err)
		}
		conns[i] = c.(*net.TCPConn)
		defer c.Close()
		if _, err := io.WriteString(c, "GET /api/v1/namespaces/default/configmaps?watch=true&resourceVersion="+strconv.FormatInt(client.ResourceVersion(created), 10)+" HTTP/1.1\r\nHost: kobune\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
	}
	var peak uint64
	for i := range 200 { // × 512 KiB = 100 MiB of events
		created.Data = map[string]string{"v": value[:len(value)-i-1]}
		if created, err = cms.Update(ctx, created); err != nil {
			t.Fatal(err)
		}
		if i%50 == 49 {
			peak = max(peak, heapAlloc())
		}
	}
	// Every watch is ended by the server: what a connection still yields
	// is what the kernel's buffers held, then the end of the watch — the
	// connection closed (the write that could not go out timed out), or the
	// response's last chunk (the store dropped the watcher first, the
	// handler returned, and HTTP/1.1 keeps the connection for another
	// request). Which comes first depends on the machine's load.
	for i, c := range conns {
		_ = c.SetReadDeadline(time.Now().Add(rest.WatchWriteTimeout + 15*time.Second))
		var n int64
		br := bufio.NewReader(c)
		resp, err := http.ReadResponse(br, nil)
		if err == nil {
			n, err = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		if err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) {
				t.Fatalf("watcher %d: still open after %v (%d bytes read): the server never closed the watch of a client that did not read", i, rest.WatchWriteTimeout+15*time.Second, n)
			}
			t.Logf("watcher %d: %v after %d bytes", i, err, n) // a reset is a close too
		}
		if n > 64<<20 {
			t.Errorf("watcher %d: %d MiB delivered after it stopped reading; want what its buffers held, not the whole 100 MiB", i, n>>20)
		}
		c.Close() // a kept connection's goroutine goes with it
	}
	var after uint64
	var goroutines int
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		after, goroutines = heapAlloc(), runtime.NumGoroutine()
		if goroutines <= baseGoroutines+5 || time.Now().After(deadline) {
			break
		}
	}
	t.Logf("heap: %d MiB at the start, peak %d MiB while 100 MiB were written to 20 watchers that did not read, %d MiB once they were closed; goroutines %d → %d",
		baseHeap>>20, peak>>20, after>>20, baseGoroutines, goroutines)
	if goroutines > baseGoroutines+5 {
		t.Errorf("%d goroutines once the watchers were closed, %d before they came: their handlers are still there", goroutines, baseGoroutines)
	}
	if grew := int64(after) - int64(baseHeap); grew > 256<<20 {
		t.Errorf("the heap is %d MiB larger once the watchers were closed; want what they held freed (< 256 MiB, etcd's recent raft log included)", grew>>20)
	}
}
