package controllermanager_test

import (
	"context"
	"testing"
	"time"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/api/rbac"
	"github.com/kobune/kobune/client"
	testcluster "github.com/kobune/kobune/test/cluster"
)

// TestClusterRoleAggregationAndServiceAccounts: a ClusterRole labelled
// aggregate-to-view has its rules in view, and through it in edit and
// admin; without the label they leave again. A new namespace gets its
// default ServiceAccount and kube-root-ca.crt, and both come back when
// deleted.
func TestClusterRoleAggregationAndServiceAccounts(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := testcluster.Start(t, ctx, testcluster.Options{Nodes: 1}).Client
	roles := client.For[*rbac.ClusterRole](c)
	widgets := rbac.PolicyRule{Verbs: []string{"get", "list", "watch"}, APIGroups: []string{"example.com"}, Resources: []string{"widgets"}}
	if _, err := roles.Create(ctx, &rbac.ClusterRole{ObjectMeta: meta.ObjectMeta{Name: "widget-viewer",
		Labels: map[string]string{"rbac.authorization.k8s.io/aggregate-to-view": "true"}}, Rules: []rbac.PolicyRule{widgets}}); err != nil {
		t.Fatal(err)
	}
	holds := func(name string, want bool) {
		t.Helper()
		wctx, wcancel := context.WithTimeout(ctx, 20*time.Second)
		defer wcancel()
		if _, err := client.WaitFor(wctx, roles, "", name, 0, func(r *rbac.ClusterRole, _ bool) bool { return rbac.Covers(r.Rules, widgets) == want }); err != nil {
			t.Fatalf("ClusterRole %s holding the widget rule = %v: %v", name, want, err)
		}
	}
	for _, name := range []string{"view", "edit", "admin"} {
		holds(name, true)
	}
	r, _ := roles.Get(ctx, "", "widget-viewer")
	r.Labels = nil
	if _, err := roles.Update(ctx, r); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"view", "edit", "admin"} {
		holds(name, false)
	}

	if _, err := client.For[*core.Namespace](c).Create(ctx, &core.Namespace{ObjectMeta: meta.ObjectMeta{Name: "fresh"}}); err != nil {
		t.Fatal(err)
	}
	wait := func(what string, f func() error) {
		t.Helper()
		for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			err := f()
			if err == nil {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: %v", what, err)
			}
		}
	}
	sas, cms := client.For[*core.ServiceAccount](c), client.For[*core.ConfigMap](c)
	wait("the default ServiceAccount", func() error { _, err := sas.Get(ctx, "fresh", "default"); return err })
	wait("kube-root-ca.crt", func() error {
		cm, err := cms.Get(ctx, "fresh", core.RootCAConfigMapName)
		if err == nil && len(cm.Data["ca.crt"]) < 100 {
			t.Fatalf("kube-root-ca.crt holds %q", cm.Data["ca.crt"])
		}
		return err
	})
	if err := sas.Delete(ctx, "fresh", "default", client.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := cms.Delete(ctx, "fresh", core.RootCAConfigMapName, client.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	wait("the default ServiceAccount made again", func() error { _, err := sas.Get(ctx, "fresh", "default"); return err })
	wait("kube-root-ca.crt made again", func() error { _, err := cms.Get(ctx, "fresh", core.RootCAConfigMapName); return err })
}
