package probe

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/kobune/kobune/api/core"
)

// Kind is liveness, readiness or startup.
type Kind string

// The probe kinds.
const (
	Liveness  Kind = "Liveness"
	Readiness Kind = "Readiness"
	Startup   Kind = "Startup"
)

// Result of a probe as the agent sees it.
type Result int

// Results: Unknown until the thresholds decide.
const (
	Unknown Result = iota
	Success
	Failure
)

// Execer runs a command in a container and returns its exit code.
type Execer interface {
	Exec(ctx context.Context, podUID, container string, cmd []string) (int, error)
}

// Target says where a container's probes go.
type Target struct {
	PodUID    string
	PodKey    string // namespace/name, for the callback
	PodIP     string
	Container *core.Container
	// ContainerID and Attempt identify the attempt: a restarted container
	// gets fresh probes (the runtime may give every attempt of a container
	// the same ID, so the attempt's number counts too).
	ContainerID string
	Attempt     int32
}

// Manager keeps one worker per probe of each running container.
type Manager struct {
	execer Execer
	// OnChange is called with the pod key whenever a result changes.
	OnChange func(podKey string)
	// OnFailure, when set, is called on every failed attempt, with why (the
	// kubelet's Unhealthy events).
	OnFailure func(t Target, kind Kind, err error)

	mu      sync.Mutex
	workers map[workerKey]*worker
}

type workerKey struct {
	containerID string
	kind        Kind
}

// NewManager returns a probe manager.
func NewManager(execer Execer, onChange func(podKey string)) *Manager {
	return &Manager{execer: execer, OnChange: onChange, workers: map[workerKey]*worker{}}
}

// Sync starts workers for the running containers in targets and stops
// those of containers that are gone (exited, restarted, deleted) among
// pods listed in podUIDs.
func (m *Manager) Sync(ctx context.Context, podUID string, targets []Target) {
	m.mu.Lock()
	defer m.mu.Unlock()
	live := map[workerKey]bool{}
	for _, t := range targets {
		for kind, p := range map[Kind]*core.Probe{Liveness: t.Container.LivenessProbe, Readiness: t.Container.ReadinessProbe, Startup: t.Container.StartupProbe} {
			if p == nil {
				continue
			}
			k := workerKey{t.ContainerID, kind}
			live[k] = true
			if w, ok := m.workers[k]; ok && w.target.Attempt != t.Attempt {
				close(w.stop) // a new attempt: its probes start over (initial delay, no result)
				delete(m.workers, k)
			}
			if _, ok := m.workers[k]; !ok {
				w := &worker{kind: kind, probe: p, target: t, m: m, stop: make(chan struct{})}
				m.workers[k] = w
				go w.run(ctx)
			}
		}
	}
	for k, w := range m.workers {
		if w.target.PodUID == podUID && !live[k] {
			close(w.stop)
			delete(m.workers, k)
		}
	}
}

// Forget stops every worker of a pod.
func (m *Manager) Forget(podUID string) { m.Sync(context.Background(), podUID, nil) }

// Get returns a probe's current result for a container attempt, and
// whether that probe exists.
func (m *Manager) Get(containerID string, kind Kind) (Result, bool) {
	m.mu.Lock()
	w, ok := m.workers[workerKey{containerID, kind}]
	m.mu.Unlock()
	if !ok {
		return Unknown, false
	}
	return w.get(), true
}

// worker probes one container with one probe.
type worker struct {
	kind   Kind
	probe  *core.Probe
	target Target
	m      *Manager
	stop   chan struct{}

	mu                  sync.Mutex
	result              Result
	successes, failures int32
}

func (w *worker) get() Result {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.result
}

func (w *worker) run(ctx context.Context) {
	wait := time.Duration(w.probe.InitialDelaySeconds) * time.Second
	period := time.Duration(max(w.probe.PeriodSeconds, 1)) * time.Second
	for {
		select {
		case <-ctx.Done():
			return
		case <-w.stop:
			return
		case <-time.After(wait):
		}
		wait = period
		if w.kind != Startup && w.startupPending() {
			continue // startup holds liveness and readiness off
		}
		if w.kind == Startup && w.get() == Success {
			continue // done: startup probes stop mattering once they succeed
		}
		timeout := time.Duration(max(w.probe.TimeoutSeconds, 1)) * time.Second
		pctx, cancel := context.WithTimeout(ctx, timeout)
		err := Run(pctx, w.m.execer, w.target, w.probe.ProbeHandler)
		cancel()
		if err != nil && w.m.OnFailure != nil {
			w.m.OnFailure(w.target, w.kind, err)
		}
		if w.record(err == nil) && w.m.OnChange != nil {
			w.m.OnChange(w.target.PodKey)
		}
	}
}

func (w *worker) startupPending() bool {
	if w.target.Container.StartupProbe == nil {
		return false
	}
	r, ok := w.m.Get(w.target.ContainerID, Startup)
	return ok && r != Success
}

// record counts one attempt and reports whether the result changed.
func (w *worker) record(ok bool) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return applyThresholds(&w.result, &w.successes, &w.failures, ok, max(w.probe.SuccessThreshold, 1), max(w.probe.FailureThreshold, 1))
}

