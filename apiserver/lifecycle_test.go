package apiserver_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/api/scheduling"
	"github.com/kobune/kobune/apiserver"
	"github.com/kobune/kobune/apiserver/testserver"
	"github.com/kobune/kobune/client"
)

func TestGracefulPodDeletionAndFinalizers(t *testing.T) {
	s := testserver.New(t)
	ctx := ctxT(t)
	pods := client.For[*core.Pod](s.Client)

	// An unbound pod goes at once.
	if _, err := pods.Create(ctx, newPod("pending", "")); err != nil {
		t.Fatal(err)
	}
	if err := pods.Delete(ctx, "default", "pending", client.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := pods.Get(ctx, "default", "pending"); !client.IsNotFound(err) {
		t.Fatalf("unbound pod after delete: %v, want NotFound", err)
	}

	// A bound pod waits for its agent: deletionTimestamp, then a grace-0 delete removes it.
	p, err := pods.Create(ctx, newPod("running", "node-1"))
	if err != nil {
		t.Fatal(err)
	}
	if p.Status.Phase != core.PodPending || p.Status.QOSClass != core.QOSBestEffort {
		t.Errorf("new pod status: phase %q qos %q", p.Status.Phase, p.Status.QOSClass)
	}
	if err := pods.Delete(ctx, "default", "running", client.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	p, err = pods.Get(ctx, "default", "running")
	if err != nil {
		t.Fatalf("bound pod vanished before its agent confirmed: %v", err)
	}
	if p.DeletionTimestamp == nil || p.DeletionGracePeriodSeconds == nil || *p.DeletionGracePeriodSeconds != 30 {
		t.Fatalf("bound pod not marked for graceful deletion: %+v", p.ObjectMeta)
	}
	zero := int64(0)
	if err := pods.Delete(ctx, "default", "running", client.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatal(err)
	}
	if _, err := pods.Get(ctx, "default", "running"); !client.IsNotFound(err) {
		t.Fatalf("pod after the agent's confirmation: %v, want NotFound", err)
	}

	// A finalizer holds deletion until it is removed.
	cms := client.For[*core.ConfigMap](s.Client)
	cm := &core.ConfigMap{ObjectMeta: meta.ObjectMeta{Name: "held", Namespace: "default", Finalizers: []string{"example.com/hold"}}}
	if _, err := cms.Create(ctx, cm); err != nil {
		t.Fatal(err)
	}
	if err := cms.Delete(ctx, "default", "held", client.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	held, err := cms.Get(ctx, "default", "held")
	if err != nil || held.DeletionTimestamp == nil {
		t.Fatalf("finalized object: %v, deletionTimestamp %v", err, held)
	}
	held.Finalizers = append(held.Finalizers, "example.com/new")
	if _, err := cms.Update(ctx, held); !client.IsInvalid(err) {
		t.Errorf("adding a finalizer during deletion: %v, want InvalidArgument", err)
	}
	held.Finalizers = nil
	if _, err := cms.Update(ctx, held); err != nil {
		t.Fatal(err)
	}
	if _, err := cms.Get(ctx, "default", "held"); !client.IsNotFound(err) {
		t.Fatalf("object after its last finalizer went: %v, want NotFound", err)
	}
}

func TestNamespaceDeletionDeletesContents(t *testing.T) {
	s := testserver.New(t)
	ctx := ctxT(t)
	nss := client.For[*core.Namespace](s.Client)
	cms := client.For[*core.ConfigMap](s.Client)
	if _, err := nss.Create(ctx, &core.Namespace{ObjectMeta: meta.ObjectMeta{Name: "shop"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := cms.Create(ctx, &core.ConfigMap{ObjectMeta: meta.ObjectMeta{Name: "c", Namespace: "shop"}}); err != nil {
		t.Fatal(err)
	}
	w, err := nss.Watch(ctx, "", client.ListOptions{FieldSelector: "metadata.name=shop"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := nss.Delete(ctx, "", "shop", client.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cms.Create(ctx, &core.ConfigMap{ObjectMeta: meta.ObjectMeta{Name: "late", Namespace: "shop"}}); err == nil || !strings.Contains(err.Error(), "being terminated") {
		t.Errorf("create in a terminating namespace: %v", err)
	}
	for ev := range w.Events {
		if ev.Type == "DELETED" {
			break
		}
	}
	if _, err := cms.Get(ctx, "shop", "c"); !client.IsNotFound(err) {
		t.Errorf("configmap in deleted namespace: %v, want NotFound", err)
	}
	if err := nss.Delete(ctx, "", "default", client.DeleteOptions{}); err == nil {
		t.Error("deleting the default namespace should be refused")
	}
}

func TestBindAndFieldSelectors(t *testing.T) {
	s := testserver.New(t)
	ctx := ctxT(t)
	pods := client.For[*core.Pod](s.Client)
	p, err := pods.Create(ctx, newPod("web-1", ""))
	if err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w, err := pods.Watch(wctx, "", client.ListOptions{FieldSelector: "spec.nodeName=node-2"}, client.ResourceVersion(p))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Client.Bind(ctx, "default", "web-1", p.UID, "node-2"); err != nil {
		t.Fatal(err)
	}
	if err := s.Client.Bind(ctx, "default", "web-1", p.UID, "node-3"); !client.IsConflict(err) {
		t.Errorf("second bind: %v, want a conflict", err)
	}
	select {
	case ev := <-w.Events:
		// The pod starts matching spec.nodeName=node-2: ADDED, as in Kubernetes.
		if ev.Type != "ADDED" || ev.Object.Spec.NodeName != "node-2" {
			t.Errorf("watch event %s nodeName %q", ev.Type, ev.Object.Spec.NodeName)
		}
		if len(ev.Object.Status.Conditions) == 0 || ev.Object.Status.Conditions[0].Type != core.PodScheduled {
			t.Errorf("bound pod lacks PodScheduled: %+v", ev.Object.Status.Conditions)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no watch event for the bind")
	}
	got, _, err := pods.List(ctx, "", client.ListOptions{FieldSelector: "spec.nodeName=node-2,status.phase=Pending", LabelSelector: "app in (web)"})
	if err != nil || len(got) != 1 {
		t.Fatalf("field+label selector list: %d items, %v", len(got), err)
	}
	if _, _, err := pods.List(ctx, "", client.ListOptions{FieldSelector: "spec.color=blue"}); !client.IsInvalid(err) {
		t.Errorf("unsupported field selector: %v, want InvalidArgument", err)
	}
}

func TestMetricsAndHealth(t *testing.T) {
	s := testserver.New(t)
	ctx := ctxT(t)
	if _, _, err := client.For[*core.Pod](s.Client).List(ctx, "", client.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{
		"/healthz": "ok",
		"/metrics": `kobune_apiserver_requests_total{code="OK",resource="pods",verb="list"} 1`,
	} {
		resp, err := http.Get("http://" + s.MetricsAddr() + path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !strings.Contains(string(b), want) {
			t.Errorf("%s does not contain %q", path, want)
		}
	}
}

// TestExternalEtcd runs a second API server against the first one's etcd
// through --etcd-servers: both see the same objects.
func TestExternalEtcd(t *testing.T) {
	embedded := testserver.New(t)
	external := testserver.New(t, func(c *apiserver.Config) {
		c.EtcdServers = strings.Join(embedded.EtcdEndpoints(), ",")
	})
	ctx := ctxT(t)
	if _, err := client.For[*core.ConfigMap](external.Client).Create(ctx, &core.ConfigMap{ObjectMeta: meta.ObjectMeta{Name: "shared", Namespace: "default"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.For[*core.ConfigMap](embedded.Client).Get(ctx, "default", "shared"); err != nil {
		t.Fatalf("object written through the external-etcd server is not visible through the embedded one: %v", err)
	}
}

func TestPriorityAdmission(t *testing.T) {
	s := testserver.New(t)
	ctx := ctxT(t)
	if _, err := client.For[*scheduling.PriorityClass](s.Client).Create(ctx, &scheduling.PriorityClass{ObjectMeta: meta.ObjectMeta{Name: "high"}, Value: 1000}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.For[*scheduling.PriorityClass](s.Client).Get(ctx, "", "system-node-critical"); err != nil {
		t.Errorf("built-in class system-node-critical: %v", err)
	}
	pods := client.For[*core.Pod](s.Client)
	p := newPod("important", "")
	p.Spec.PriorityClassName = "high"
	got, err := pods.Create(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	if got.Spec.Priority == nil || *got.Spec.Priority != 1000 || got.Spec.PreemptionPolicy == nil || *got.Spec.PreemptionPolicy != "PreemptLowerPriority" {
		t.Errorf("priority %v, preemptionPolicy %v", got.Spec.Priority, got.Spec.PreemptionPolicy)
	}
	plain, err := pods.Create(ctx, newPod("plain", ""))
	if err != nil || plain.Spec.Priority == nil || *plain.Spec.Priority != 0 {
		t.Errorf("a pod without a class: priority %v (%v), want 0", plain.Spec.Priority, err)
	}
	missing := newPod("missing", "")
	missing.Spec.PriorityClassName = "nope"
	if _, err := pods.Create(ctx, missing); err == nil || !strings.Contains(err.Error(), "no PriorityClass with name nope was found") {
		t.Errorf("unknown class: %v", err)
	}
	forged := newPod("forged", "")
	five := int32(5)
	forged.Spec.Priority = &five
	if _, err := pods.Create(ctx, forged); err == nil || !strings.Contains(err.Error(), "must not be provided in pod spec") {
		t.Errorf("priority set by hand: %v", err)
	}
}

// TestCloseWhileServeStarts: a server closed while Serve is starting (a
// test server stopped right after its first answer) neither races nor
// hangs: Serve's start and Close are ordered (a CI run's race detector
// caught Close reading the metrics server Serve was still setting).
func TestCloseWhileServeStarts(t *testing.T) {
	for range 5 {
		srv, err := apiserver.New(context.Background(), apiserver.Config{Listen: "127.0.0.1:0", DataDir: t.TempDir(), MetricsListen: "127.0.0.1:0",
			InsecurePlaintext: true, Logf: func(string, ...any) {}})
		if err != nil {
			t.Fatal(err)
		}
		served := make(chan error, 1)
		go func() { served <- srv.Serve(context.Background()) }()
		srv.Close()
		select {
		case <-served:
		case <-time.After(30 * time.Second):
			t.Fatal("Serve did not return after Close")
		}
	}
}
