package ingress

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"
)

// Listeners are the controller's addresses: HTTP, HTTPS, and metrics
// (/metrics, /healthz); empty: not served.
type Listeners struct {
	HTTP, HTTPS, Metrics string
}

// Serve listens on the addresses and serves until ctx ends; the HTTP and
// HTTPS servers shut down gracefully (requests in flight finish, for up
// to 10 s). ready is called once every listener is open.
func (ic *Controller) Serve(ctx context.Context, l Listeners, ready func(http, https, metrics net.Addr)) error {
	var servers []*http.Server
	var addrs [3]net.Addr
	errs := make(chan error, 3)
	open := func(i int, addr string, h http.Handler, tlsConf *tls.Config) error {
		if addr == "" {
			return nil
		}
		lis, err := net.Listen("tcp", addr)
		if err != nil {
			return fmt.Errorf("listen %s: %w", addr, err)
		}
		addrs[i] = lis.Addr()
		srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 90 * time.Second, TLSConfig: tlsConf,
			ErrorLog: nil}
		servers = append(servers, srv)
		go func() {
			var err error
			if tlsConf != nil {
				err = srv.ServeTLS(lis, "", "")
			} else {
				err = srv.Serve(lis)
			}
			if !errors.Is(err, http.ErrServerClosed) {
				errs <- err
			}
		}()
		return nil
	}
	mux := http.NewServeMux()
	if ic.metrics != nil {
		mux.Handle("/metrics", ic.metrics.Handler())
	}
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		if !ic.Synced() {
			http.Error(w, "not synced yet", http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ok"))
	})
	closeAll := func() {
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		for _, s := range servers {
			_ = s.Shutdown(sctx)
		}
	}
	for i, o := range []struct {
		addr string
		h    http.Handler
		tls  *tls.Config
	}{{l.HTTP, ic, nil}, {l.HTTPS, ic, &tls.Config{GetCertificate: ic.GetCertificate, MinVersion: tls.VersionTLS12}}, {l.Metrics, mux, nil}} {
		if err := open(i, o.addr, o.h, o.tls); err != nil {
			closeAll()
			return err
		}
	}
	if ready != nil {
		ready(addrs[0], addrs[1], addrs[2])
	}
	select {
	case <-ctx.Done():
		closeAll()
		return nil
	case err := <-errs:
		closeAll()
		return err
	}
}
