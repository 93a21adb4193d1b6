package admission

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/resource"
)

// QuotaLister reads a namespace's ResourceQuotas (with their
// resourceVersions) and the store revision the view is valid at: from a
// watch-fed cache, or fresh from the store.
type QuotaLister interface {
	Quotas(ctx context.Context, namespace string, fresh bool) ([]*core.ResourceQuota, int64, error)
}

// QuotaCharges is what the ResourceQuota plugin decided for one write:
// the quotas with their new status.used, which the server writes in the
// same transaction as the object, each only if it is still at the
// resourceVersion it was judged at, and only if no quota of the
// namespace changed after Revision. A write that fails those checks is
// admitted again on a fresh view (Fresh).
type QuotaCharges struct {
	Fresh     bool
	Namespace string
	// Revision is the view's revision; 0 when no quota was consulted.
	Revision int64
	Quotas   []*core.ResourceQuota
}

type chargesKey struct{}

// WithQuotaCharges returns a context whose writes collect their quota
// charges in the returned value (fresh: judge on the store, not the cache).
func WithQuotaCharges(ctx context.Context, fresh bool) (context.Context, *QuotaCharges) {
	c := &QuotaCharges{Fresh: fresh}
	return context.WithValue(ctx, chargesKey{}, c), c
}

// ResourceQuota is Kubernetes' admission plugin of that name (the last
// validator): a create — or an update that raises what a pod, Service or
// claim uses — in a namespace with quotas is refused (403, in Kubernetes'
// words) when it would take a quota's status.used over its spec.hard, or
// when a pod names no request or limit a quota tracks; otherwise each
// quota that counts it is charged, in the same etcd transaction as the
// write. Concurrent writes cannot both take the last unit: the second
// finds the quota moved and is judged again. Releasing (deletes, finished
// pods) is the resourcequota controller's.
type ResourceQuota struct {
	Quotas QuotaLister
	Now    func() time.Time
}

// Name implements Validator.
func (ResourceQuota) Name() string { return "ResourceQuota" }

// Validate implements Validator.
func (r ResourceQuota) Validate(ctx context.Context, a *Attributes) error {
	if r.Quotas == nil || !a.Kind.Namespaced || a.Kind.Resource == "resourcequotas" {
		return nil
	}
	now := time.Now()
	if r.Now != nil {
		now = r.Now()
	}
	count := core.QuotaCountName(a.Kind.Resource, a.Kind.Group())
	delta := core.QuotaUsage(count, a.Object, now)
	if a.Operation == Update {
		switch a.Object.(type) {
		case *core.Pod, *core.Service, *core.PersistentVolumeClaim:
		default:
			return nil // only these use more by changing
		}
		delta = raised(delta, core.QuotaUsage(count, a.OldObject, now))
		if len(delta) == 0 {
			return nil
		}
	}
	charges, _ := ctx.Value(chargesKey{}).(*QuotaCharges)
	fresh := charges != nil && charges.Fresh
	m := a.Object.GetObjectMeta()
	quotas, rev, err := r.Quotas.Quotas(ctx, m.Namespace, fresh)
	if err == nil {
		var charged []*core.ResourceQuota
		charged, err = judge(a, quotas, delta)
		if err != nil && !fresh {
			// Refuse only on a fresh view: the cache may hold a quota
			// already changed or deleted.
			if quotas, rev, err = r.Quotas.Quotas(ctx, m.Namespace, true); err == nil {
				charged, err = judge(a, quotas, delta)
			}
		}
		if err == nil && charges != nil {
			charges.Namespace, charges.Revision, charges.Quotas = m.Namespace, rev, charged
		}
		return err
	}
	return status.Errorf(codes.Unavailable, "look up the ResourceQuotas of namespace %s: %v", m.Namespace, err)
}

// ValidateSubresource implements SubresourceValidator: a resize
// that raises a pod's requests or limits is charged as an update of the
// pod is (Kubernetes' ResourceQuota evaluates pods/resize).
func (r ResourceQuota) ValidateSubresource(ctx context.Context, a *Attributes) error {
	if a.Subresource != "resize" {
		return nil
	}
	return r.Validate(ctx, a)
}

// judge checks a write's usage against every quota that counts it and
// returns those quotas charged.
func judge(a *Attributes, quotas []*core.ResourceQuota, delta resource.List) ([]*core.ResourceQuota, error) {
	pod, isPod := a.Object.(*core.Pod)
	sorted := append([]*core.ResourceQuota(nil), quotas...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	var charged []*core.ResourceQuota
	for _, q := range sorted {
		if core.QuotaScoped(q) && (!isPod || !core.QuotaMatchesPod(q, pod)) {
			continue
		}
		if isPod && a.Operation == Create {
			if msg := core.QuotaConstraints(q.Spec.Hard, pod); msg != "" {
				return nil, forbidden(a, fmt.Sprintf("failed quota: %s: %s", q.Name, msg))
			}
		}
		requested := resource.List{}
		for n, qty := range delta {
			if _, ok := q.Spec.Hard[n]; ok {
				requested[n] = qty
			}
		}
		if len(requested) == 0 {
			continue
		}
		var unknown []string
		for n := range requested {
			if _, ok := q.Status.Used[n]; !ok {
				unknown = append(unknown, string(n))
			}
		}
		if len(unknown) > 0 {
			sort.Strings(unknown)
			return nil, forbidden(a, fmt.Sprintf("status unknown for quota: %s, resources: %s (the resourcequota controller of kobune-controller fills it; is it running?)",
				q.Name, strings.Join(unknown, ",")))
		}
		used := q.Status.Used.DeepCopy()
		exceeded := resource.List{}
		for n, qty := range requested {
			used[n] = used[n].Add(qty)
			if used[n].Cmp(q.Spec.Hard[n]) > 0 {
				exceeded[n] = qty
			}
		}
		if len(exceeded) > 0 {
			was, hard := resource.List{}, resource.List{}
			for n := range exceeded {
				was[n], hard[n] = q.Status.Used[n], q.Spec.Hard[n]
			}
			return nil, forbidden(a, fmt.Sprintf("exceeded quota: %s, requested: %s, used: %s, limited: %s",
				q.Name, core.QuotaList(exceeded), core.QuotaList(was), core.QuotaList(hard)))
		}
		c := *q
		c.Status.Used = used
		charged = append(charged, &c)
	}
	return charged, nil
}

// raised is how much more of each resource now uses than before.
func raised(now, before resource.List) resource.List {
	out := resource.List{}
	for n, q := range now {
		if d := q.Sub(before[n]); d.Sign() > 0 {
			out[n] = d
		}
	}
	return out
}

func forbidden(a *Attributes, msg string) error {
	return status.Errorf(codes.PermissionDenied, "%s %q is forbidden: %s", a.Kind.QualifiedResource(), a.Object.GetObjectMeta().Name, msg)
}
