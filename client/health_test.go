package client_test

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/kobune/kobune/client"
)

// Issue #10 defect 12: the scheduler answered every path with its metrics.
func TestHealthServerPaths(t *testing.T) {
	h := &client.HealthServer{Metrics: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "# metrics\n") })}
	var synced atomic.Bool
	h.AddReadyCheck("informers", func() error {
		if !synced.Load() {
			return errors.New("caches not synced")
		}
		return nil
	})
	srv := httptest.NewServer(h)
	defer srv.Close()
	get := func(path string) (int, string) {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	tests := []struct {
		path string
		code int
		body string
	}{
		{"/healthz", 200, "ok"},
		{"/metrics", 200, "# metrics"},
		{"/readyz", 503, "[-]informers failed: caches not synced"},
		{"/nonexistent", 404, "404 page not found"},
		{"/", 404, "404 page not found"},
	}
	for _, tt := range tests {
		if code, body := get(tt.path); code != tt.code || !strings.Contains(body, tt.body) {
			t.Errorf("GET %s: %d %q, want %d containing %q", tt.path, code, body, tt.code, tt.body)
		}
	}
	synced.Store(true)
	if code, body := get("/readyz"); code != 200 || !strings.Contains(body, "[+]informers ok") {
		t.Errorf("GET /readyz when ready: %d %q", code, body)
	}
}
