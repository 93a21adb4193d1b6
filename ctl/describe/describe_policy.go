package describe

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/kobune/kobune/api/autoscaling"
	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/policy"
	"github.com/kobune/kobune/api/resource"
	"github.com/kobune/kobune/client"
)

// describeLimitRange prints kubectl's table of a LimitRange: a row per
// type and resource with its min, max, default request, default limit and
// ratio ("-" where the item says nothing).
func describeLimitRange(w io.Writer, lr *core.LimitRange) {
	describeLimitRanges(w, "", []*core.LimitRange{lr})
}

// describeLimitRanges is the table of several, each row after indent.
func describeLimitRanges(w io.Writer, indent string, lrs []*core.LimitRange) {
	fmt.Fprintln(w, indent+"Type\tResource\tMin\tMax\tDefault Request\tDefault Limit\tMax Limit/Request Ratio")
	fmt.Fprintln(w, indent+"----\t--------\t---\t---\t---------------\t-------------\t-----------------------")
	for _, it := range limitItems(lrs) {
		names := map[resource.Name]bool{}
		for _, l := range []resource.List{it.Min, it.Max, it.DefaultRequest, it.Default, it.MaxLimitRequestRatio} {
			for n := range l {
				names[n] = true
			}
		}
		sorted := make([]string, 0, len(names))
		for n := range names {
			sorted = append(sorted, string(n))
		}
		sort.Strings(sorted)
		for _, n := range sorted {
			cell := func(l resource.List) string {
				if q, ok := l[resource.Name(n)]; ok {
					return q.String()
				}
				return "-"
			}
			fmt.Fprintf(w, "%s%s\t%s\t%s\t%s\t%s\t%s\t%s\n", indent, it.Type, n, cell(it.Min), cell(it.Max), cell(it.DefaultRequest), cell(it.Default), cell(it.MaxLimitRequestRatio))
		}
	}
}

func limitItems(lrs []*core.LimitRange) []core.LimitRangeItem {
	var items []core.LimitRangeItem
	for _, lr := range lrs {
		items = append(items, lr.Spec.Limits...)
	}
	return items
}

// describeResourceQuota prints kubectl's view of a ResourceQuota: its
// scopes and a row per resource with what is used of what is allowed.
func describeResourceQuota(w io.Writer, q *core.ResourceQuota) {
	describeQuota(w, "", q)
}

// describeQuota is describeResourceQuota with every line after indent.
func describeQuota(w io.Writer, indent string, q *core.ResourceQuota) {
	var scopes []string
	scopes = append(scopes, q.Spec.Scopes...)
	if q.Spec.ScopeSelector != nil {
		for _, e := range q.Spec.ScopeSelector.MatchExpressions {
			s := e.ScopeName + " " + e.Operator
			if len(e.Values) > 0 {
				s += " " + strings.Join(e.Values, ",")
			}
			scopes = append(scopes, s)
		}
	}
	if len(scopes) > 0 {
		fmt.Fprintf(w, "%sScopes:\t%s\n", indent, strings.Join(scopes, ", "))
	}
	fmt.Fprintln(w, indent+"Resource\tUsed\tHard")
	fmt.Fprintln(w, indent+"--------\t----\t----")
	for _, n := range q.Spec.Hard.Names() {
		used := "<unknown>" // the controller has not counted it yet
		if u, ok := q.Status.Used[n]; ok {
			used = u.String()
		}
		h := q.Spec.Hard[n]
		fmt.Fprintf(w, "%s%s\t%s\t%s\n", indent, n, used, h.String())
	}
}

