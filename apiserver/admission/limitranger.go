package admission

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/resource"
)

// LimitRangeLister lists a namespace's LimitRanges, for LimitRanger.
type LimitRangeLister interface {
	LimitRanges(ctx context.Context, namespace string) ([]*core.LimitRange, error)
}

// LimitRanger is Kubernetes' admission plugin of that name, for new pods
// and claims: it gives each container the default limits and requests
// of the namespace's Container LimitRanges for what it names none of
// (Admit), then refuses — 403, every violation named — a container
// outside a Container range's min and max or over its
// maxLimitRequestRatio, a pod whose containers' sums are outside a Pod
// range, and a claim whose requests.storage is outside a
// PersistentVolumeClaim range (Validate).
type LimitRanger struct {
	Ranges LimitRangeLister
}

// Name implements Mutator and Validator.
func (LimitRanger) Name() string { return "LimitRanger" }

func (l LimitRanger) ranges(ctx context.Context, ns string) ([]*core.LimitRange, error) {
	if l.Ranges == nil {
		return nil, nil
	}
	rs, err := l.Ranges.LimitRanges(ctx, ns)
	if err != nil {
		return nil, status.Errorf(codes.Unavailable, "look up the LimitRanges of namespace %s: %v", ns, err)
	}
	return rs, nil
}

// Admit implements Mutator: the defaults.
func (l LimitRanger) Admit(ctx context.Context, a *Attributes) error {
	pod, ok := a.Object.(*core.Pod)
	if !ok || a.Operation != Create {
		return nil
	}
	rs, err := l.ranges(ctx, pod.Namespace)
	if err != nil {
		return err
	}
	for _, lr := range rs {
		for _, it := range lr.Spec.Limits {
			if it.Type != core.LimitTypeContainer {
				continue
			}
			for _, list := range [][]core.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
				for i := range list {
					c := &list[i]
					fill(&c.Resources.Limits, it.Default)
					fill(&c.Resources.Requests, it.DefaultRequest)
				}
			}
		}
	}
	return nil
}

// fill sets in *dst each resource of defaults it lacks.
func fill(dst *resource.List, defaults resource.List) {
	for n, q := range defaults {
		if _, ok := (*dst)[n]; ok {
			continue
		}
		if *dst == nil {
			*dst = resource.List{}
		}
		(*dst)[n] = q.Copy()
	}
}

// Validate implements Validator: the bounds.
func (l LimitRanger) Validate(ctx context.Context, a *Attributes) error {
	if a.Operation != Create {
		return nil
	}
	return l.validate(ctx, a)
}

// ValidateSubresource implements SubresourceValidator: a resize is
// held to the namespace's bounds, as Kubernetes' LimitRanger judges
// pods/resize.
func (l LimitRanger) ValidateSubresource(ctx context.Context, a *Attributes) error {
	if a.Subresource != "resize" {
		return nil
	}
	return l.validate(ctx, a)
}

func (l LimitRanger) validate(ctx context.Context, a *Attributes) error {
	var ns, what string
	switch o := a.Object.(type) {
	case *core.Pod:
		ns, what = o.Namespace, fmt.Sprintf("pods %q", o.Name)
	case *core.PersistentVolumeClaim:
		ns, what = o.Namespace, fmt.Sprintf("persistentvolumeclaims %q", o.Name)
	default:
		return nil
	}
	rs, err := l.ranges(ctx, ns)
	if err != nil {
		return err
	}
	var problems []string
	for _, lr := range rs {
		for _, it := range lr.Spec.Limits {
			switch o := a.Object.(type) {
			case *core.Pod:
				problems = append(problems, podProblems(o, it)...)
			case *core.PersistentVolumeClaim:
				if it.Type == core.LimitTypePersistentVolumeClaim {
					problems = append(problems, bounds(it, "PersistentVolumeClaim", o.Spec.Resources.Requests, nil)...)
				}
			}
		}
	}
	if len(problems) == 0 {
		return nil
	}
	return status.Errorf(codes.PermissionDenied, "%s is forbidden: [%s]", what, strings.Join(problems, ", "))
}

func podProblems(p *core.Pod, it core.LimitRangeItem) []string {
	switch it.Type {
	case core.LimitTypeContainer:
		var out []string
		for _, list := range [][]core.Container{p.Spec.InitContainers, p.Spec.Containers} {
			for _, c := range list {
				out = append(out, bounds(it, "Container", c.Resources.Requests, c.Resources.Limits)...)
			}
		}
		return out
	case core.LimitTypePod:
		// The pod's sums over its containers (init containers run one at a
		// time: the larger of their largest and the sum counts, as in
		// Kubernetes).
		req, lim := core.PodRequestsAndLimits(&p.Spec)
		return bounds(it, "Pod", req, lim)
	}
	return nil
}

// bounds checks one object's requests and limits against a range item,
// in Kubernetes' words ("minimum cpu usage per Container is 100m, but
// request is 50m"); the resources in name order.
func bounds(it core.LimitRangeItem, what string, req, lim resource.List) []string {
	var out []string
	for _, n := range names(it.Min) {
		min := it.Min[n]
		r, ok := req[n]
		switch {
		case !ok:
			out = append(out, fmt.Sprintf("minimum %s usage per %s is %s.  No request is specified", n, what, min.String()))
		case r.Cmp(min) < 0:
			out = append(out, fmt.Sprintf("minimum %s usage per %s is %s, but request is %s", n, what, min.String(), r.String()))
		}
	}
	for _, n := range names(it.Max) {
		max := it.Max[n]
		if what == "PersistentVolumeClaim" {
			if r, ok := req[n]; ok && r.Cmp(max) > 0 {
				out = append(out, fmt.Sprintf("maximum %s usage per %s is %s, but request is %s", n, what, max.String(), r.String()))
			}
			continue
		}
		l, ok := lim[n]
		switch {
		case !ok:
			out = append(out, fmt.Sprintf("maximum %s usage per %s is %s.  No limit is specified", n, what, max.String()))
		case l.Cmp(max) > 0:
			out = append(out, fmt.Sprintf("maximum %s usage per %s is %s, but limit is %s", n, what, max.String(), l.String()))
		}
	}
	for _, n := range names(it.MaxLimitRequestRatio) {
		ratio := it.MaxLimitRequestRatio[n]
		r, hasReq := req[n]
		l, hasLim := lim[n]
		switch {
		case !hasLim:
			out = append(out, fmt.Sprintf("%s max limit to request ratio per %s is %s, but no limit is specified", n, what, ratio.String()))
		case !hasReq || r.IsZero():
			out = append(out, fmt.Sprintf("%s max limit to request ratio per %s is %s, but no request is specified or request is 0", n, what, ratio.String()))
		default:
			got := float64(l.MilliValue()) / float64(r.MilliValue())
			if got > float64(ratio.MilliValue())/1000 {
				out = append(out, fmt.Sprintf("%s max limit to request ratio per %s is %s, but provided ratio is %f", n, what, ratio.String(), got))
			}
		}
	}
	return out
}

func names(l resource.List) []resource.Name {
	out := make([]resource.Name, 0, len(l))
	for n := range l {
		out = append(out, n)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}
