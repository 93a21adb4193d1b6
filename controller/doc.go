// Package controller is kobune-controller (kube-controller-manager): the
// reconcilers that turn desired state into pods and keep nodes and owners
// tidy. This package holds what they share:
//
//   - each controller runs a reconcile.Loop (client/reconcile, shared with
//     kobune-agent): informer handlers enqueue keys ("namespace/name") onto a
//     deduplicating, rate-limited workqueue, and workers call
//     Reconcile(ctx, key) for each (docs/architecture.md, "the reconcile
//     contract");
//   - the ownership kit (owners.go): OwnedBy, the handler that enqueues an
//     object's controller owner, Claim (adopt and release), ControllerRef,
//     and Expectations;
//   - Informers are the shared informers, one per kind, that every
//     controller reads from and registers handlers on;
//   - Manager (manager.go) builds the controllers and runs them while the
//     process holds the leader Lease (cmd/kobune-controller).
//
// The controllers themselves live one per package beside it: replicaset,
// deployment, daemonset, statefulset, job, cronjob, endpointslice,
// garbagecollector, nodelifecycle, nodeipam; controllermanager assembles them, controllertest is the
// unit-test fixture. docs/controllers.md is the user's guide.
package controller
