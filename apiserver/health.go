package apiserver

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// serveHealth serves /healthz, /livez and /readyz (and their /NAME
// checks) without authentication, as Kubernetes lets anonymous callers
// read them: they say "ok" or which check fails, nothing else.
func (s *Server) serveHealth(w http.ResponseWriter, r *http.Request) {
	var err error
	if strings.HasPrefix(r.URL.Path, "/readyz") {
		err = s.readyCheck(r.Context())
	} else {
		err = s.healthCheck(r.Context())
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	fmt.Fprintln(w, "ok")
}

// healthCheck: etcd answers.
func (s *Server) healthCheck(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if _, err := s.store.Revision(ctx); err != nil {
		return fmt.Errorf("[-]etcd: %v", err)
	}
	return nil
}

// readyCheck also needs writes to work: a full etcd serves reads only.
func (s *Server) readyCheck(ctx context.Context) error {
	if alarmed, _, _ := s.space.State(); alarmed {
		return fmt.Errorf("[-]etcd-space: %s", s.space.Describe())
	}
	for _, m := range s.muxes {
		if m.refusing() {
			return fmt.Errorf("[-]connections: out of file descriptors: new connections on %s are refused for a moment (raise LimitNOFILE, or find the client holding them)", m.lis.Addr())
		}
	}
	return s.healthCheck(ctx)
}
