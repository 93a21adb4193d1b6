package apiserver_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc/connectivity"

	"github.com/kobune/kobune/api/coordination"
	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/discovery"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/apiserver"
	"github.com/kobune/kobune/apiserver/testserver"
	"github.com/kobune/kobune/client"
)

// TestKubernetesServiceFollowsTheAPIServers (issue #35): the kubernetes
// Service's Endpoints and EndpointSlice name the API servers alive, from
// a Lease each renews (kube-apiserver's lease endpoint reconciler). An
// API server restarted on another port replaces its old address at once
// (a clean stop gives its Lease up); another API server's Lease adds its
// address, and is dropped once it stops being renewed.
func TestKubernetesServiceFollowsTheAPIServers(t *testing.T) {
	dir := t.TempDir()
	fast := func(c *apiserver.Config) {
		c.EndpointReconcileInterval, c.EndpointLeaseDuration = 100*time.Millisecond, time.Second
	}
	s1, err := testserver.Start(dir, "", fast)
	if err != nil {
		t.Fatal(err)
	}
	_, port1, _ := net.SplitHostPort(s1.Addr())
	endpoints := func(c *client.Client) (string, string) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		ep, err := client.For[*core.Endpoints](c).Get(ctx, "default", "kubernetes")
		if err != nil {
			return err.Error(), ""
		}
		var got []string
		for _, ss := range ep.Subsets {
			for _, a := range ss.Addresses {
				got = append(got, fmt.Sprintf("%s:%d", a.IP, ss.Ports[0].Port))
			}
		}
		slices.Sort(got)
		sl, err := client.For[*discovery.EndpointSlice](c).Get(ctx, "default", "kubernetes")
		if err != nil {
			return fmt.Sprint(got), err.Error()
		}
		var sgot []string
		for _, e := range sl.Endpoints {
			for _, p := range sl.Ports {
				sgot = append(sgot, fmt.Sprintf("%s:%d", e.Addresses[0], *p.Port))
			}
		}
		slices.Sort(sgot)
		return fmt.Sprint(got), fmt.Sprint(sgot)
	}
	want1 := fmt.Sprint([]string{"127.0.0.1:" + port1})
	if ep, sl := endpoints(s1.Client); ep != want1 || sl != want1 {
		t.Fatalf("first start: Endpoints %s EndpointSlice %s, want %s", ep, sl, want1)
	}
	s1.Stop()

	s2, err := testserver.Start(dir, "", fast)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Stop()
	_, port2, _ := net.SplitHostPort(s2.Addr())
	if port2 == port1 {
		t.Skip("the restart got the same port; nothing to see")
	}
	want2 := fmt.Sprint([]string{"127.0.0.1:" + port2})
	// A clean stop gave the old Lease up; had it not, it expires in 1 s.
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		ep, sl := endpoints(s2.Client)
		if ep == want2 && sl == want2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("restarted on another port: Endpoints %s EndpointSlice %s, want only %s (the old %s gone)", ep, sl, want2, port1)
		}
	}

	// Another API server (its Lease written by hand here) joins, then
	// stops renewing.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	holder, secs, now := "10.0.0.9:"+port2, int32(1), meta.NowMicro()
	if _, err := client.For[*coordination.Lease](s2.Client).Create(ctx, &coordination.Lease{ObjectMeta: meta.ObjectMeta{Name: "apiserver-10.0.0.9", Namespace: "kube-system",
		Labels: map[string]string{"apiserver.kubernetes.io/identity": "kube-apiserver"}, Annotations: map[string]string{"kobune.io/advertise-address": holder}},
		Spec: coordination.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: &secs, RenewTime: &now}}); err != nil {
		t.Fatal(err)
	}
	both := fmt.Sprint([]string{"10.0.0.9:" + port2, "127.0.0.1:" + port2})
	var seenBoth bool
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		ep, sl := endpoints(s2.Client)
		if ep == both && sl == both {
			seenBoth = true
		}
		if seenBoth && ep == want2 && sl == want2 {
			return
		}
	}
	ep, sl := endpoints(s2.Client)
	t.Fatalf("a second API server's Lease (1 s, not renewed): seen in the endpoints %v; now Endpoints %s EndpointSlice %s, want it gone again (%s)", seenBoth, ep, sl, want2)
}

// TestIdleConnectionsAreClosed (issue #35): a connection that carries no
// request is closed after IdleConnectionTimeout, over REST (HTTP/2 and
// HTTP/1.1) and gRPC alike, so that idle clients cannot pile connections
// up; a client that calls again reconnects.
func TestIdleConnectionsAreClosed(t *testing.T) {
	timeout := apiserver.IdleConnectionTimeout
	apiserver.IdleConnectionTimeout = 500 * time.Millisecond
	t.Cleanup(func() { apiserver.IdleConnectionTimeout = timeout })
	s := startSecured(t)
	rc := newRESTClient(t, s.admin, s.Addr())
	var conns atomic.Int32
	tr := rc.http.Transport.(*http.Transport)
	dial := &net.Dialer{}
	tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		conns.Add(1)
		return dial.DialContext(ctx, network, addr)
	}
	if code, _, b := rc.do("GET", "/api/v1/namespaces/default/configmaps", "", ""); code != 200 {
		t.Fatalf("list: %d %s", code, b)
	}
	if code, _, _ := rc.do("GET", "/api/v1/namespaces/default/configmaps", "", ""); code != 200 || conns.Load() != 1 {
		t.Fatalf("a second request at once: %d over %d connections, want the first one reused", code, conns.Load())
	}
	time.Sleep(2 * time.Second)
	if code, _, _ := rc.do("GET", "/api/v1/namespaces/default/configmaps", "", ""); code != 200 || conns.Load() != 2 {
		t.Fatalf("after 2 s idle: %d over %d connections, want a new one (the server closed the idle one)", code, conns.Load())
	}

	gc := s.as(t, "gopher", "system:masters")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, _, err := client.For[*core.ConfigMap](gc).List(ctx, "default", client.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	cc := gc.Conn()
	waitState := func(want connectivity.State) bool {
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); {
			st := cc.GetState()
			if st == want {
				return true
			}
			wctx, wcancel := context.WithDeadline(ctx, deadline)
			cc.WaitForStateChange(wctx, st)
			wcancel()
		}
		return false
	}
	if !waitState(connectivity.Idle) {
		t.Fatalf("the gRPC connection is %v after the server's idle timeout, want Idle (closed by the server)", cc.GetState())
	}
	if _, _, err := client.For[*core.ConfigMap](gc).List(ctx, "default", client.ListOptions{}); err != nil {
		t.Fatalf("a call after the idle close: %v", err)
	}
}
