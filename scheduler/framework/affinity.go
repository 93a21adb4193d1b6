package framework

import (
	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/selector"
)

// AffinityTerm is a pod (anti-)affinity term with its selector parsed once:
// the pods it selects (by namespace and labels) and the topology key over
// which "together" or "apart" is judged.
type AffinityTerm struct {
	Selector    selector.Selector
	Namespaces  []string // empty: the namespace of the pod that has the term
	TopologyKey string
	Weight      int64 // preferred terms only
}

// Matches reports whether the term selects pod p; owner is the pod that has
// the term (its namespace is the default).
func (t *AffinityTerm) Matches(owner, p *core.Pod) bool {
	if len(t.Namespaces) == 0 {
		if p.Namespace != owner.Namespace {
			return false
		}
	} else {
		found := false
		for _, ns := range t.Namespaces {
			if ns == p.Namespace {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return t.Selector.Matches(p.Labels)
}

// PodAffinity is a pod's affinity terms, parsed.
type PodAffinity struct {
	Pod                  *core.Pod
	RequiredAffinity     []AffinityTerm
	RequiredAntiAffinity []AffinityTerm
	PreferredAffinity    []AffinityTerm
	PreferredAnti        []AffinityTerm
}

// ParsePodAffinity parses a pod's affinity terms; nil when it has none.
// A term whose selector does not parse selects nothing (validation refuses
// such pods before they are stored).
func ParsePodAffinity(p *core.Pod) *PodAffinity {
	a := p.Spec.Affinity
	if a == nil || (a.PodAffinity == nil && a.PodAntiAffinity == nil) {
		return nil
	}
	out := &PodAffinity{Pod: p}
	if pa := a.PodAffinity; pa != nil {
		out.RequiredAffinity = terms(pa.RequiredDuringSchedulingIgnoredDuringExecution)
		out.PreferredAffinity = weightedTerms(pa.PreferredDuringSchedulingIgnoredDuringExecution)
	}
	if pa := a.PodAntiAffinity; pa != nil {
		out.RequiredAntiAffinity = terms(pa.RequiredDuringSchedulingIgnoredDuringExecution)
		out.PreferredAnti = weightedTerms(pa.PreferredDuringSchedulingIgnoredDuringExecution)
	}
	return out
}

func term(t core.PodAffinityTerm, weight int64) AffinityTerm {
	sel, err := selector.FromLabelSelector(t.LabelSelector)
	if err != nil {
		sel = selector.Nothing()
	}
	return AffinityTerm{Selector: sel, Namespaces: t.Namespaces, TopologyKey: t.TopologyKey, Weight: weight}
}

func terms(ts []core.PodAffinityTerm) []AffinityTerm {
	out := make([]AffinityTerm, len(ts))
	for i, t := range ts {
		out[i] = term(t, 0)
	}
	return out
}

func weightedTerms(ts []core.WeightedPodAffinityTerm) []AffinityTerm {
	out := make([]AffinityTerm, len(ts))
	for i, t := range ts {
		out[i] = term(t.PodAffinityTerm, int64(t.Weight))
	}
	return out
}
