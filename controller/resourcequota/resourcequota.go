// Package resourcequota is kube-controller-manager's resourcequota
// controller: it keeps each ResourceQuota's status — hard copied from
// spec.hard, used recomputed from the objects the quota counts. The API
// server's ResourceQuota admission step charges a quota as each object is
// written; this controller is what gives usage back when objects are
// deleted or pods finish, fills a new quota's usage, and corrects any
// drift.
//
// A recount reads the quota first and the objects after, both fresh from
// the API server, and writes the status only if the quota is still at the
// version read. Any object charged before that read is in the lists, and
// any charge after it moves the quota, so the write fails and the count
// is made again: a recount can never forget a charge (an informer cache
// could still miss an object its watch has not delivered).
package resourcequota

import (
	"context"
	"maps"
	"strings"
	"time"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/api/resource"
	"github.com/kobune/kobune/api/scheme"
	"github.com/kobune/kobune/client"
	"github.com/kobune/kobune/client/reconcile"
	"github.com/kobune/kobune/controller"
)

// Name of the controller, in logs.
const Name = "resourcequota-controller"

// DefaultResync is how often every quota is recounted even when nothing
// it watches changed (what it does not watch — ConfigMaps, Secrets,
// count/ of other kinds — is given back within this time).
const DefaultResync = 30 * time.Second

// Controller keeps ResourceQuota status.
type Controller struct {
	client *client.Client
	quotas *client.Informer[*core.ResourceQuota]
	Loop   *reconcile.Loop
	resync time.Duration
	now    func() time.Time
}

// New returns the controller (keys: namespace/name of quotas); resync 0
// is DefaultResync.
func New(c *client.Client, inf *controller.Informers, resync time.Duration) *Controller {
	if resync <= 0 {
		resync = DefaultResync
	}
	rc := &Controller{client: c, quotas: inf.Quotas, resync: resync, now: time.Now}
	rc.Loop = reconcile.NewLoop(Name, rc, 2)
	inf.Quotas.AddHandler(client.Handler[*core.ResourceQuota]{
		OnAdd: func(q *core.ResourceQuota) { rc.Loop.Queue.Add(meta.Key(q)) },
		OnUpdate: func(_, q *core.ResourceQuota) {
			// Its own status writes and admission's charges need no
			// recount; a changed spec does.
			if !equalLists(q.Spec.Hard, q.Status.Hard) {
				rc.Loop.Queue.Add(meta.Key(q))
			}
		}})
	// What gives usage back: a deleted or finished pod, a deleted or
	// changed Service or claim.
	inf.Pods.AddHandler(client.Handler[*core.Pod]{
		OnUpdate: func(old, p *core.Pod) {
			if core.PodCountsForQuota(old, rc.now()) != core.PodCountsForQuota(p, rc.now()) || (p.DeletionTimestamp != nil && old.DeletionTimestamp == nil) {
				rc.namespaceChanged(p.Namespace)
			}
		},
		OnDelete: func(p *core.Pod) { rc.namespaceChanged(p.Namespace) }})
	inf.Services.AddHandler(client.Handler[*core.Service]{
		OnUpdate: func(old, s *core.Service) {
			if old.Spec.Type != s.Spec.Type || len(old.Spec.Ports) != len(s.Spec.Ports) {
				rc.namespaceChanged(s.Namespace)
			}
		},
		OnDelete: func(s *core.Service) { rc.namespaceChanged(s.Namespace) }})
	inf.Claims.AddHandler(client.Handler[*core.PersistentVolumeClaim]{
		OnUpdate: func(old, c *core.PersistentVolumeClaim) {
			if !equalLists(old.Spec.Resources.Requests, c.Spec.Resources.Requests) {
				rc.namespaceChanged(c.Namespace)
			}
		},
		OnDelete: func(c *core.PersistentVolumeClaim) { rc.namespaceChanged(c.Namespace) }})
	return rc
}

// namespaceChanged recounts every quota of a namespace.
func (rc *Controller) namespaceChanged(ns string) {
	for _, q := range rc.quotas.ByIndex(client.IndexNamespace, ns) {
		rc.Loop.Queue.Add(meta.Key(q))
	}
}

// Reconcile implements reconcile.Reconciler: one quota recounted.
func (rc *Controller) Reconcile(ctx context.Context, key string) (reconcile.Result, error) {
	ns, name, _ := strings.Cut(key, "/")
	quotas := client.For[*core.ResourceQuota](rc.client)
	q, err := quotas.Get(ctx, ns, name)
	if client.IsNotFound(err) {
		return reconcile.Result{}, nil
	}
	if err != nil {
		return reconcile.Result{}, err
	}
	used, next, err := rc.count(ctx, q)
	if err != nil {
		return reconcile.Result{}, err
	}
	after := rc.resync
	if !next.IsZero() {
		after = min(after, max(time.Until(next), time.Second))
	}
	if equalLists(q.Status.Hard, q.Spec.Hard) && equalLists(q.Status.Used, used) {
		return reconcile.Result{RequeueAfter: after}, nil
	}
	updated := *q
	updated.Status = core.ResourceQuotaStatus{Hard: maps.Clone(q.Spec.Hard), Used: used}
	if _, err := quotas.UpdateStatus(ctx, &updated); err != nil {
		return reconcile.Result{}, err // a conflict: counted again
	}
	return reconcile.Result{RequeueAfter: after}, nil
}

