package controllermanager_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/kobune/kobune/api/apiextensions"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/api/storagemigration"
	"github.com/kobune/kobune/apiserver/storage"
	"github.com/kobune/kobune/client"
	testcluster "github.com/kobune/kobune/test/cluster"
)

// TestStorageVersionMigration: after a definition's storage version
// moved, a StorageVersionMigration of its resource stores every object
// again at the new version (what etcd holds, not only what reads answer),
// and says so: Running, then Succeeded; one of a resource no one serves
// fails, naming it.
func TestStorageVersionMigration(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cl := testcluster.Start(t, ctx, testcluster.Options{Nodes: 1})
	c := cl.Client
	crds := client.For[*apiextensions.CustomResourceDefinition](c)
	version := func(name string, storage bool) apiextensions.CustomResourceDefinitionVersion {
		return apiextensions.CustomResourceDefinitionVersion{Name: name, Served: true, Storage: storage,
			Schema: &apiextensions.CustomResourceValidation{OpenAPIV3Schema: &apiextensions.JSONSchemaProps{Type: "object", XPreserveUnknownFields: ptr(true)}}}
	}
	crd := &apiextensions.CustomResourceDefinition{ObjectMeta: meta.ObjectMeta{Name: "gizmos.example.com"},
		Spec: apiextensions.CustomResourceDefinitionSpec{Group: "example.com", Scope: apiextensions.NamespaceScoped,
			Names:    apiextensions.CustomResourceDefinitionNames{Plural: "gizmos", Kind: "Gizmo"},
			Versions: []apiextensions.CustomResourceDefinitionVersion{version("v1", true), version("v2", false)}}}
	if _, err := crds.Create(ctx, crd); err != nil {
		t.Fatal(err)
	}
	var gizmos *client.Resource
	waitFor(t, "the Gizmo kind served", func() (bool, error) {
		kinds, err := c.Discover(ctx)
		if err != nil {
			return false, err
		}
		k, err := kinds.ByKind("example.com/v1", "Gizmo")
		if err != nil {
			return false, nil
		}
		gizmos = c.Resource(k)
		return true, nil
	}, func(ok bool) bool { return ok })
	for _, name := range []string{"a", "b"} {
		if _, err := gizmos.Create(ctx, "default", []byte(`{"apiVersion":"example.com/v1","kind":"Gizmo","metadata":{"name":"`+name+`"},"size":1}`), client.WriteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := crds.Modify(ctx, "", "gizmos.example.com", func(d *apiextensions.CustomResourceDefinition) error {
		d.Spec.Versions = []apiextensions.CustomResourceDefinitionVersion{version("v1", false), version("v2", true)}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	stored := func(name string) string {
		kv, err := cl.Store().Get(ctx, storage.Key("gizmos.example.com", "default", name))
		if err != nil {
			t.Fatal(err)
		}
		return string(kv.Value)
	}
	if s := stored("a"); !strings.Contains(s, `"apiVersion":"example.com/v1"`) {
		t.Fatalf("before the migration, a is stored at v1: %s", s)
	}
	time.Sleep(2 * time.Second) // the new storage version reaches the API server's kinds
	migrations := client.For[*storagemigration.StorageVersionMigration](c)
	for name, res := range map[string]string{"gizmos": "gizmos", "nothing": "nothings"} {
		if _, err := migrations.Create(ctx, &storagemigration.StorageVersionMigration{ObjectMeta: meta.ObjectMeta{Name: name},
			Spec: storagemigration.StorageVersionMigrationSpec{Resource: storagemigration.GroupResource{Group: "example.com", Resource: res}}}); err != nil {
			t.Fatal(err)
		}
	}
	condition := func(name, typ string) *storagemigration.Condition {
		m, err := migrations.Get(ctx, "", name)
		if err != nil {
			return nil
		}
		for i := range m.Status.Conditions {
			if m.Status.Conditions[i].Type == typ && m.Status.Conditions[i].Status == meta.ConditionTrue {
				return &m.Status.Conditions[i]
			}
		}
		return nil
	}
	waitFor(t, "the gizmos migration Succeeded", func() (bool, error) { return condition("gizmos", storagemigration.Succeeded) != nil, nil },
		func(ok bool) bool { return ok })
	for _, name := range []string{"a", "b"} {
		if s := stored(name); !strings.Contains(s, `"apiVersion":"example.com/v2"`) {
			t.Errorf("after the migration, %s is stored at v2: %s", name, s)
		}
	}
	if m, _ := migrations.Get(ctx, "", "gizmos"); m == nil || m.Status.ResourceVersion == "" {
		t.Errorf("the migration records the revision it listed at: %+v", m)
	}
	waitFor(t, "the migration of a resource no one serves Failed", func() (bool, error) {
		c := condition("nothing", storagemigration.Failed)
		return c != nil && strings.Contains(c.Message, "nothings"), nil
	}, func(ok bool) bool { return ok })
}
