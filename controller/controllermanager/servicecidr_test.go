package controllermanager_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/api/networking"
	"github.com/kobune/kobune/client"
	testcluster "github.com/kobune/kobune/test/cluster"
)

// TestServiceCIDRLifecycle: a new ServiceCIDR gets the finalizer and
// Ready=True; deleting one whose range holds a Service's address, in no
// other range, leaves it Terminating (Ready=False) until the Service is
// gone; one whose addresses another range also holds goes at once.
func TestServiceCIDRLifecycle(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := testcluster.Start(t, ctx, testcluster.Options{Nodes: 1}).Client
	cidrs, svcs := client.For[*networking.ServiceCIDR](c), client.For[*core.Service](c)
	ready := func(o *networking.ServiceCIDR) (meta.ConditionStatus, string) {
		for _, c := range o.Status.Conditions {
			if c.Type == networking.ServiceCIDRReady {
				return c.Status, c.Reason
			}
		}
		return "", ""
	}
	wait := func(what, name string, ok func(*networking.ServiceCIDR, bool) bool) {
		t.Helper()
		if _, err := client.WaitFor(ctx, cidrs, "", name, 0, ok); err != nil {
			o, gerr := cidrs.Get(ctx, "", name)
			t.Fatalf("%s: %v (ServiceCIDR %s now: %+v %v)", what, err, name, o, gerr)
		}
	}
	for _, name := range []string{"wide", "narrow"} {
		cidr := map[string]string{"wide": "203.0.113.0/24", "narrow": "203.0.113.0/25"}[name]
		if _, err := cidrs.Create(ctx, &networking.ServiceCIDR{ObjectMeta: meta.ObjectMeta{Name: name}, Spec: networking.ServiceCIDRSpec{CIDRs: []string{cidr}}}); err != nil {
			t.Fatal(err)
		}
		wait(name+" Ready with its finalizer", name, func(o *networking.ServiceCIDR, gone bool) bool {
			st, _ := ready(o)
			return !gone && st == meta.ConditionTrue && slices.Contains(o.Finalizers, networking.ServiceCIDRFinalizer)
		})
	}
	// 203.0.113.200 is in wide only; 203.0.113.20 in both.
	for name, ip := range map[string]string{"only-wide": "203.0.113.200", "both": "203.0.113.20"} {
		if _, err := svcs.Create(ctx, &core.Service{ObjectMeta: meta.ObjectMeta{Name: name, Namespace: "default"},
			Spec: core.ServiceSpec{ClusterIP: ip, Ports: []core.ServicePort{{Port: 80}}}}); err != nil {
			t.Fatalf("Service at %s: %v", ip, err)
		}
	}
	// narrow's addresses are in wide too: it goes.
	if err := cidrs.Delete(ctx, "", "narrow", client.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	wait("narrow deleted (wide holds its addresses)", "narrow", func(_ *networking.ServiceCIDR, gone bool) bool { return gone })
	// wide holds only-wide's address alone: it waits.
	if err := cidrs.Delete(ctx, "", "wide", client.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	wait("wide Terminating", "wide", func(o *networking.ServiceCIDR, gone bool) bool {
		st, reason := ready(o)
		return !gone && o.DeletionTimestamp != nil && st == meta.ConditionFalse && reason == networking.ServiceCIDRTerminating
	})
	time.Sleep(2 * time.Second) // what a wrong finalizer removal would take
	if o, err := cidrs.Get(ctx, "", "wide"); err != nil {
		t.Fatalf("wide went while a Service still had an address only it holds: %v %+v", err, o)
	}
	for _, name := range []string{"only-wide", "both"} {
		if err := svcs.Delete(ctx, "default", name, client.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	wait("wide deleted once its addresses were free", "wide", func(_ *networking.ServiceCIDR, gone bool) bool { return gone })
}
