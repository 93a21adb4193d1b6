package rbac

import (
	"reflect"
	"sort"

	"github.com/kobune/kobune/api/selector"
)

// AggregatedRules is the rules an aggregated ClusterRole should have: the
// rules of every other ClusterRole a selector matches, each rule once, in
// name order of the roles (what Kubernetes' clusterrole-aggregation
// controller writes). ok is false when role has no aggregationRule.
func AggregatedRules(role *ClusterRole, all []*ClusterRole) (rules []PolicyRule, ok bool) {
	if role.AggregationRule == nil {
		return nil, false
	}
	var sels []selector.Selector
	for i := range role.AggregationRule.ClusterRoleSelectors {
		s, err := selector.FromLabelSelector(&role.AggregationRule.ClusterRoleSelectors[i])
		if err != nil {
			continue // validation refused it already
		}
		sels = append(sels, s)
	}
	sorted := append([]*ClusterRole(nil), all...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	rules = []PolicyRule{}
	for _, other := range sorted {
		if other.Name == role.Name {
			continue
		}
		matched := false
		for _, s := range sels {
			matched = matched || (!s.Empty() && s.Matches(other.Labels))
		}
		if !matched {
			continue
		}
		for _, r := range other.Rules {
			dup := false
			for _, have := range rules {
				dup = dup || reflect.DeepEqual(have, r)
			}
			if !dup {
				rules = append(rules, r)
			}
		}
	}
	return rules, true
}