// describeHPA prints kubectl's view of a HorizontalPodAutoscaler: the
// target, each metric's current value against its target, the bounds,
// the replicas and the conditions.
func describeHPA(w io.Writer, h *autoscaling.HorizontalPodAutoscaler) {
	fmt.Fprintf(w, "Reference:\t%s/%s\n", h.Spec.ScaleTargetRef.Kind, h.Spec.ScaleTargetRef.Name)
	fmt.Fprintln(w, "Metrics:\t( current / target )")
	for _, m := range h.Spec.Metrics {
		if m.Resource == nil {
			continue
		}
		var st *autoscaling.MetricValueStatus
		for _, s := range h.Status.CurrentMetrics {
			if s.Resource != nil && s.Resource.Name == m.Resource.Name {
				st = &s.Resource.Current
			}
		}
		if t := m.Resource.Target; t.AverageUtilization != nil {
			cur := "<unknown>"
			if st != nil && st.AverageUtilization != nil && st.AverageValue != nil {
				cur = fmt.Sprintf("%d%% (%s)", *st.AverageUtilization, st.AverageValue.String())
			}
			fmt.Fprintf(w, "  resource %s on pods  (as a percentage of request):\t%s / %d%%\n", m.Resource.Name, cur, *t.AverageUtilization)
		} else if t.AverageValue != nil {
			cur := "<unknown>"
			if st != nil && st.AverageValue != nil {
				cur = st.AverageValue.String()
			}
			fmt.Fprintf(w, "  resource %s on pods:\t%s / %s\n", m.Resource.Name, cur, t.AverageValue.String())
		}
	}
	if h.Spec.MinReplicas != nil {
		fmt.Fprintf(w, "Min replicas:\t%d\n", *h.Spec.MinReplicas)
	}
	fmt.Fprintf(w, "Max replicas:\t%d\n", h.Spec.MaxReplicas)
	if b := h.Spec.Behavior; b != nil && b.ScaleUp != nil && b.ScaleDown != nil {
		for _, r := range []struct {
			name  string
			rules *autoscaling.HPAScalingRules
		}{{"Scale Up", b.ScaleUp}, {"Scale Down", b.ScaleDown}} {
			fmt.Fprintf(w, "Behavior %s:\tstabilization window %ds, select %s policy", r.name, *r.rules.StabilizationWindowSeconds, *r.rules.SelectPolicy)
			for _, p := range r.rules.Policies {
				fmt.Fprintf(w, "; %d %s per %ds", p.Value, p.Type, p.PeriodSeconds)
			}
			fmt.Fprintln(w)
		}
	}
	fmt.Fprintf(w, "%s pods:\t%d current / %d desired\n", h.Spec.ScaleTargetRef.Kind, h.Status.CurrentReplicas, h.Status.DesiredReplicas)
	if len(h.Status.Conditions) > 0 {
		fmt.Fprintln(w, "Conditions:\n  Type\tStatus\tReason\tMessage\n  ----\t------\t------\t-------")
		for _, c := range h.Status.Conditions {
			fmt.Fprintf(w, "  %s\t%s\t%s\t%s\n", c.Type, c.Status, c.Reason, c.Message)
		}
	}
}

// describePDB prints kubectl's view of a PodDisruptionBudget: its bound,
// selector and the disruption controller's counts.
func describePDB(w io.Writer, b *policy.PodDisruptionBudget) {
	switch {
	case b.Spec.MinAvailable != nil:
		fmt.Fprintf(w, "Min available:\t%s\n", b.Spec.MinAvailable)
	case b.Spec.MaxUnavailable != nil:
		fmt.Fprintf(w, "Max unavailable:\t%s\n", b.Spec.MaxUnavailable)
	}
	if b.Spec.Selector == nil {
		fmt.Fprintln(w, "Selector:\t<unset>")
	} else {
		fmt.Fprintf(w, "Selector:\t%s\n", selectorString(b.Spec.Selector))
	}
	if p := b.Spec.UnhealthyPodEvictionPolicy; p != nil {
		fmt.Fprintf(w, "Unhealthy pod eviction policy:\t%s\n", *p)
	}
	fmt.Fprintln(w, "Status:")
	fmt.Fprintf(w, "    Allowed disruptions:\t%d\n", b.Status.DisruptionsAllowed)
	fmt.Fprintf(w, "    Current:\t%d\n", b.Status.CurrentHealthy)
	fmt.Fprintf(w, "    Desired:\t%d\n", b.Status.DesiredHealthy)
	fmt.Fprintf(w, "    Total:\t%d\n", b.Status.ExpectedPods)
}

// describeNamespace prints kubectl's view of a namespace: its phase, the
// quotas that count in it (with their usage) and the limit ranges that
// default and bound its containers.
func describeNamespace(ctx context.Context, w io.Writer, c *client.Client, ns *core.Namespace) error {
	fmt.Fprintf(w, "Status:\t%s\n", ns.Status.Phase)
	quotas, _, err := client.For[*core.ResourceQuota](c).List(ctx, ns.Name, client.ListOptions{})
	if err != nil {
		return err
	}
	limits, _, err := client.For[*core.LimitRange](c).List(ctx, ns.Name, client.ListOptions{})
	if err != nil {
		return err
	}
	fmt.Fprintln(w)
	if len(quotas) == 0 {
		fmt.Fprintln(w, "No resource quota.")
	} else {
		fmt.Fprintln(w, "Resource Quotas")
		sort.Slice(quotas, func(i, j int) bool { return quotas[i].Name < quotas[j].Name })
		for _, q := range quotas {
			fmt.Fprintf(w, "  Name:\t%s\n", q.Name)
			describeQuota(w, "  ", q)
		}
	}
	fmt.Fprintln(w)
	if len(limits) == 0 {
		fmt.Fprintln(w, "No LimitRange resource.")
		return nil
	}
	fmt.Fprintln(w, "Resource Limits")
	describeLimitRanges(w, " ", limits)
	return nil
}
