// Package client is the public Go client of the Kobune API, for Kobune's
// own components and for anyone writing a controller or operator. It
// mirrors client-go, kept small enough to read in one sitting:
//
//   - client.go, typed.go: a connection and a typed client per kind
//     (For[*core.Pod](c)) with Create, Get, List, Update, UpdateStatus,
//     Delete and Watch; errors are tested with IsNotFound, IsConflict,
//     IsAlreadyExists and IsExpired.
//   - informer.go: a list-then-watch cache with indexes (by namespace, and
//     by spec.nodeName for pods) and add/update/delete handlers; it relists
//     when its watch expires.
//   - workqueue.go, clock.go: a deduplicating, rate-limited queue of keys
//     with an injectable clock.
//   - leaderelection.go: one active replica among several, on a Lease.
//   - wait.go: WaitFor, watch one object until a condition holds.
//
// A tiny controller that labels every new ConfigMap, with the shape every
// Kobune controller has — handlers enqueue keys, workers reconcile from
// the cache, errors retry with backoff:
//
//	c, _ := client.New("127.0.0.1:6443")
//	cms := client.For[*core.ConfigMap](c)
//	inf := client.NewInformer(cms, "", client.ListOptions{})
//	q := client.NewQueue(nil)
//	enqueue := func(cm *core.ConfigMap) { q.Add(meta.Key(cm)) }
//	inf.AddHandler(client.Handler[*core.ConfigMap]{
//		OnAdd:    enqueue,
//		OnUpdate: func(_, cm *core.ConfigMap) { enqueue(cm) },
//	})
//	go inf.Run(ctx)
//	client.WaitForSync(ctx, inf.HasSynced)
//	go func() { <-ctx.Done(); q.ShutDown() }()
//	for {
//		key, quit := q.Get()
//		if quit {
//			return
//		}
//		err := reconcile(ctx, cms, inf, key) // re-read from inf, act, return error to retry
//		if err != nil {
//			q.AddRateLimited(key)
//		} else {
//			q.Forget(key)
//		}
//		q.Done(key)
//	}
//
// The runnable version is ExampleInformer in example_test.go.
package client
