package e2e

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/apiserver/testserver"
	"github.com/kobune/kobune/client"
	"github.com/kobune/kobune/ctl"
)

// TestLogsAndExec: kobectl logs (all, --tail, --previous) and exec (output,
// stderr, exit status, stdin) go through the API server to the node; the
// containers have the Service link variables of the Services that existed
// when they started.
func TestLogsAndExec(t *testing.T) {
	requireRoot(t)
	srv, nodes := startCluster(t, 1)
	nodes[0].startAgent(t, "10.244.86.0/24")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	pods := client.For[*core.Pod](srv.Client)
	svc, err := client.For[*core.Service](srv.Client).Create(ctx, &core.Service{ObjectMeta: meta.ObjectMeta{Name: "web-api", Namespace: "default"},
		Spec: core.ServiceSpec{Selector: map[string]string{"app": "web"}, Ports: []core.ServicePort{{Name: "http", Port: 80}}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []*core.Pod{
		{ObjectMeta: meta.ObjectMeta{Name: "shell", Namespace: "default"}, Spec: core.PodSpec{NodeName: "node-1",
			Containers: []core.Container{{Name: "sh", Image: "kobune.local/busybox:1.35", ImagePullPolicy: core.PullNever,
				Command: []string{"sh", "-c", "echo first line; echo second line; exec sleep 3600"}}}}},
		{ObjectMeta: meta.ObjectMeta{Name: "crasher", Namespace: "default"}, Spec: core.PodSpec{NodeName: "node-1",
			Containers: []core.Container{{Name: "app", Image: "kobune.local/labapp:1.0", ImagePullPolicy: core.PullNever,
				Args: []string{"--exit-code", "3", "--exit-after", "300ms"}}}}},
	} {
		if _, err := pods.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	waitForPod(t, ctx, pods, "shell", 0, func(p *core.Pod, _ bool) bool { return p.Status.Phase == core.PodRunning })
	kobectl := func(stdin string, args ...string) (string, string, int) {
		var out, errOut bytes.Buffer
		code := ctl.RunContext(ctx, append(kobectlArgs(srv.Addr()), args...), strings.NewReader(stdin), &out, &errOut)
		return out.String(), errOut.String(), code
	}
	deadline := time.Now().Add(20 * time.Second)
	var out, errOut string
	var code int
	for time.Now().Before(deadline) { // the shell writes its lines right after starting
		if out, errOut, code = kobectl("", "logs", "shell"); strings.Contains(out, "second line") {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if out != "first line\nsecond line\n" || code != 0 {
		t.Errorf("logs = %q (%s, %d)", out, errOut, code)
	}
	if out, _, _ := kobectl("", "logs", "shell", "--tail", "1"); out != "second line\n" {
		t.Errorf("logs --tail 1 = %q", out)
	}
	// Over a WebSocket, as the conformance suite reads logs: binary
	// messages (binary.k8s.io) or base64 text (base64.binary.k8s.io),
	// then a close.
	// The suite's client (golang.org/x/net/websocket) sends Origin
	// http://localhost; a page of another site is refused.
	for proto, want := range map[string]string{"binary.k8s.io": "first line\nsecond line\n", "base64.binary.k8s.io": "Zmlyc3QgbGluZQpzZWNvbmQgbGluZQo="} {
		if got := websocketLogs(t, srv.Addr(), "/api/v1/namespaces/default/pods/shell/log?container=sh", proto, "http://localhost"); got != want {
			t.Errorf("logs over a WebSocket (%s): %q, want %q", proto, got, want)
		}
	}
	if ws, resp, err := dialWebSocket(t, srv.Addr(), "/api/v1/namespaces/default/pods/shell/log?container=sh", "binary.k8s.io", "https://evil.example"); err == nil || resp == nil || resp.StatusCode != http.StatusForbidden {
		if ws != nil {
			ws.Close()
		}
		t.Errorf("a WebSocket from a page of another site: %v (%v); want 403", err, resp)
	}
	// Exec over the channel protocol's first version, as the conformance
	// suite speaks it: stdout on channel 1; the error channel (3) says
	// nothing on success and a failure's message as text.
	exec := "/api/v1/namespaces/default/pods/shell/exec?container=sh&stdout=1&command=sh&command=-c&command="
	if got := websocketLogs(t, srv.Addr(), exec+"echo+remote", "channel.k8s.io", ""); got != "\x01remote\n" {
		t.Errorf("exec over channel.k8s.io: %q, want %q", got, "\x01remote\n")
	}
	if got := websocketLogs(t, srv.Addr(), exec+"exit+3", "channel.k8s.io", ""); !strings.HasPrefix(got, "\x03command terminated with non-zero exit code") {
		t.Errorf("a failing exec over channel.k8s.io: %q, want its message as text on channel 3", got)
	}
	out, errOut, code = kobectl("", "exec", "shell", "--", "sh", "-c", "echo to-stdout; echo to-stderr >&2; exit 3")
	if out != "to-stdout\n" || !strings.Contains(errOut, "to-stderr") || code != 3 {
		t.Errorf("exec: stdout %q stderr %q exit %d; want to-stdout, to-stderr, 3", out, errOut, code)
	}
	want := svc.Spec.ClusterIP + " 80 tcp://" + svc.Spec.ClusterIP + ":80 10.96.0.1 443\n"
	if out, errOut, _ := kobectl("", "exec", "shell", "--", "sh", "-c", "echo $WEB_API_SERVICE_HOST $WEB_API_SERVICE_PORT_HTTP $WEB_API_PORT $KUBERNETES_SERVICE_HOST $KUBERNETES_SERVICE_PORT"); out != want {
		t.Errorf("Service link variables: %q (%s), want %q", out, errOut, want)
	}
	if out, errOut, code := kobectl("hello from stdin\n", "exec", "-i", "shell", "--", "cat"); out != "hello from stdin\n" || code != 0 {
		t.Errorf("exec -i cat = %q (%s, %d)", out, errOut, code)
	}

	waitForPod(t, ctx, pods, "crasher", 0, func(p *core.Pod, _ bool) bool {
		return len(p.Status.ContainerStatuses) > 0 && p.Status.ContainerStatuses[0].RestartCount >= 1
	})
	// The runtime's shim writes the log file itself and may finish writing
	// the last line of the exited attempt just after its exit is reported
	// (seen once: the restart counted, the last line not there yet); it is
	// there within moments.
	var prev, prevErr string
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if prev, prevErr, _ = kobectl("", "logs", "crasher", "--previous"); strings.Contains(prev, "exiting with code 3") {
			break
		}
	}
	if !strings.Contains(prev, "exiting with code 3") {
		t.Errorf("logs --previous = %q (%s)", prev, prevErr)
	}
	if _, errOut, code := kobectl("", "logs", "shell", "--previous"); code == 0 || !strings.Contains(errOut, "previous terminated container") {
		t.Errorf("logs --previous of a container that never restarted: %d %q", code, errOut)
	}

	logTimes(t, ctx, srv, nodes[0], kobectl)
}

// logTimes: every line has the time it was written, also the lines written
// while the agent was down (the logging process outlives the agent), and
// --since-time and --since choose by it; no line is lost or doubled.
func logTimes(t *testing.T, ctx context.Context, srv *testserver.Server, n *node, kobectl func(string, ...string) (string, string, int)) {
	pods := client.For[*core.Pod](srv.Client)
	if _, err := pods.Create(ctx, &core.Pod{ObjectMeta: meta.ObjectMeta{Name: "ticker", Namespace: "default"}, Spec: core.PodSpec{NodeName: "node-1",
		Containers: []core.Container{{Name: "sh", Image: "kobune.local/busybox:1.35", ImagePullPolicy: core.PullNever,
			Command: []string{"sh", "-c", "i=0; while true; do echo tick $i; i=$((i+1)); sleep 0.2; done"}}}}}); err != nil {
		t.Fatal(err)
	}
	waitForPod(t, ctx, pods, "ticker", 0, func(p *core.Pod, _ bool) bool { return p.Status.Phase == core.PodRunning })
	time.Sleep(time.Second)
	down := time.Now()
	n.killAgent()
	time.Sleep(3 * time.Second)
	up := time.Now()
	n.startAgent(t, "10.244.86.0/24")
	type line struct {
		at   time.Time
		tick int
	}
	var lines []line
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		out, errOut, code := kobectl("", "logs", "ticker", "--timestamps")
		lines = lines[:0]
		for _, l := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
			if code != 0 || out == "" { // the agent is not serving yet
				break
			}
			var ts string
			var tick int
			if _, err := fmt.Sscanf(l, "%s tick %d", &ts, &tick); err != nil {
				t.Fatalf("logs --timestamps: line %q: %v (all: %q)", l, err, out)
			}
			at, err := time.Parse(time.RFC3339Nano, ts)
			if err != nil {
				t.Fatalf("logs --timestamps: line %q: %v", l, err)
			}
			lines = append(lines, line{at, tick})
		}
		if code == 0 && len(lines) > 0 && lines[len(lines)-1].at.After(up) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("logs --timestamps after the agent came back: %q %s %d", out, errOut, code)
		}
	}
	during := 0
	for i, l := range lines {
		if l.tick != i {
			t.Fatalf("line %d is tick %d: a line lost or doubled (%v)", i, l.tick, lines)
		}
		if i > 0 && l.at.Before(lines[i-1].at) {
			t.Errorf("tick %d at %v, before tick %d at %v", l.tick, l.at, i-1, lines[i-1].at)
		}
		if l.at.After(down) && l.at.Before(up) {
			during++
		}
	}
	if during == 0 {
		t.Errorf("no line has a time from %v to %v, while the agent was down: the times are not the times of writing (%v)", down, up, lines)
	}

	// --since-time: from the first whole second after a middle line on.
	mid := lines[len(lines)/2].at
	since := mid.Truncate(time.Second).Add(time.Second)
	out, errOut, code := kobectl("", "logs", "ticker", "--timestamps", "--since-time", since.Format(time.RFC3339))
	first := strings.Fields(out + " x")[0]
	at, err := time.Parse(time.RFC3339Nano, first)
	if code != 0 || err != nil || at.Before(since) {
		t.Fatalf("logs --since-time %s: first line at %q (%s, %d)", since.Format(time.RFC3339), first, errOut, code)
	}
	for _, l := range lines {
		if !l.at.Before(since) {
			if !at.Equal(l.at) {
				t.Errorf("logs --since-time %s begins at %v; the first line written since then is at %v", since.Format(time.RFC3339), at, l.at)
			}
			break
		}
	}
	// --since 2s: the last two seconds only (and some, the ticker goes on).
	before := time.Now()
	out, errOut, code = kobectl("", "logs", "ticker", "--timestamps", "--since", "2s")
	got := strings.Split(strings.TrimSpace(out), "\n")
	at, err = time.Parse(time.RFC3339Nano, strings.Fields(got[0] + " x")[0])
	if code != 0 || err != nil || at.Before(before.Add(-3*time.Second)) || len(got) >= len(lines) {
		t.Errorf("logs --since 2s: %d lines, the first at %v, asked at %v (%s, %d)", len(got), at, before, errOut, code)
	}
	if _, errOut, code := kobectl("", "logs", "ticker", "--since", "2s", "--since-time", since.Format(time.RFC3339)); code == 0 || !strings.Contains(errOut, "at most one of") {
		t.Errorf("--since with --since-time: %d %q", code, errOut)
	}
}

// websocketLogs reads a pods/log URL over a WebSocket with one
// subprotocol, as the API server's admin, until the server closes it.
func websocketLogs(t *testing.T, addr, path, proto, origin string) string {
	t.Helper()
	ws, resp, err := dialWebSocket(t, addr, path, proto, origin)
	if err != nil {
		t.Fatalf("dial %s: %v (%v)", path, err, resp)
	}
	defer ws.Close()
	if ws.Subprotocol() != proto {
		t.Errorf("subprotocol %q, want %q", ws.Subprotocol(), proto)
	}
	var b strings.Builder
	for {
		_, msg, err := ws.ReadMessage()
		if err != nil {
			if !websocket.IsCloseError(err, websocket.CloseNormalClosure) {
				t.Errorf("read %s: %v", path, err)
			}
			return b.String()
		}
		b.Write(msg)
	}
}

// dialWebSocket opens a WebSocket to the API server as its admin, with one
// subprotocol and, when given, an Origin header.
func dialWebSocket(t *testing.T, addr, path, proto, origin string) (*websocket.Conn, *http.Response, error) {
	t.Helper()
	header := http.Header{}
	if origin != "" {
		header.Set("Origin", origin)
	}
	d := websocket.Dialer{Subprotocols: []string{proto}, HandshakeTimeout: 10 * time.Second}
	scheme := "ws"
	if k, ok := adminKubeconfigs.Load(addr); ok {
		cfg, err := client.LoadKubeconfig(k.(string), "")
		if err != nil {
			t.Fatal(err)
		}
		if d.TLSClientConfig, err = client.TLSConfig(cfg, addr); err != nil {
			t.Fatal(err)
		}
		d.TLSClientConfig.NextProtos = []string{"http/1.1"}
		scheme = "wss"
	}
	return d.Dial(scheme+"://"+addr+path, header)
}
