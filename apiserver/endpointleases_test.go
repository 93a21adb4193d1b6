package apiserver_test

import (
	"context"
	"fmt"
	"net"
	"slices"
	"testing"
	"time"

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
