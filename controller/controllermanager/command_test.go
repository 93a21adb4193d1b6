package controllermanager_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/apiserver/testserver"
	"github.com/kobune/kobune/client"
	"github.com/kobune/kobune/controller/controllermanager"
	"github.com/kobune/kobune/scheduler"
)

// getUntil polls url until it answers code with a body containing want.
func getUntil(t *testing.T, url string, code int, want string) {
	t.Helper()
	var got string
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		resp, err := http.Get(url)
		if err != nil {
			got = err.Error()
			continue
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		got = resp.Status + " " + string(b)
		if resp.StatusCode == code && strings.Contains(string(b), want) {
			return
		}
	}
	t.Errorf("GET %s: %.300s; want %d with %q", url, got, code, want)
}

// Issue #10 defect 12: kobune-controller had no /metrics, and the
// scheduler answered every path with its metrics page.
func TestCommandsServeHealthReadyAndMetrics(t *testing.T) {
	srv := testserver.New(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if _, err := client.For[*core.Node](srv.Client).Create(ctx, &core.Node{ObjectMeta: meta.ObjectMeta{Name: "n1"}}); err != nil {
		t.Fatal(err)
	}
	ctrl := controllermanager.Command{Server: srv.Addr(), MetricsListen: testserver.StableAddr()}
	ctrl.Leader.Elect = true
	ctrl.Leader.LeaseDuration, ctrl.Leader.RenewDeadline, ctrl.Leader.RetryPeriod = 15*time.Second, 10*time.Second, time.Second
	sched := scheduler.Command{Server: srv.Addr(), MetricsListen: testserver.StableAddr(), Name: "default-scheduler"}
	done := make(chan error, 2)
	go func() { done <- ctrl.Run(ctx) }()
	go func() { done <- sched.Run(ctx) }()
	for name, addr := range map[string]string{"controller": ctrl.MetricsListen, "scheduler": sched.MetricsListen} {
		getUntil(t, "http://"+addr+"/healthz", 200, "ok")
		getUntil(t, "http://"+addr+"/readyz", 200, "[+]informers-synced ok")
		getUntil(t, "http://"+addr+"/nonexistent", 404, "404 page not found")
		want := map[string]string{"controller": "kobune_controller_workqueue_depth", "scheduler": "kobune_scheduler_pending_pods"}[name]
		getUntil(t, "http://"+addr+"/metrics", 200, want)
	}
	getUntil(t, "http://"+ctrl.MetricsListen+"/metrics", 200, `kobune_controller_reconcile_total{controller="node-lifecycle-controller"`)
	cancel()
	for range 2 {
		if err := <-done; err != nil {
			t.Errorf("command: %v", err)
		}
	}
}
