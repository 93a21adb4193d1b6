package controllermanager_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/kobune/kobune/api/apiextensions"
	"github.com/kobune/kobune/api/apps"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/client"
)

// TestGarbageCollectorKnowsCustomResourceOwners (issue #36): a Deployment
// an operator made and owns from its custom resource lives as long as
// that resource (the collector learns the kind from the server, rather
// than taking an owner of a kind it does not know for gone), a reference
// to a kind no server serves keeps its dependent, and deleting the
// custom resource deletes the Deployment after it.
func TestGarbageCollectorKnowsCustomResourceOwners(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := cluster(t, ctx, 1)
	crd := &apiextensions.CustomResourceDefinition{ObjectMeta: meta.ObjectMeta{Name: "websites.example.com"},
		Spec: apiextensions.CustomResourceDefinitionSpec{Group: "example.com", Scope: apiextensions.NamespaceScoped,
			Names: apiextensions.CustomResourceDefinitionNames{Plural: "websites", Kind: "Website"},
			Versions: []apiextensions.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true,
				Schema: &apiextensions.CustomResourceValidation{OpenAPIV3Schema: &apiextensions.JSONSchemaProps{Type: "object",
					XPreserveUnknownFields: ptr(true)}}}}}}
	if _, err := client.For[*apiextensions.CustomResourceDefinition](c).Create(ctx, crd); err != nil {
		t.Fatal(err)
	}
	var websites *client.Resource
	waitFor(t, "the Website kind served", func() (bool, error) {
		kinds, err := c.Discover(ctx)
		if err != nil {
			return false, err
		}
		k, err := kinds.ByKind("example.com/v1", "Website")
		if err != nil {
			return false, nil
		}
		websites = c.Resource(k)
		return true, nil
	}, func(ok bool) bool { return ok })
	w, err := websites.Create(ctx, "default", []byte(`{"apiVersion":"example.com/v1","kind":"Website","metadata":{"name":"blog"},"spec":{"domain":"blog.example.com"}}`), client.WriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	owner := decodeMeta(t, w.Object)
	ds := client.For[*apps.Deployment](c)
	for name, ref := range map[string]meta.OwnerReference{
		"blog":    {APIVersion: "example.com/v1", Kind: "Website", Name: "blog", UID: owner.UID},
		"unknown": {APIVersion: "nowhere.example.com/v1", Kind: "Ghost", Name: "boo", UID: "0d5e0000-0000-0000-0000-000000000000"},
	} {
		d := newDeployment(name, 1, "kobune.local/labapp:1.0", meta.FromInt(1), meta.FromInt(0))
		d.OwnerReferences = []meta.OwnerReference{ref}
		if _, err := ds.Create(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	// The collector acts on a new object at once: give it time to.
	time.Sleep(3 * time.Second)
	for _, name := range []string{"blog", "unknown"} {
		if _, err := ds.Get(ctx, "default", name); err != nil {
			t.Fatalf("Deployment %s, owned by a custom resource that is there (or of a kind no one serves), was collected: %v", name, err)
		}
	}
	if err := websites.Delete(ctx, "default", "blog", client.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// Nothing announces a custom resource's deletion to the collector:
	// it looks again every 15 s (garbagecollector.UnwatchedOwnerRecheck).
	for deadline := time.Now().Add(40 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		if _, err := ds.Get(ctx, "default", "blog"); client.IsNotFound(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the Deployment of a deleted Website was not collected within 40 s")
		}
	}
	if _, err := ds.Get(ctx, "default", "unknown"); err != nil {
		t.Errorf("the Deployment owned by a kind no one serves: %v", err)
	}
}

func ptr[T any](v T) *T { return &v }

func decodeMeta(t *testing.T, b []byte) meta.ObjectMeta {
	t.Helper()
	var o struct {
		Metadata meta.ObjectMeta `json:"metadata"`
	}
	if err := json.Unmarshal(b, &o); err != nil {
		t.Fatal(err)
	}
	return o.Metadata
}
