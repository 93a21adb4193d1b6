package controllermanager_test

import (
	"context"
	"encoding/json"
	"strings"
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
	// The collector follows the custom kind within 10 s
	// (garbagecollector.CustomKindsInterval): from then on the deletion
	// reaches it at once; before, it looks again every 15 s
	// (garbagecollector.UnwatchedOwnerRecheck).
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

// TestGarbageCollectorCollectsCustomResources (issue #36): custom
// resources are dependents like built-in objects — a custom resource
// owned by a Deployment goes when the Deployment goes (background), is
// deleted first under a foreground deletion that it blocks, and keeps
// living without the reference under an orphan deletion; one owned by
// another custom resource goes with it.
func TestGarbageCollectorCollectsCustomResources(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c := cluster(t, ctx, 1)
	served := map[string]*client.Resource{}
	for _, kind := range []string{"Website", "Backup"} {
		plural := strings.ToLower(kind) + "s"
		crd := &apiextensions.CustomResourceDefinition{ObjectMeta: meta.ObjectMeta{Name: plural + ".example.com"},
			Spec: apiextensions.CustomResourceDefinitionSpec{Group: "example.com", Scope: apiextensions.NamespaceScoped,
				Names: apiextensions.CustomResourceDefinitionNames{Plural: plural, Kind: kind},
				Versions: []apiextensions.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true,
					Schema: &apiextensions.CustomResourceValidation{OpenAPIV3Schema: &apiextensions.JSONSchemaProps{Type: "object",
						XPreserveUnknownFields: ptr(true)}}}}}}
		if _, err := client.For[*apiextensions.CustomResourceDefinition](c).Create(ctx, crd); err != nil {
			t.Fatal(err)
		}
		waitFor(t, kind+" served", func() (bool, error) {
			kinds, err := c.Discover(ctx)
			if err != nil {
				return false, err
			}
			k, err := kinds.ByKind("example.com/v1", kind)
			if err != nil {
				return false, nil
			}
			served[kind] = c.Resource(k)
			return true, nil
		}, func(ok bool) bool { return ok })
	}
	websites, backups := served["Website"], served["Backup"]
	ds := client.For[*apps.Deployment](c)
	deployment := func(name string) meta.OwnerReference {
		d, err := ds.Create(ctx, newDeployment(name, 0, "kobune.local/labapp:1.0", meta.FromInt(1), meta.FromInt(0)))
		if err != nil {
			t.Fatal(err)
		}
		return meta.OwnerReference{APIVersion: "apps/v1", Kind: "Deployment", Name: name, UID: d.UID, BlockOwnerDeletion: ptr(true)}
	}
	backup := func(name string, owner meta.OwnerReference) {
		refs, _ := json.Marshal([]meta.OwnerReference{owner})
		body := `{"apiVersion":"example.com/v1","kind":"Backup","metadata":{"name":"` + name + `","ownerReferences":` + string(refs) + `},"spec":{"schedule":"@daily"}}`
		if _, err := backups.Create(ctx, "default", []byte(body), client.WriteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	w, err := websites.Create(ctx, "default", []byte(`{"apiVersion":"example.com/v1","kind":"Website","metadata":{"name":"blog"},"spec":{}}`), client.WriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	backup("of-website", meta.OwnerReference{APIVersion: "example.com/v1", Kind: "Website", Name: "blog", UID: decodeMeta(t, w.Object).UID})
	backup("of-background", deployment("background"))
	backup("of-foreground", deployment("foreground"))
	backup("of-orphan", deployment("orphan"))

	// The owners are there: nothing is collected.
	time.Sleep(3 * time.Second)
	for _, name := range []string{"of-website", "of-background", "of-foreground", "of-orphan"} {
		if _, err := backups.Get(ctx, "default", name); err != nil {
			t.Fatalf("Backup %s, whose owner is there, is gone: %v", name, err)
		}
	}

	gone := func(what string, within time.Duration, check func() bool) {
		t.Helper()
		for deadline := time.Now().Add(within); !check(); time.Sleep(200 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: not within %s", what, within)
			}
		}
	}
	backupGone := func(name string) func() bool {
		return func() bool { _, err := backups.Get(ctx, "default", name); return client.IsNotFound(err) }
	}
	if err := ds.Delete(ctx, "default", "background", client.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// The collector follows a new custom kind within 10 s
	// (garbagecollector.CustomKindsInterval); after that a deletion is
	// acted on at once.
	gone("the Backup of a deleted Deployment collected", 30*time.Second, backupGone("of-background"))
	start := time.Now()
	if err := websites.Delete(ctx, "default", "blog", client.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	gone("the Backup of a deleted Website collected", 10*time.Second, backupGone("of-website"))
	t.Logf("the Backup of a deleted Website went %.1f s after it", time.Since(start).Seconds())

	if err := ds.Delete(ctx, "default", "foreground", client.DeleteOptions{PropagationPolicy: "Foreground"}); err != nil {
		t.Fatal(err)
	}
	gone("the Backup blocking a foreground deletion deleted, then its Deployment", 20*time.Second, func() bool {
		_, err := ds.Get(ctx, "default", "foreground")
		return backupGone("of-foreground")() && client.IsNotFound(err)
	})

	if err := ds.Delete(ctx, "default", "orphan", client.DeleteOptions{PropagationPolicy: "Orphan"}); err != nil {
		t.Fatal(err)
	}
	gone("the Deployment deleted with Orphan", 20*time.Second, func() bool {
		_, err := ds.Get(ctx, "default", "orphan")
		return client.IsNotFound(err)
	})
	b, err := backups.Get(ctx, "default", "of-orphan")
	if err != nil {
		t.Fatalf("the orphaned Backup: %v", err)
	}
	if refs := decodeMeta(t, b).OwnerReferences; len(refs) != 0 {
		t.Errorf("the orphaned Backup still names its owner: %+v", refs)
	}
}
