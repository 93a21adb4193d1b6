// Package clusterroleaggregation is kube-controller-manager's
// clusterrole-aggregation controller: a ClusterRole with an
// aggregationRule gets, as its rules, the rules of every ClusterRole its
// selectors match, kept current as those roles come, change and go. This
// is how admin, edit and view grow when a ClusterRole labelled
// rbac.authorization.k8s.io/aggregate-to-edit: "true" is added (for a new
// kind of resource, say).
package clusterroleaggregation

import (
	"context"
	"reflect"

	"github.com/kobune/kobune/api/rbac"
	"github.com/kobune/kobune/client"
	"github.com/kobune/kobune/client/reconcile"
	"github.com/kobune/kobune/controller"
)

// Name is the controller's name in logs.
const Name = "clusterrole-aggregation-controller"

// Controller keeps aggregated ClusterRoles' rules.
type Controller struct {
	client *client.Client
	roles  *client.Informer[*rbac.ClusterRole]
	Loop   *reconcile.Loop
}

// New returns the controller.
func New(c *client.Client, inf *controller.Informers) *Controller {
	cc := &Controller{client: c, roles: inf.ClusterRoles}
	cc.Loop = reconcile.NewLoop(Name, cc, 1)
	// Any change may change what an aggregated role should hold: look at
	// every aggregated role again (there are a handful).
	all := func() {
		for _, r := range cc.roles.List() {
			if r.AggregationRule != nil {
				cc.Loop.Queue.Add(r.Name)
			}
		}
	}
	inf.ClusterRoles.AddHandler(client.Handler[*rbac.ClusterRole]{
		OnAdd:    func(*rbac.ClusterRole) { all() },
		OnUpdate: func(_, _ *rbac.ClusterRole) { all() },
		OnDelete: func(*rbac.ClusterRole) { all() },
	})
	return cc
}

// Reconcile implements reconcile.Reconciler for a ClusterRole's name.
func (cc *Controller) Reconcile(ctx context.Context, name string) (reconcile.Result, error) {
	role, ok := cc.roles.Get("", name)
	if !ok {
		return reconcile.Result{}, nil
	}
	rules, aggregated := rbac.AggregatedRules(role, cc.roles.List())
	if !aggregated || reflect.DeepEqual(rules, role.Rules) || (len(rules) == 0 && len(role.Rules) == 0) {
		return reconcile.Result{}, nil
	}
	updated := *role
	updated.Rules = rules
	_, err := client.For[*rbac.ClusterRole](cc.client).Update(ctx, &updated)
	return reconcile.Result{}, err // a conflict: the next event looks again
}
