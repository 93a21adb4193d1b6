package reconcile_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kobune/kobune/api/batch"
	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/client"
	"github.com/kobune/kobune/client/reconcile"
	"github.com/kobune/kobune/controller"
	"github.com/kobune/kobune/controller/controllertest"
)

type panicky struct{ calls int }

func (p *panicky) Reconcile(context.Context, string) (reconcile.Result, error) {
	p.calls++
	var shift int
	shift--
	_ = 1 << shift // the kind of bug a bad schedule once hit: negative shift amount
	return reconcile.Result{}, nil
}

// A panic in Reconcile is an error for that key (retried with back-off), a
// log line and a Warning event on the object; the loop and the process go on.
func TestPanicInReconcileIsAnErrorAndAnEvent(t *testing.T) {
	c, api := controllertest.NewClient()
	inf := controller.NewInformers(c)
	cj := &batch.CronJob{ObjectMeta: meta.ObjectMeta{Name: "bad", Namespace: "default", UID: "u1"}}
	inf.CronJobs.Seed(cj)
	recorder := client.NewAsyncRecorder(&client.Recorder{Client: c, Component: "kobune-controller"}, 10)
	r := &panicky{}
	l := reconcile.NewLoop("cronjob-controller", r, 1)
	var mu sync.Mutex
	var logged []string
	l.Logf = func(f string, args ...any) { mu.Lock(); logged = append(logged, f); mu.Unlock() }
	l.Object, l.Recorder = reconcile.ObjectsOf(inf.CronJobs), recorder
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	go recorder.Run(ctx, 1)
	l.Queue.Add("default/bad")
	done := make(chan struct{})
	go func() { l.Run(ctx); close(done) }()
	for l.Panics() < 2 && ctx.Err() == nil { // retried after its back-off, panicking again
		time.Sleep(10 * time.Millisecond)
	}
	if l.Panics() < 2 {
		t.Fatalf("%d panics recovered; want the key retried", l.Panics())
	}
	for ctx.Err() == nil && len(api.Filter("create", "events")) == 0 {
		time.Sleep(10 * time.Millisecond)
	}
	evs := api.Filter("create", "events")
	if len(evs) == 0 {
		t.Fatal("no event for the panic")
	}
	ev := controllertest.Decode[core.Event](evs[0])
	if ev.Type != "Warning" || ev.Reason != "ReconcilePanic" || ev.InvolvedObject.Name != "bad" || !strings.Contains(ev.Message, "negative shift amount") {
		t.Errorf("event %+v", ev)
	}
	cancel()
	<-done
	mu.Lock()
	defer mu.Unlock()
	if len(logged) == 0 || !strings.Contains(logged[0], "panicked") {
		t.Errorf("log %q", logged)
	}
}
