package client_test

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/apiserver/testserver"
	"github.com/kobune/kobune/client"
)

// ExampleInformer is a tiny controller: it labels every ConfigMap it sees
// with seen-by=example, the way every Kobune controller is shaped.
func ExampleInformer() {
	dir, _ := os.MkdirTemp("", "kobune-example")
	defer os.RemoveAll(dir)
	srv, err := testserver.Start(dir, "") // a real apiserver on embedded etcd
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	c, _ := client.New(srv.Addr())
	defer c.Close()
	cms := client.For[*core.ConfigMap](c)
	inf := client.NewInformer(cms, "", client.ListOptions{})
	q := client.NewQueue(nil)
	enqueue := func(cm *core.ConfigMap) { q.Add(meta.Key(cm)) }
	inf.AddHandler(client.Handler[*core.ConfigMap]{OnAdd: enqueue, OnUpdate: func(_, cm *core.ConfigMap) { enqueue(cm) }})
	go inf.Run(ctx)
	client.WaitForSync(ctx, inf.HasSynced)

	reconcile := func(key string) error {
		cached, ok := inf.GetByKey(key)
		if !ok || cached.Labels["seen-by"] == "example" {
			return nil // gone, or already done: level-based, nothing to do
		}
		cm := *cached // objects from the cache are shared: copy first
		cm.Labels = map[string]string{"seen-by": "example"}
		_, err := cms.Update(ctx, &cm)
		return err // a conflict means "look again": the queue retries
	}
	go func() {
		for {
			key, quit := q.Get()
			if quit {
				return
			}
			if err := reconcile(key); err != nil {
				q.AddRateLimited(key)
			} else {
				q.Forget(key)
			}
			q.Done(key)
		}
	}()
	defer q.ShutDown()

	_, _ = cms.Create(ctx, &core.ConfigMap{ObjectMeta: meta.ObjectMeta{Name: "settings", Namespace: "default"}})
	w, _ := cms.Watch(ctx, "default", client.ListOptions{LabelSelector: "seen-by=example"}, 0)
	ev := <-w.Events
	fmt.Println(ev.Type, ev.Object.Name, ev.Object.Labels["seen-by"])
	// Output: ADDED settings example
}
