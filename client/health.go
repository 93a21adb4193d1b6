package client

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// HealthServer is what every Kobune component serves over HTTP, as
// Kubernetes' components do: /healthz (the process is alive), /readyz (it
// can do its work: every named check passes), /metrics (Prometheus), and
// 404 for any other path.
type HealthServer struct {
	// Metrics serves /metrics (a promhttp handler); nil answers 404.
	Metrics http.Handler
	// Paths are more pages by path (the agent's /stats/summary).
	Paths map[string]http.Handler

	mu     sync.Mutex
	checks []readyCheck
}

type readyCheck struct {
	name string
	fn   func() error
}

// AddReadyCheck adds a check /readyz runs; nil from fn means it passes.
func (h *HealthServer) AddReadyCheck(name string, fn func() error) {
	h.mu.Lock()
	h.checks = append(h.checks, readyCheck{name, fn})
	h.mu.Unlock()
}

// ServeHTTP implements http.Handler.
func (h *HealthServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/healthz", "/livez":
		fmt.Fprintln(w, "ok")
	case "/readyz":
		h.ready(w)
	case "/metrics":
		if h.Metrics == nil {
			http.NotFound(w, r)
			return
		}
		h.Metrics.ServeHTTP(w, r)
	default:
		if h, ok := h.Paths[r.URL.Path]; ok {
			h.ServeHTTP(w, r)
			return
		}
		http.Error(w, fmt.Sprintf("404 page not found: %s (this component serves /healthz, /readyz and /metrics)", r.URL.Path), http.StatusNotFound)
	}
}

// ready writes Kubernetes' /readyz?verbose format: a line per check.
func (h *HealthServer) ready(w http.ResponseWriter) {
	h.mu.Lock()
	checks := append([]readyCheck(nil), h.checks...)
	h.mu.Unlock()
	var b strings.Builder
	failed := false
	for _, c := range checks {
		if err := c.fn(); err != nil {
			failed = true
			fmt.Fprintf(&b, "[-]%s failed: %v\n", c.name, err)
		} else {
			fmt.Fprintf(&b, "[+]%s ok\n", c.name)
		}
	}
	if failed {
		w.WriteHeader(http.StatusServiceUnavailable)
		b.WriteString("readyz check failed\n")
	} else {
		b.WriteString("readyz check passed\n")
	}
	_, _ = w.Write([]byte(b.String()))
}

// Serve listens on addr and serves until ctx ends. The error is a failed
// listen (the address is taken); logf reports a later serving error.
func (h *HealthServer) Serve(ctx context.Context, addr string, logf func(string, ...any)) error {
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen on %s for /healthz, /readyz and /metrics: %w", addr, err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		srv.Close()
	}()
	go func() {
		if err := srv.Serve(lis); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logf("serve %s: %v", addr, err)
		}
	}()
	return nil
}

// Synced is a ready check: the caches have listed once.
func Synced(synced ...func() bool) func() error {
	return func() error {
		for _, s := range synced {
			if !s() {
				return errors.New("informer caches have not synced yet")
			}
		}
		return nil
	}
}
