// Package reconcile is the reconcile loop every Kobune controller runs, in
// kobune-controller and in kobune-agent alike (controller-runtime's
// pkg/reconcile and its controller workers): informer handlers put keys
// ("namespace/name") on a deduplicating, rate-limited workqueue
// (client.Queue), and workers call Reconcile(ctx, key) for each under the
// contract in Reconciler's doc comment (docs/architecture.md, "the
// reconcile contract"): level-based, retried with per-key back-off, a
// panic turned into an error and an event.
package reconcile
