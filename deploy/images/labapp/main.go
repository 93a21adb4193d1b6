// Command labapp is the workload of Kobune's labs and end-to-end tests: a
// small static HTTP server whose behaviour can be switched at run time to
// show what the orchestrator does about it.
//
//	GET  /                   "labapp <version> on <hostname>"
//	GET  /healthz            200 while alive (liveness probes)
//	GET  /readyz             200 when ready, 503 when switched off (readiness probes)
//	POST /readyz/on|off      switch readiness
//	POST /exit?code=N&after=D  exit with code N, now or after duration D
//	POST /alloc?mb=N         allocate and touch N MiB (to meet a memory limit)
//	POST /burn?seconds=S     burn one CPU for S seconds (to meet a CPU limit)
//
// The same through flags at start: --exit-code/--exit-after, --alloc-mb,
// --burn-seconds, --not-ready; --term-delay delays the exit after SIGTERM
// (to watch terminationGracePeriodSeconds); --start-delay waits before
// listening (an app warming up: what a readiness probe is for);
// --udp-listen also answers UDP datagrams. With --udp-client it is instead
// a UDP client that sends from one source port and prints the answers.
// Every request is logged.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// version is set at build time: -ldflags "-X main.version=1.0".
var version = "dev"

type app struct {
	ready    atomic.Bool
	mu       sync.Mutex
	hoard    [][]byte // memory kept alive on purpose
	hostname string
}

func main() {
	listen := flag.String("listen", ":8080", "address to serve on")
	exitCode := flag.Int("exit-code", -1, "exit with this code (after --exit-after); -1: do not")
	exitAfter := flag.Duration("exit-after", 0, "when to exit with --exit-code")
	allocMB := flag.Int("alloc-mb", 0, "allocate this many MiB at start (or after --alloc-after)")
	allocAfter := flag.Duration("alloc-after", 0, "wait this long before allocating --alloc-mb (to make memory pressure at a chosen moment)")
	burn := flag.Duration("burn-seconds", 0, "burn one CPU for this long at start")
	notReady := flag.Bool("not-ready", false, "start with /readyz failing")
	termDelay := flag.Duration("term-delay", 0, "on SIGTERM, wait this long before exiting")
	startDelay := flag.Duration("start-delay", 0, "wait this long before listening (an app warming up)")
	udpListen := flag.String("udp-listen", "", "also answer UDP datagrams on this address")
	udpTarget := flag.String("udp-client", "", "instead of serving: send datagrams to this host:port and print the answers")
	udpSource := flag.Int("udp-source-port", 40000, "the UDP client's source port (one flow)")
	udpCount := flag.Int("udp-count", 100, "datagrams the UDP client sends")
	udpInterval := flag.Duration("udp-interval", 100*time.Millisecond, "between the UDP client's datagrams (and its answer timeout)")
	flag.Parse()
	if *udpTarget != "" {
		udpClient(*udpTarget, *udpSource, *udpCount, *udpInterval)
		return
	}

	a := &app{}
	a.hostname, _ = os.Hostname()
	a.ready.Store(!*notReady)
	log.SetFlags(log.LstdFlags | log.Lmicroseconds)
	log.Printf("labapp %s starting on %s as %s", version, *listen, a.hostname)
	if *allocMB > 0 && *allocAfter > 0 {
		go func() { time.Sleep(*allocAfter); a.alloc(*allocMB) }()
	} else if *allocMB > 0 {
		a.alloc(*allocMB)
	}
	if *burn > 0 {
		go burnCPU(*burn)
	}
	if *exitCode >= 0 {
		go a.exitLater(*exitCode, *exitAfter)
	}
	if *udpListen != "" {
		go a.serveUDP(*udpListen)
	}

	srv := &http.Server{Addr: *listen, Handler: a.routes(), ReadHeaderTimeout: 10 * time.Second}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		s := <-sigs
		log.Printf("received %v; exiting in %v", s, *termDelay)
		time.Sleep(*termDelay)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	}()
	if *startDelay > 0 {
		log.Printf("warming up for %v before listening", *startDelay)
		time.Sleep(*startDelay)
	}
	if err := srv.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
		log.Fatalf("serve: %v", err)
	}
	log.Printf("labapp stopped")
}