// applyThresholds is the threshold rule on its own, for table tests: the
// result becomes Success after successThreshold successes in a row and
// Failure after failureThreshold failures in a row.
func applyThresholds(result *Result, successes, failures *int32, ok bool, successThreshold, failureThreshold int32) bool {
	before := *result
	if ok {
		*successes++
		*failures = 0
		if *successes >= successThreshold {
			*result = Success
		}
	} else {
		*failures++
		*successes = 0
		if *failures >= failureThreshold {
			*result = Failure
		}
	}
	return *result != before
}

// prober is the kubelet's HTTP prober: an HTTPS probe does not check the
// pod's certificate (it is rarely made for the pod's address: a webhook's
// is for its Service's name), no proxy is asked, and no connection is kept
// between probes.
var prober = &http.Client{Transport: &http.Transport{
	TLSClientConfig:   &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // the kubelet's probes do not verify either
	Proxy:             nil,
	DisableKeepAlives: true,
}}

// Run runs a handler once against a target: one probe attempt, or a
// lifecycle hook's exec or httpGet (the kubelet shares this code between
// probes and hooks too). nil means success.
func Run(ctx context.Context, execer Execer, t Target, p core.ProbeHandler) error {
	switch {
	case p.HTTPGet != nil:
		port, err := resolvePort(p.HTTPGet.Port, t.Container)
		if err != nil {
			return err
		}
		host := p.HTTPGet.Host
		if host == "" {
			host = t.PodIP
		}
		scheme := "http"
		if p.HTTPGet.Scheme == "HTTPS" {
			scheme = "https"
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("%s://%s%s", scheme, net.JoinHostPort(host, strconv.Itoa(port)), p.HTTPGet.Path), nil)
		if err != nil {
			return err
		}
		req.Header.Set("User-Agent", "kobune-probe/1.0")
		for _, h := range p.HTTPGet.HTTPHeaders {
			req.Header.Set(h.Name, h.Value)
		}
		resp, err := prober.Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode < 200 || resp.StatusCode >= 400 {
			return fmt.Errorf("HTTP probe failed with statuscode: %d", resp.StatusCode)
		}
		return nil
	case p.TCPSocket != nil:
		port, err := resolvePort(p.TCPSocket.Port, t.Container)
		if err != nil {
			return err
		}
		host := p.TCPSocket.Host
		if host == "" {
			host = t.PodIP
		}
		var d net.Dialer
		conn, err := d.DialContext(ctx, "tcp", net.JoinHostPort(host, strconv.Itoa(port)))
		if err != nil {
			return err
		}
		return conn.Close()
	case p.GRPC != nil:
		return grpcCheck(ctx, t.PodIP, p.GRPC)
	case p.Exec != nil:
		if execer == nil {
			return fmt.Errorf("exec is not supported by this runtime")
		}
		code, err := execer.Exec(ctx, t.PodUID, t.Container.Name, p.Exec.Command)
		if err != nil {
			return err
		}
		if code != 0 {
			return fmt.Errorf("command exited with %d", code)
		}
		return nil
	}
	return fmt.Errorf("probe has no handler")
}

// resolvePort turns a number or a named container port into a number.
func resolvePort(p interface {
	String() string
}, c *core.Container) (int, error) {
	if n, err := strconv.Atoi(p.String()); err == nil {
		return n, nil
	}
	for _, cp := range c.Ports {
		if cp.Name == p.String() {
			return int(cp.ContainerPort), nil
		}
	}
	return 0, fmt.Errorf("port %q is not a number nor a named port of container %s", p.String(), c.Name)
}

// grpcCheck is the kubelet's gRPC probe: one Health/Check call (the
// grpc.health.v1 protocol) to the pod's address and port, without TLS;
// only SERVING passes. The messages are the kubelet's.
func grpcCheck(ctx context.Context, podIP string, g *core.GRPCAction) error {
	addr := net.JoinHostPort(podIP, strconv.Itoa(int(g.Port)))
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()), grpc.WithUserAgent("kobune-probe/1.0"))
	if err != nil {
		return fmt.Errorf("failed to connect service %q: %w", addr, err)
	}
	defer conn.Close()
	service := ""
	if g.Service != nil {
		service = *g.Service
	}
	resp, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{Service: service}, grpc.WaitForReady(true))
	switch {
	case status.Code(err) == codes.Unimplemented:
		return fmt.Errorf("this server does not implement the grpc health protocol (grpc.health.v1.Health): %s", status.Convert(err).Message())
	case status.Code(err) == codes.DeadlineExceeded || ctx.Err() != nil:
		return fmt.Errorf("timeout: health rpc did not complete within the probe's timeout (%s)", addr)
	case err != nil:
		return fmt.Errorf("health rpc probe failed: %s", status.Convert(err).Message())
	case resp.GetStatus() != healthpb.HealthCheckResponse_SERVING:
		return fmt.Errorf("service unhealthy (responded with %q)", resp.GetStatus())
	}
	return nil
}
