package dynamicadmission

import (
	"context"
	"sync/atomic"

	"github.com/kobune/kobune/api/admissionregistration"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/api/scheme"
	"github.com/kobune/kobune/apiserver/registry"
	"github.com/kobune/kobune/apiserver/storage"
	"github.com/kobune/kobune/apiserver/webhook"
)

// Config is what the webhooks need from the server.
type Config struct {
	Store *storage.Store
	// Namespaces gives a namespace's labels (namespaceSelector).
	Namespaces interface {
		NamespaceLabels(ctx context.Context, name string) (map[string]string, bool, error)
	}
	// Kinds resolve a policy's paramKind (custom kinds included).
	Kinds *scheme.Kinds
	Logf  func(format string, args ...any)
}

// Webhooks keeps the configured webhooks and calls them; Mutating and
// Validating are its two steps of the admission chain.
type Webhooks struct {
	cfg        Config
	mutating   atomic.Pointer[[]admissionregistration.Webhook]
	validating atomic.Pointer[[]admissionregistration.Webhook]
	caller     *webhook.Caller
	conditions conditions
	policies   policies
	// mutatingPolicies are the MutatingAdmissionPolicies' bindings.
	mutatingPolicies mutatingPolicies
	// updateStatus writes a policy's status (ReportPoliciesWith).
	updateStatus func(ctx context.Context, k *scheme.Kind, o meta.Object) ([]byte, error)
}

// New returns the webhooks; Run follows their configurations.
func New(cfg Config) *Webhooks {
	w := &Webhooks{cfg: cfg, caller: &webhook.Caller{Store: cfg.Store}}
	w.mutating.Store(&[]admissionregistration.Webhook{})
	w.validating.Store(&[]admissionregistration.Webhook{})
	return w
}

// Run follows the configurations until ctx ends: each change replaces
// the list the next request reads.
func (w *Webhooks) Run(ctx context.Context) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		follow(ctx, w.cfg.Store, "mutatingwebhookconfigurations", &w.mutating, func(o meta.Object) []admissionregistration.Webhook {
			c := o.(*admissionregistration.MutatingWebhookConfiguration)
			var out []admissionregistration.Webhook
			for i := range c.Webhooks {
				out = append(out, c.Webhooks[i].Common(c.Name))
			}
			return out
		})
	}()
	policiesDone := make(chan struct{})
	go func() {
		defer close(policiesDone)
		w.runPolicies(ctx)
	}()
	defer func() { <-policiesDone }()
	mutatingDone := make(chan struct{})
	go func() {
		defer close(mutatingDone)
		w.runMutatingPolicies(ctx)
	}()
	defer func() { <-mutatingDone }()
	follow(ctx, w.cfg.Store, "validatingwebhookconfigurations", &w.validating, func(o meta.Object) []admissionregistration.Webhook {
		c := o.(*admissionregistration.ValidatingWebhookConfiguration)
		var out []admissionregistration.Webhook
		for i := range c.Webhooks {
			out = append(out, c.Webhooks[i].Common(c.Name))
		}
		return out
	})
	<-done
}

// follow keeps list equal to the webhooks of every configuration of
// resource, ordered as Kubernetes orders them: by configuration name,
// then as listed.
func follow(ctx context.Context, st *storage.Store, resource string, list *atomic.Pointer[[]admissionregistration.Webhook], hooks func(meta.Object) []admissionregistration.Webhook) {
	followByName(ctx, st, resource, func(configs map[string]meta.Object) {
		var out []admissionregistration.Webhook
		for _, name := range sortedNames(configs) {
			out = append(out, hooks(configs[name])...)
		}
		list.Store(&out)
	})
}

// followByName follows the objects of a cluster-scoped resource until ctx
// ends and calls changed with all of them, by name, after each change
// (the map is the follower's: changed reads it and keeps none of it).
func followByName(ctx context.Context, st *storage.Store, resource string, changed func(map[string]meta.Object)) {
	objects := map[string]meta.Object{}
	registry.Follow(ctx, st, resource, nil, func(objs []meta.Object) {
		objects = map[string]meta.Object{}
		for _, o := range objs {
			objects[o.GetObjectMeta().Name] = o
		}
		changed(objects)
	}, func(ev storage.Event, o meta.Object) {
		if o == nil {
			delete(objects, keyName(ev.Key))
		} else {
			objects[o.GetObjectMeta().Name] = o
		}
		changed(objects)
	})
}
