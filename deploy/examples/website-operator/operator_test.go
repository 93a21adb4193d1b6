package main

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/kobune/kobune/api/apps"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/client"
	testcluster "github.com/kobune/kobune/test/cluster"
)

// TestWebsiteOperator: the example operator, on a test cluster with its
// own crd.yaml and website.yaml, makes the Website's Deployment (owned by
// it) and reports its ready replicas; a change of replicas reaches the
// Deployment; the CRD's CEL rule refuses a domain outside example.com;
// deleting the Website deletes the Deployment.
func TestWebsiteOperator(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := testcluster.Start(t, ctx, testcluster.Options{Nodes: 1}).Client
	apply := func(file string) {
		t.Helper()
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		kinds, err := c.Discover(ctx)
		if err != nil {
			t.Fatal(err)
		}
		docs, err := kinds.DecodeEach(b)
		if err != nil || len(docs) != 1 || docs[0].Err != nil {
			t.Fatalf("%s: %v %v", file, err, docs)
		}
		if _, err := c.Resource(docs[0].Kind).Create(ctx, "default", docs[0].JSON, client.WriteOptions{}); err != nil {
			t.Fatalf("create %s: %v", file, err)
		}
	}
	apply("crd.yaml")
	op, err := New(ctx, c, 20*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	go op.Run(ctx)
	apply("website.yaml")
	deployments := client.For[*apps.Deployment](c)
	eventually(t, "the Website's Deployment, owned by it, with 2 replicas", func() bool {
		d, err := deployments.Get(ctx, "default", "blog")
		return err == nil && *d.Spec.Replicas == 2 && len(d.OwnerReferences) == 1 && d.OwnerReferences[0].Kind == "Website"
	})
	eventually(t, "status.readyReplicas 2", func() bool {
		w, err := op.websites.Get(ctx, "default", "blog")
		st, _ := w.Status.(map[string]any)
		n, _ := number(st["readyReplicas"])
		return err == nil && n == 2
	})
	if _, err := op.websites.Modify(ctx, "default", "blog", func(w *meta.Unstructured) error {
		w.Content["spec"].(map[string]any)["replicas"] = 1
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the Deployment scaled to 1", func() bool {
		d, err := deployments.Get(ctx, "default", "blog")
		return err == nil && *d.Spec.Replicas == 1
	})
	bad := &meta.Unstructured{TypeMeta: meta.TypeMeta{APIVersion: "example.com/v1", Kind: "Website"},
		ObjectMeta: meta.ObjectMeta{Name: "evil", Namespace: "default"}, Content: map[string]any{"spec": map[string]any{"domain": "evil.test"}}}
	if _, err := op.websites.Create(ctx, bad); err == nil || !strings.Contains(err.Error(), "the domain must be under example.com") {
		t.Errorf("a Website outside example.com: %v", err)
	}
	if err := op.websites.Delete(ctx, "default", "blog", client.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the Deployment deleted with its Website", func() bool {
		_, err := deployments.Get(ctx, "default", "blog")
		return client.IsNotFound(err)
	})
}

func eventually(t *testing.T, what string, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(40 * time.Second); !ok(); time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 40 s", what)
		}
	}
}
