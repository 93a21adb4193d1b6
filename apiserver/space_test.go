package apiserver_test

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/apiserver"
	"github.com/kobune/kobune/apiserver/testserver"
	"github.com/kobune/kobune/client"
)

// Issue #10, defect 8: filling etcd made every write fail and then the API
// server could not start again at all. Now it starts on a full database and
// serves reads, says so in /readyz, its metrics and every refused write,
// and gets writes back by itself once objects are deleted.
func TestFullDatabaseStartsServesReadsAndRecovers(t *testing.T) {
	small := func(c *apiserver.Config) {
		c.EtcdQuotaBytes = 24 << 20
		c.SpaceCheckInterval = 200 * time.Millisecond
		c.Logf = t.Logf
	}
	dir := t.TempDir()
	srv, err := testserver.Start(dir, "", small)
	if err != nil {
		t.Fatal(err)
	}
	ctx := ctxT(t)
	cms := client.For[*core.ConfigMap](srv.Client)
	value := strings.Repeat("x", 1<<20)
	// Fill until writes have failed for 2 s on end: by then the API server's
	// own compaction and defragmentation cannot make room any more.
	var stored, failing int
	for i := 0; failing < 10; i++ {
		cm := &core.ConfigMap{ObjectMeta: meta.ObjectMeta{Name: fmt.Sprintf("fill-%d", i), Namespace: "default"}, Data: map[string]string{"v": value}}
		_, err := cms.Create(ctx, cm)
		switch {
		case err == nil:
			stored, failing = stored+1, 0
		case status.Code(err) == codes.ResourceExhausted && strings.Contains(err.Error(), "database space exceeded"):
			failing++
			time.Sleep(200 * time.Millisecond)
		default:
			t.Fatalf("write %d on a filling database: %v, want ResourceExhausted: database space exceeded", i, err)
		}
	}
	t.Logf("%d ConfigMaps of 1 MiB filled a 24 MiB quota", stored)
	srv.Stop()

	srv, err = testserver.Start(dir, "", small)
	if err != nil {
		t.Fatalf("the API server does not start on a full database: %v", err)
	}
	defer srv.Stop()
	cms = client.For[*core.ConfigMap](srv.Client)
	list, _, err := cms.List(ctx, "default", client.ListOptions{})
	// etcd applies a write that crosses the quota before it reports
	// NOSPACE (its quotaApplier), so such a write may be there too.
	if err != nil || len(list) < stored || len(list) > stored+10 {
		t.Fatalf("reads on a full database: %d objects, %v; want %d (or a few more)", len(list), err, stored)
	}
	get := func(path string) (int, string) {
		resp, err := http.Get("http://" + srv.MetricsAddr() + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		code, body := get("/readyz")
		if code == http.StatusServiceUnavailable && strings.Contains(body, "NOSPACE") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/readyz on a full database: %d %q", code, body)
		}
	}
	// Over REST a refused write is a 500 without Retry-After, as
	// kube-apiserver answers a full etcd: kubectl and client-go do not
	// retry it in a loop (a 429 made them retry for 10 s).
	rc := newRESTClient(t, client.Config{}, srv.Addr())
	code, hdr, b := rc.do("POST", "/api/v1/namespaces/default/configmaps", "", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"rest"},"data":{"v":"`+value+`"}}`)
	if code != http.StatusInternalServerError || hdr.Get("Retry-After") != "" || !strings.Contains(string(b), "database space exceeded") {
		t.Errorf("REST create on a full database: %d, Retry-After %q: %s; want 500 without Retry-After", code, hdr.Get("Retry-After"), b)
	}
	if code, _ := get("/healthz"); code != http.StatusOK {
		t.Errorf("/healthz on a full database: %d, want 200 (the server is alive and serves reads)", code)
	}
	if _, body := get("/metrics"); !strings.Contains(body, "kobune_apiserver_storage_nospace_alarm 1") {
		t.Errorf("metrics lack kobune_apiserver_storage_nospace_alarm 1")
	}
	// Deletes work on a full database; afterwards writes come back by themselves.
	for _, cm := range list {
		if err := cms.Delete(ctx, "default", cm.Name, client.DeleteOptions{}); err != nil {
			t.Fatalf("delete on a full database: %v", err)
		}
	}
	cm := &core.ConfigMap{ObjectMeta: meta.ObjectMeta{Name: "after", Namespace: "default"}, Data: map[string]string{"v": "x"}}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		_, err := cms.Create(ctx, cm)
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("30 s after the deletes, writes still fail: %v", err)
		}
	}
	// The first write can pass between etcd's disarming the alarm and the
	// server's saying so (it clears its own record after the defrag): the
	// readiness follows within seconds.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		code, body := get("/readyz")
		_, metrics := get("/metrics")
		if code == http.StatusOK && strings.Contains(metrics, "kobune_apiserver_storage_nospace_alarm 0") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("30 s after writes work again, /readyz: %d %q; alarm metric cleared: %v", code, body, strings.Contains(metrics, "kobune_apiserver_storage_nospace_alarm 0"))
		}
	}
}