// count is what the namespace uses of each resource the quota tracks,
// and when the earliest terminating pod it counts stops counting.
func (rc *Controller) count(ctx context.Context, q *core.ResourceQuota) (resource.List, time.Time, error) {
	now := rc.now()
	used := resource.List{}
	for n := range q.Spec.Hard {
		used[n] = resource.NewQuantity(0, resource.DecimalSI)
	}
	add := func(u resource.List) {
		for n, v := range u {
			if have, ok := used[n]; ok {
				used[n] = have.Add(v)
			}
		}
	}
	var next time.Time
	typed := map[string]bool{}
	wants := func(countName string, names ...resource.Name) bool {
		if _, ok := used[resource.Name(countName)]; ok {
			return true
		}
		if countName == "count/pods" {
			for n := range used {
				if core.IsExtendedRequestQuotaName(n) {
					return true
				}
			}
		}
		for _, n := range names {
			if _, ok := used[n]; ok {
				return true
			}
		}
		return false
	}
	podNames := []resource.Name{core.QuotaPods, resource.CPU, resource.Memory, resource.EphemeralStorage, core.QuotaRequestsCPU, core.QuotaRequestsMemory,
		core.QuotaRequestsEphemeral, core.QuotaLimitsCPU, core.QuotaLimitsMemory, core.QuotaLimitsEphemeral}
	if wants("count/pods", podNames...) {
		typed["pods"] = true
		pods, _, err := client.For[*core.Pod](rc.client).List(ctx, q.Namespace, client.ListOptions{})
		if err != nil {
			return nil, next, err
		}
		for _, p := range pods {
			if core.QuotaScoped(q) && !core.QuotaMatchesPod(q, p) {
				continue
			}
			add(core.QuotaUsage("count/pods", p, now))
			if p.DeletionTimestamp != nil && p.DeletionGracePeriodSeconds != nil && core.PodCountsForQuota(p, now) {
				end := p.DeletionTimestamp.Add(time.Duration(*p.DeletionGracePeriodSeconds)*time.Second + time.Millisecond)
				if next.IsZero() || end.Before(next) {
					next = end
				}
			}
		}
	}
	if !core.QuotaScoped(q) {
		if err := countTyped[*core.Service](ctx, rc, q.Namespace, "services", wants("count/services", core.QuotaServices, core.QuotaServicesNodePorts, core.QuotaServicesLoadBalancers), typed, add, now); err != nil {
			return nil, next, err
		}
		if err := countTyped[*core.PersistentVolumeClaim](ctx, rc, q.Namespace, "persistentvolumeclaims", wantsClaims(used), typed, add, now); err != nil {
			return nil, next, err
		}
		if err := countTyped[*core.Secret](ctx, rc, q.Namespace, "secrets", wants("count/secrets", core.QuotaSecrets), typed, add, now); err != nil {
			return nil, next, err
		}
		if err := countTyped[*core.ConfigMap](ctx, rc, q.Namespace, "configmaps", wants("count/configmaps", core.QuotaConfigMaps), typed, add, now); err != nil {
			return nil, next, err
		}
		if err := countTyped[*core.ResourceQuota](ctx, rc, q.Namespace, "resourcequotas", wants("count/resourcequotas", core.QuotaResourceQuotas), typed, add, now); err != nil {
			return nil, next, err
		}
		if err := countTyped[*core.ReplicationController](ctx, rc, q.Namespace, "replicationcontrollers", wants("count/replicationcontrollers", core.QuotaReplicationControllers), typed, add, now); err != nil {
			return nil, next, err
		}
		// count/<resource> of every other kind: the number of objects.
		for n := range q.Spec.Hard {
			k := scheme.CountedKind(n)
			if k == nil || typed[k.Resource] && k.Group() == "" {
				continue
			}
			items, _, err := rc.client.Resource(k).List(ctx, q.Namespace, client.ListOptions{})
			if err != nil {
				return nil, next, err
			}
			used[n] = resource.NewQuantity(int64(len(items)), resource.DecimalSI)
		}
	}
	return used, next, nil
}

func wantsClaims(used resource.List) bool {
	for n := range used {
		if n == "count/persistentvolumeclaims" || n == core.QuotaPersistentVolumeClaims || n == core.QuotaRequestsStorage || core.IsStorageClassQuotaName(n) {
			return true
		}
	}
	return false
}

// countTyped adds the usage of every object of one of the kinds whose
// usage is more than a count.
func countTyped[T meta.Object](ctx context.Context, rc *Controller, ns, res string, want bool, typed map[string]bool, add func(resource.List), now time.Time) error {
	if !want {
		return nil
	}
	typed[res] = true
	items, _, err := client.For[T](rc.client).List(ctx, ns, client.ListOptions{})
	if err != nil {
		return err
	}
	count := core.QuotaCountName(res, "")
	for _, o := range items {
		add(core.QuotaUsage(count, o, now))
	}
	return nil
}

func equalLists(a, b resource.List) bool {
	if len(a) != len(b) {
		return false
	}
	for n, q := range a {
		if o, ok := b[n]; !ok || !o.Equal(q) {
			return false
		}
	}
	return true
}
