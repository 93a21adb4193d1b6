package agent_test

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/kobune/kobune/agent/runtime"
	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/client"
)

// recordingRuntime notes when pods are stopped and containers killed, and
// with what grace.
type recordingRuntime struct {
	runtime.Runtime
	mu    sync.Mutex
	stops []stopCall
	kills []string
}

type stopCall struct {
	at    time.Time
	grace time.Duration
}

func (r *recordingRuntime) StopPod(ctx context.Context, uid string, grace time.Duration) error {
	r.mu.Lock()
	r.stops = append(r.stops, stopCall{time.Now(), grace})
	r.mu.Unlock()
	return r.Runtime.StopPod(ctx, uid, grace)
}

func (r *recordingRuntime) KillContainer(ctx context.Context, uid, name string, grace time.Duration) error {
	r.mu.Lock()
	r.kills = append(r.kills, name)
	r.mu.Unlock()
	return r.Runtime.KillContainer(ctx, uid, name, grace)
}

// hookServer answers the hooks' httpGet on loopback and records, for each
// path, when it was asked and what the API showed of the pod then.
type hookServer struct {
	mu    sync.Mutex
	calls map[string][]hookCall
}

type hookCall struct {
	at       time.Time
	phase    core.PodPhase
	deleting bool
}

func startHookServer(t *testing.T, ctx context.Context, pods *client.Typed[*core.Pod]) (*hookServer, int) {
	hs := &hookServer{calls: map[string][]hookCall{}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c := hookCall{at: time.Now()}
		if p, err := pods.Get(ctx, "default", "hooked"); err == nil {
			c.phase, c.deleting = p.Status.Phase, p.DeletionTimestamp != nil
		}
		hs.mu.Lock()
		hs.calls[r.URL.Path] = append(hs.calls[r.URL.Path], c)
		hs.mu.Unlock()
		switch r.URL.Path {
		case "/stopping":
			time.Sleep(time.Second) // a drain that takes a while
		case "/fail":
			http.Error(w, "no", http.StatusInternalServerError)
		}
	}))
	t.Cleanup(srv.Close)
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	n, _ := strconv.Atoi(port)
	return hs, n
}

func (hs *hookServer) get(path string) []hookCall {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	return append([]hookCall(nil), hs.calls[path]...)
}

func hookOn(port int, path string) *core.LifecycleHandler {
	return &core.LifecycleHandler{HTTPGet: &core.HTTPGetAction{Host: "127.0.0.1", Port: meta.FromInt(int32(port)), Path: path}}
}

// TestHooksRunAroundTheContainer: postStart runs before the pod is
// reported Running and only once (not again after an agent restart);
// preStop runs after the deletion began and before the containers are
// stopped, and SIGTERM gets the grace period minus the hook's time.
func TestHooksRunAroundTheContainer(t *testing.T) {
	s, ctx, fake := fakeNode(t, "10.244.1.0/24")
	rt := &recordingRuntime{Runtime: fake}
	stop := startAgent(t, ctx, s, rt)
	defer func() { stop() }()
	pods := client.For[*core.Pod](s.Client)
	hs, port := startHookServer(t, ctx, pods)
	grace := int64(10)
	if _, err := pods.Create(ctx, &core.Pod{ObjectMeta: meta.ObjectMeta{Name: "hooked", Namespace: "default"},
		Spec: core.PodSpec{NodeName: "node-1", TerminationGracePeriodSeconds: &grace, Containers: []core.Container{{Name: "app", Image: "kobune.local/labapp:1.0",
			Lifecycle: &core.Lifecycle{PostStart: hookOn(port, "/started"), PreStop: hookOn(port, "/stopping")}}}}}); err != nil {
		t.Fatal(err)
	}
	running := waitPod(t, ctx, s, "hooked", 0, func(p *core.Pod, _ bool) bool { return p.Status.Phase == core.PodRunning })
	started := hs.get("/started")
	if len(started) != 1 || started[0].phase == core.PodRunning {
		t.Fatalf("postStart calls %+v: want one, made before the pod was reported Running", started)
	}
	if len(hs.get("/stopping")) != 0 {
		t.Fatal("preStop ran for a pod nobody deleted")
	}

	stop()
	stop = startAgent(t, ctx, s, rt)
	time.Sleep(500 * time.Millisecond) // a resync's worth of time to (wrongly) run the hook again
	if n := len(hs.get("/started")); n != 1 {
		t.Errorf("postStart ran %d times; a restarted agent must not run it for a container it did not start", n)
	}

	if err := pods.Delete(ctx, "default", "hooked", client.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitPod(t, ctx, s, "hooked", client.ResourceVersion(running), func(_ *core.Pod, deleted bool) bool { return deleted })
	stopping := hs.get("/stopping")
	if len(stopping) != 1 || !stopping[0].deleting {
		t.Fatalf("preStop calls %+v: want one, after the deletion began", stopping)
	}
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if len(rt.stops) == 0 {
		t.Fatal("the pod was never stopped")
	}
	st := rt.stops[0]
	if st.at.Before(stopping[0].at.Add(time.Second)) {
		t.Errorf("containers stopped %v after preStop began; want after the hook returned (it takes 1 s)", st.at.Sub(stopping[0].at))
	}
	if st.grace > 9*time.Second || st.grace < 7*time.Second {
		t.Errorf("SIGTERM got %v of grace; want the 10 s grace period minus the hook's 1 s", st.grace)
	}
}

// TestFailedPostStartKillsTheContainer: a postStart hook that fails gives
// a FailedPostStartHook event and kills the container.
func TestFailedPostStartKillsTheContainer(t *testing.T) {
	s, ctx, fake := fakeNode(t, "10.244.1.0/24")
	rt := &recordingRuntime{Runtime: fake}
	stop := startAgent(t, ctx, s, rt)
	defer stop()
	pods := client.For[*core.Pod](s.Client)
	_, port := startHookServer(t, ctx, pods)
	if _, err := pods.Create(ctx, &core.Pod{ObjectMeta: meta.ObjectMeta{Name: "hooked", Namespace: "default"},
		Spec: core.PodSpec{NodeName: "node-1", Containers: []core.Container{{Name: "app", Image: "kobune.local/labapp:1.0",
			Lifecycle: &core.Lifecycle{PostStart: hookOn(port, "/fail")}}}}}); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		evs, _, _ := client.For[*core.Event](s.Client).List(ctx, "default", client.ListOptions{FieldSelector: "involvedObject.name=hooked,reason=FailedPostStartHook"})
		rt.mu.Lock()
		kills := append([]string(nil), rt.kills...)
		rt.mu.Unlock()
		if len(evs) == 1 && len(kills) == 1 && kills[0] == "app" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after a failed postStart: %d FailedPostStartHook events, kills %v; want 1 and [app]", len(evs), kills)
		}
	}
}