func (a *app) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "labapp %s on %s\n", version, a.hostname)
	})
	// Any other page answers the same line with its path, so a request
	// routed by path (an Ingress) shows where it went.
	mux.HandleFunc("GET /page/", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "labapp %s on %s %s\n", version, a.hostname, r.URL.Path)
	})
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, "ok") })
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		if !a.ready.Load() {
			http.Error(w, "not ready", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ready")
	})
	mux.HandleFunc("POST /readyz/{state}", func(w http.ResponseWriter, r *http.Request) {
		switch r.PathValue("state") {
		case "on":
			a.ready.Store(true)
		case "off":
			a.ready.Store(false)
		default:
			http.Error(w, "use /readyz/on or /readyz/off", http.StatusBadRequest)
			return
		}
		fmt.Fprintf(w, "ready=%v\n", a.ready.Load())
	})
	mux.HandleFunc("POST /exit", func(w http.ResponseWriter, r *http.Request) {
		code, err := strconv.Atoi(r.URL.Query().Get("code"))
		after, err2 := parseDuration(r.URL.Query().Get("after"))
		if err != nil || err2 != nil {
			http.Error(w, "use /exit?code=N[&after=5s]", http.StatusBadRequest)
			return
		}
		fmt.Fprintf(w, "exiting with %d in %v\n", code, after)
		go a.exitLater(code, after)
	})
	mux.HandleFunc("POST /alloc", func(w http.ResponseWriter, r *http.Request) {
		mb, err := strconv.Atoi(r.URL.Query().Get("mb"))
		if err != nil || mb <= 0 {
			http.Error(w, "use /alloc?mb=N", http.StatusBadRequest)
			return
		}
		fmt.Fprintf(w, "holding %d MiB in total\n", a.alloc(mb))
	})
	mux.HandleFunc("POST /burn", func(w http.ResponseWriter, r *http.Request) {
		d, err := parseDuration(r.URL.Query().Get("seconds") + "s")
		if err != nil {
			http.Error(w, "use /burn?seconds=N", http.StatusBadRequest)
			return
		}
		go burnCPU(d)
		fmt.Fprintf(w, "burning one CPU for %v\n", d)
	})
	return logRequests(mux)
}

func parseDuration(s string) (time.Duration, error) {
	if s == "" {
		return 0, nil
	}
	return time.ParseDuration(s)
}

func (a *app) exitLater(code int, after time.Duration) {
	time.Sleep(after)
	log.Printf("exiting with code %d as asked", code)
	os.Exit(code)
}

// alloc allocates mb MiB and writes every page so it counts against the
// memory limit; it returns the total held.
func (a *app) alloc(mb int) int {
	buf := make([]byte, mb<<20)
	for i := 0; i < len(buf); i += 4096 {
		buf[i] = 1
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.hoard = append(a.hoard, buf)
	total := 0
	for _, b := range a.hoard {
		total += len(b) >> 20
	}
	log.Printf("allocated %d MiB (holding %d MiB)", mb, total)
	return total
}

func burnCPU(d time.Duration) {
	log.Printf("burning one CPU for %v", d)
	end := time.Now().Add(d)
	x := 0
	for time.Now().Before(end) {
		for i := 0; i < 1_000_000; i++ {
			x += i
		}
	}
	_ = x
}

func logRequests(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &statusRecorder{ResponseWriter: w, status: 200}
		h.ServeHTTP(rec, r)
		log.Printf("%s %s %s %d %v", r.RemoteAddr, r.Method, r.URL.RequestURI(), rec.status, time.Since(start).Round(time.Microsecond))
	})
}

type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (s *statusRecorder) WriteHeader(code int) {
	s.status = code
	s.ResponseWriter.WriteHeader(code)
}
