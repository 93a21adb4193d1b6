package framework

import (
	"strings"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/selector"
)

// ClusterIndex answers the cluster-wide questions of the spread and
// inter-pod affinity plugins without walking every placed pod for every
// pod scheduled. The scheduler's cache keeps it up to date as pods and nodes
// change; a plugin run without one (a table test) walks the NodeInfos
// instead, and the two must agree (the scheduler's tests compare them).
type ClusterIndex interface {
	// MatchingPods counts the placed, non-terminating pods in one of
	// namespaces whose labels match sel, per value of the topology key of
	// their node (nodes without the key do not count). The map is shared:
	// read it, never change it.
	MatchingPods(namespaces []string, sel selector.Selector, key string) map[string]int
	// Domains counts the nodes per value of key. Shared, read only.
	Domains(key string) map[string]int
	// AntiAffinityTerms are the distinct required anti-affinity terms of
	// the placed pods, each with the count of pods holding it per value of
	// its topology key.
	AntiAffinityTerms() []*IndexedTerm
}

// IndexedTerm is a placed pod's required anti-affinity term with its
// namespaces resolved (an empty list in the pod meant the pod's own), and
// how many placed pods hold it in each topology domain.
type IndexedTerm struct {
	Namespaces  []string
	Selector    selector.Selector
	TopologyKey string
	Counts      map[string]int
}

// Selects reports whether the term selects pod p.
func (t *IndexedTerm) Selects(p *core.Pod) bool {
	return containsString(t.Namespaces, p.Namespace) && t.Selector.Matches(p.Labels)
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// TermNamespaces resolves a term's namespaces: its own list, or the
// namespace of the pod that has it.
func TermNamespaces(t *AffinityTerm, owner *core.Pod) []string {
	if len(t.Namespaces) > 0 {
		return t.Namespaces
	}
	return []string{owner.Namespace}
}

// Signature identifies a (namespaces, selector, topology key) triple, the
// key under which an index keeps its counts.
func Signature(namespaces []string, sel selector.Selector, key string) string {
	s := sel.String()
	if s == "" && !sel.Empty() {
		s = "<nothing>"
	}
	return strings.Join(namespaces, ",") + "|" + s + "|" + key
}
