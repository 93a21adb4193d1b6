// Package serviceaccount holds two of kube-controller-manager's
// controllers for pods' identities: the serviceaccount controller, which
// makes a "default" ServiceAccount in every namespace (and again if it is
// deleted), and the root-ca-cert-publisher, which keeps a kube-root-ca.crt
// ConfigMap with the cluster CA in every namespace, for the ca.crt of
// pods' token volumes.
package serviceaccount

import (
	"context"
	"maps"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/client"
	"github.com/kobune/kobune/client/reconcile"
	"github.com/kobune/kobune/controller"
)

// Names of the two controllers, in logs.
const (
	Name          = "serviceaccount-controller"
	PublisherName = "root-ca-cert-publisher"
)

// Controller makes the default ServiceAccounts.
type Controller struct {
	client     *client.Client
	namespaces *client.Informer[*core.Namespace]
	accounts   *client.Informer[*core.ServiceAccount]
	Loop       *reconcile.Loop
}

// New returns the serviceaccount controller (keys: namespace names).
func New(c *client.Client, inf *controller.Informers) *Controller {
	sc := &Controller{client: c, namespaces: inf.Namespaces, accounts: inf.ServiceAccounts}
	sc.Loop = reconcile.NewLoop(Name, sc, 2)
	inf.Namespaces.AddHandler(client.Handler[*core.Namespace]{OnAdd: func(n *core.Namespace) { sc.Loop.Queue.Add(n.Name) },
		OnUpdate: func(_, n *core.Namespace) { sc.Loop.Queue.Add(n.Name) }})
	inf.ServiceAccounts.AddHandler(client.Handler[*core.ServiceAccount]{OnDelete: func(sa *core.ServiceAccount) {
		if sa.Name == core.DefaultServiceAccountName {
			sc.Loop.Queue.Add(sa.Namespace)
		}
	}})
	return sc
}

// Reconcile implements reconcile.Reconciler for a namespace.
func (sc *Controller) Reconcile(ctx context.Context, ns string) (reconcile.Result, error) {
	n, ok := sc.namespaces.Get("", ns)
	if !ok || n.Status.Phase == core.NamespaceTerminating || n.DeletionTimestamp != nil {
		return reconcile.Result{}, nil
	}
	if _, ok := sc.accounts.Get(ns, core.DefaultServiceAccountName); ok {
		return reconcile.Result{}, nil
	}
	_, err := client.For[*core.ServiceAccount](sc.client).Create(ctx, &core.ServiceAccount{ObjectMeta: meta.ObjectMeta{Namespace: ns, Name: core.DefaultServiceAccountName}})
	if client.IsAlreadyExists(err) {
		err = nil
	}
	return reconcile.Result{}, err
}

// Publisher keeps kube-root-ca.crt in every namespace.
type Publisher struct {
	client     *client.Client
	namespaces *client.Informer[*core.Namespace]
	maps       *client.Informer[*core.ConfigMap]
	ca         string
	Loop       *reconcile.Loop
}

// NewPublisher returns the root-ca-cert-publisher for the CA in PEM.
func NewPublisher(c *client.Client, inf *controller.Informers, caPEM string) *Publisher {
	p := &Publisher{client: c, namespaces: inf.Namespaces, maps: inf.RootCAConfigMaps, ca: caPEM}
	p.Loop = reconcile.NewLoop(PublisherName, p, 2)
	inf.Namespaces.AddHandler(client.Handler[*core.Namespace]{OnAdd: func(n *core.Namespace) { p.Loop.Queue.Add(n.Name) },
		OnUpdate: func(_, n *core.Namespace) { p.Loop.Queue.Add(n.Name) }})
	inf.RootCAConfigMaps.AddHandler(client.Handler[*core.ConfigMap]{OnUpdate: func(_, cm *core.ConfigMap) { p.Loop.Queue.Add(cm.Namespace) },
		OnDelete: func(cm *core.ConfigMap) { p.Loop.Queue.Add(cm.Namespace) }})
	return p
}

// Reconcile implements reconcile.Reconciler for a namespace.
func (p *Publisher) Reconcile(ctx context.Context, ns string) (reconcile.Result, error) {
	n, ok := p.namespaces.Get("", ns)
	if !ok || n.Status.Phase == core.NamespaceTerminating || n.DeletionTimestamp != nil {
		return reconcile.Result{}, nil
	}
	configMaps := client.For[*core.ConfigMap](p.client)
	cm, ok := p.maps.Get(ns, core.RootCAConfigMapName)
	if !ok {
		_, err := configMaps.Create(ctx, &core.ConfigMap{ObjectMeta: meta.ObjectMeta{Namespace: ns, Name: core.RootCAConfigMapName,
			Annotations: map[string]string{"kubernetes.io/description": "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the internal service IP or kubernetes.default.svc. No other usage is guaranteed across distributions of Kubernetes clusters."}},
			Data: map[string]string{"ca.crt": p.ca}})
		if client.IsAlreadyExists(err) {
			err = nil
		}
		return reconcile.Result{}, err
	}
	if cm.Data["ca.crt"] == p.ca {
		return reconcile.Result{}, nil
	}
	updated := *cm
	updated.Data = maps.Clone(cm.Data)
	if updated.Data == nil {
		updated.Data = map[string]string{}
	}
	updated.Data["ca.crt"] = p.ca
	_, err := configMaps.Update(ctx, &updated)
	return reconcile.Result{}, err
}
