package ctl

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/resource"
)

// describeLimitRange prints kubectl's table of a LimitRange: a row per
// type and resource with its min, max, default request, default limit and
// ratio ("-" where the item says nothing).
func describeLimitRange(w io.Writer, lr *core.LimitRange) {
	fmt.Fprintln(w, "Type\tResource\tMin\tMax\tDefault Request\tDefault Limit\tMax Limit/Request Ratio")
	fmt.Fprintln(w, "----\t--------\t---\t---\t---------------\t-------------\t-----------------------")
	for _, it := range lr.Spec.Limits {
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
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", it.Type, n, cell(it.Min), cell(it.Max), cell(it.DefaultRequest), cell(it.Default), cell(it.MaxLimitRequestRatio))
		}
	}
}

// describeResourceQuota prints kubectl's view of a ResourceQuota: its
// scopes and a row per resource with what is used of what is allowed.
func describeResourceQuota(w io.Writer, q *core.ResourceQuota) {
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
		fmt.Fprintf(w, "Scopes:\t%s\n", strings.Join(scopes, ", "))
	}
	fmt.Fprintln(w, "Resource\tUsed\tHard")
	fmt.Fprintln(w, "--------\t----\t----")
	for _, n := range q.Spec.Hard.Names() {
		used := "<unknown>" // the controller has not counted it yet
		if u, ok := q.Status.Used[n]; ok {
			used = u.String()
		}
		h := q.Spec.Hard[n]
		fmt.Fprintf(w, "%s\t%s\t%s\n", n, used, h.String())
	}
}
