package plugins

import (
	"fmt"
	"sort"

	"github.com/kobune/kobune/scheduler/framework"
)

// Filters are the filter plugins by name, in the order they run by
// default: cheap checks first, those that look at other pods last.
var filters = []framework.FilterPlugin{
	NodeUnschedulable{}, NodeName{}, NodeReady{}, TaintToleration{}, NodeAffinity{}, NodePorts{}, NodeResourcesFit{},
	VolumeBinding{}, InterPodAffinity{}, PodTopologySpread{},
}

// scores are the score plugins with kube-scheduler's default weights
// (TaintToleration 3; NodeAffinity, InterPodAffinity, PodTopologySpread 2;
// the resource scores and VolumeBinding 1). MostAllocated is off by default: it is the other
// resource strategy, enabled instead of LeastAllocated in a config file.
var scores = []struct {
	plugin  framework.ScorePlugin
	weight  int64
	enabled bool
}{
	{LeastAllocated{}, 1, true},
	{MostAllocated{}, 1, false},
	{BalancedAllocation{}, 1, true},
	{TaintToleration{}, 3, true},
	{NodeAffinity{}, 2, true},
	{InterPodAffinity{}, 2, true},
	{PodTopologySpread{}, 2, true},
	{VolumeBinding{}, 1, true},
}

// DefaultFilters are the filters in the order they run.
func DefaultFilters() []framework.FilterPlugin {
	return append([]framework.FilterPlugin(nil), filters...)
}

// DefaultScores are the enabled score plugins with their weights.
func DefaultScores() []framework.WeightedScore {
	var out []framework.WeightedScore
	for _, s := range scores {
		if s.enabled {
			out = append(out, framework.WeightedScore{Plugin: s.plugin, Weight: s.weight})
		}
	}
	return out
}

// postFilters build the PostFilter plugins, given the framework that runs
// the profile's filters for them.
var postFilters = map[string]func(framework.Handle) framework.PostFilterPlugin{
	"DefaultPreemption": func(h framework.Handle) framework.PostFilterPlugin { return DefaultPreemption{Handle: h} },
}

// DefaultPostFilters are the PostFilter plugins on by default.
func DefaultPostFilters() []string { return []string{"DefaultPreemption"} }

// PostFilterByName builds a PostFilter plugin for the framework h.
func PostFilterByName(name string, h framework.Handle) (framework.PostFilterPlugin, error) {
	build, ok := postFilters[name]
	if !ok {
		return nil, fmt.Errorf("unknown postFilter plugin %q (known: DefaultPreemption)", name)
	}
	return build(h), nil
}

// FilterByName returns a filter plugin by its name.
func FilterByName(name string) (framework.FilterPlugin, error) {
	for _, f := range filters {
		if f.Name() == name {
			return f, nil
		}
	}
	return nil, fmt.Errorf("unknown filter plugin %q (known: %s)", name, names(filters))
}

// ScoreByName returns a score plugin by the name a config file uses: the
// plugin's name, or LeastAllocated / MostAllocated for the two resource
// strategies.
func ScoreByName(name string) (framework.ScorePlugin, int64, error) {
	var known []string
	for _, s := range scores {
		if s.plugin.Name() == name {
			return s.plugin, s.weight, nil
		}
		known = append(known, s.plugin.Name())
	}
	sort.Strings(known)
	return nil, 0, fmt.Errorf("unknown score plugin %q (known: %v)", name, known)
}

func names[T framework.Plugin](ps []T) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.Name()
	}
	return out
}
