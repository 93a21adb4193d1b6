package apiserver_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/apiserver/testserver"
	"github.com/kobune/kobune/client"
)

// TestRESTConnectRefusesBeforeUpgrading: exec and port-forward requests
// that cannot run get an HTTP answer with a Status saying why — a missing
// command, no WebSocket, no protocol in common, a missing pod, a pod on a
// node without an agent — before any upgrade, and nothing is upgraded.
// (The sessions themselves run on real nodes: test/e2e and test/compat.)
func TestRESTConnectRefusesBeforeUpgrading(t *testing.T) {
	s := testserver.New(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := client.For[*core.Node](s.Client).Create(ctx, &core.Node{ObjectMeta: meta.ObjectMeta{Name: "simulated-1"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.For[*core.Pod](s.Client).Create(ctx, &core.Pod{ObjectMeta: meta.ObjectMeta{Name: "sim", Namespace: "default"},
		Spec: core.PodSpec{NodeName: "simulated-1", Containers: []core.Container{{Name: "c", Image: "kobune.local/labapp:1.0"}}}}); err != nil {
		t.Fatal(err)
	}
	c := newRESTClient(t, client.Config{}, s.Addr())
	for _, tc := range []struct {
		path   string
		header []string
		code   int
		want   string
	}{
		{"/api/v1/namespaces/default/pods/sim/exec?stdout=true", nil, 400, "at least one command"},
		{"/api/v1/namespaces/default/pods/sim/exec?command=ls", nil, 400, "at least 1 of stdin, stdout, stderr"},
		{"/api/v1/namespaces/default/pods/sim/exec?command=ls&stdout=maybe", nil, 422, `stdout: Invalid value: \"maybe\"`},
		{"/api/v1/namespaces/default/pods/sim/exec?command=ls&stdout=true&stderr=true&tty=true", nil, 400, "stderr cannot be used with tty"},
		{"/api/v1/namespaces/default/pods/sim/exec?command=ls&stdout=true", []string{"Connection", "Upgrade", "Upgrade", "SPDY/3.1"}, 400, "not SPDY: use kubectl 1.30 or later"},
		{"/api/v1/namespaces/default/pods/sim/portforward", nil, 400, "needs an upgrade to SPDY/3.1+portforward.k8s.io"},
		{"/api/v1/namespaces/default/pods/sim/portforward?ports=http", nil, 422, `ports: Invalid value: \"http\"`},
	} {
		code, _, b := c.do("POST", tc.path, "", "", tc.header...)
		if code != tc.code || !strings.Contains(string(b), tc.want) {
			t.Errorf("POST %s: %d %s, want %d with %q", tc.path, code, b, tc.code, tc.want)
		}
	}
	dial := func(path string, protocols ...string) (int, string) {
		d := websocket.Dialer{Subprotocols: protocols, HandshakeTimeout: 10 * time.Second}
		conn, resp, err := d.Dial("ws://"+s.Addr()+path, nil)
		if err == nil {
			conn.Close()
			return 101, ""
		}
		if resp == nil {
			t.Fatalf("dial %s: %v", path, err)
		}
		defer resp.Body.Close()
		buf := new(strings.Builder)
		_, _ = bufioCopy(buf, resp)
		return resp.StatusCode, buf.String()
	}
	for _, tc := range []struct {
		path      string
		protocols []string
		code      int
		want      string
	}{
		{"/api/v1/namespaces/default/pods/sim/exec?command=ls&stdout=true", []string{"v3.channel.k8s.io"}, 400, "kobune speaks v5.channel.k8s.io and v4.channel.k8s.io"},
		{"/api/v1/namespaces/default/pods/nope/exec?command=ls&stdout=true", []string{"v5.channel.k8s.io"}, 404, `pods \"nope\" not found`},
		{"/api/v1/namespaces/default/pods/sim/exec?command=ls&stdout=true", []string{"v5.channel.k8s.io"}, 400, "node simulated-1 publishes no agent address"},
		{"/api/v1/namespaces/default/pods/nope/portforward", []string{"SPDY/3.1+portforward.k8s.io"}, 404, `pods \"nope\" not found`},
		{"/api/v1/namespaces/default/pods/sim/portforward", []string{"SPDY/3.1+portforward.k8s.io"}, 400, "node simulated-1 publishes no agent address"},
	} {
		if code, body := dial(tc.path, tc.protocols...); code != tc.code || !strings.Contains(body, tc.want) {
			t.Errorf("WebSocket %s %v: %d %s, want %d with %q", tc.path, tc.protocols, code, body, tc.code, tc.want)
		}
	}
}

func bufioCopy(dst *strings.Builder, resp *http.Response) (int64, error) {
	var b [4096]byte
	var n int64
	for {
		k, err := resp.Body.Read(b[:])
		dst.Write(b[:k])
		n += int64(k)
		if err != nil {
			return n, nil
		}
	}
}
