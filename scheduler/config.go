package scheduler

import (
	"fmt"
	"os"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/kobune/kobune/scheduler/framework"
	"github.com/kobune/kobune/scheduler/plugins"
)

// Profile is the set of plugins a scheduler runs, with the score weights,
// and how many nodes it examines per pod.
type Profile struct {
	Filters []framework.FilterPlugin
	Scores  []framework.WeightedScore
	// PostFilters name the plugins run when no node fits (DefaultPreemption).
	PostFilters []string
	// PercentageOfNodesToScore: once this share of the nodes is found
	// feasible the search stops (at least 100 nodes). 0 is kube-scheduler's
	// adaptive default, 50% less 1% per 125 nodes, never below 5%; 100
	// examines every node.
	PercentageOfNodesToScore int32
}

// String lists the plugins and weights, for the log.
func (p *Profile) String() string {
	var b strings.Builder
	b.WriteString("filters:")
	for _, f := range p.Filters {
		b.WriteString(" " + f.Name())
	}
	b.WriteString("; scores:")
	for _, s := range p.Scores {
		fmt.Fprintf(&b, " %s×%d", s.Plugin.Name(), s.Weight)
	}
	pct := "adaptive"
	if p.PercentageOfNodesToScore > 0 {
		pct = fmt.Sprintf("%d%%", p.PercentageOfNodesToScore)
	}
	fmt.Fprintf(&b, "; postFilters: %v; percentageOfNodesToScore: %s", p.PostFilters, pct)
	return b.String()
}

// DefaultProfile is every filter and the default scores.
func DefaultProfile() *Profile {
	return &Profile{Filters: plugins.DefaultFilters(), Scores: plugins.DefaultScores(), PostFilters: plugins.DefaultPostFilters()}
}

// framework builds the framework that runs the profile's plugins (the
// PostFilter plugins get it as their Handle, to run the filters).
func (p *Profile) framework(parallelism int) *framework.Framework {
	fw := &framework.Framework{Filters: p.Filters, Scores: p.Scores, Parallelism: parallelism}
	for _, name := range p.PostFilters {
		pf, err := plugins.PostFilterByName(name, fw)
		if err != nil {
			panic(err) // names are checked when the profile is parsed
		}
		fw.PostFilters = append(fw.PostFilters, pf)
	}
	return fw
}

// FileConfig is the --config file, shaped like a KubeSchedulerConfiguration
// with one profile:
//
//	apiVersion: kobune.io/v1
//	kind: SchedulerConfiguration
//	schedulerName: default-scheduler
//	percentageOfNodesToScore: 0
//	plugins:
//	  filter:
//	    disabled: [{name: NodePorts}]
//	  score:
//	    disabled: [{name: LeastAllocated}]
//	    enabled: [{name: MostAllocated, weight: 1}, {name: NodeAffinity, weight: 5}]
//	  postFilter:
//	    disabled: [{name: DefaultPreemption}]   # no preemption
//
// As in Kubernetes, the lists change the defaults: disabled plugins are
// removed ("*" removes them all), enabled ones are added (a score plugin
// already on gets the new weight). Unknown fields and plugin names are
// errors.
type FileConfig struct {
	APIVersion               string  `json:"apiVersion"`
	Kind                     string  `json:"kind"`
	SchedulerName            string  `json:"schedulerName,omitempty"`
	PercentageOfNodesToScore *int32  `json:"percentageOfNodesToScore,omitempty"`
	Plugins                  Plugins `json:"plugins,omitempty"`
}

// Plugins lists changes to the default filter and score plugins.
type Plugins struct {
	Filter     PluginSet `json:"filter,omitempty"`
	Score      PluginSet `json:"score,omitempty"`
	PostFilter PluginSet `json:"postFilter,omitempty"`
}

// PluginSet enables and disables plugins.
type PluginSet struct {
	Enabled  []PluginRef `json:"enabled,omitempty"`
	Disabled []PluginRef `json:"disabled,omitempty"`
}

// PluginRef names a plugin; Weight is for score plugins (0: its default).
type PluginRef struct {
	Name   string `json:"name"`
	Weight int64  `json:"weight,omitempty"`
}

// LoadConfig reads a --config file; the error names the file and the field.
func LoadConfig(path string) (*Profile, string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, "", err
	}
	p, name, err := ParseConfig(b)
	if err != nil {
		return nil, "", fmt.Errorf("%s: %w", path, err)
	}
	return p, name, nil
}

// ParseConfig builds a profile from a config file's bytes.
func ParseConfig(b []byte) (*Profile, string, error) {
	var fc FileConfig
	if err := yaml.UnmarshalStrict(b, &fc); err != nil {
		return nil, "", err
	}
	if fc.APIVersion != "kobune.io/v1" || fc.Kind != "SchedulerConfiguration" {
		return nil, "", fmt.Errorf("apiVersion/kind: want kobune.io/v1 SchedulerConfiguration, got %q %q", fc.APIVersion, fc.Kind)
	}
	p := DefaultProfile()
	if pct := fc.PercentageOfNodesToScore; pct != nil {
		if *pct < 0 || *pct > 100 {
			return nil, "", fmt.Errorf("percentageOfNodesToScore: must be between 0 and 100, got %d", *pct)
		}
		p.PercentageOfNodesToScore = *pct
	}
	for i, ref := range fc.Plugins.Filter.Disabled {
		if ref.Name == "*" {
			p.Filters = nil
			continue
		}
		if _, err := plugins.FilterByName(ref.Name); err != nil {
			return nil, "", fmt.Errorf("plugins.filter.disabled[%d].name: %w", i, err)
		}
		p.Filters = removeFilter(p.Filters, ref.Name)
	}
	for i, ref := range fc.Plugins.Filter.Enabled {
		f, err := plugins.FilterByName(ref.Name)
		if err != nil {
			return nil, "", fmt.Errorf("plugins.filter.enabled[%d].name: %w", i, err)
		}
		p.Filters = append(removeFilter(p.Filters, ref.Name), f)
	}
	for i, ref := range fc.Plugins.Score.Disabled {
		if ref.Name == "*" {
			p.Scores = nil
			continue
		}
		if _, _, err := plugins.ScoreByName(ref.Name); err != nil {
			return nil, "", fmt.Errorf("plugins.score.disabled[%d].name: %w", i, err)
		}
		p.Scores = removeScore(p.Scores, ref.Name)
	}
	for i, ref := range fc.Plugins.Score.Enabled {
		s, weight, err := plugins.ScoreByName(ref.Name)
		if err != nil {
			return nil, "", fmt.Errorf("plugins.score.enabled[%d].name: %w", i, err)
		}
		if ref.Weight < 0 || ref.Weight > 100 {
			return nil, "", fmt.Errorf("plugins.score.enabled[%d].weight: must be between 1 and 100, got %d", i, ref.Weight)
		}
		if ref.Weight > 0 {
			weight = ref.Weight
		}
		p.Scores = append(removeScore(p.Scores, ref.Name), framework.WeightedScore{Plugin: s, Weight: weight})
	}
	for i, ref := range fc.Plugins.PostFilter.Disabled {
		if ref.Name == "*" {
			p.PostFilters = nil
			continue
		}
		if _, err := plugins.PostFilterByName(ref.Name, nil); err != nil {
			return nil, "", fmt.Errorf("plugins.postFilter.disabled[%d].name: %w", i, err)
		}
		p.PostFilters = slices.DeleteFunc(p.PostFilters, func(n string) bool { return n == ref.Name })
	}
	for i, ref := range fc.Plugins.PostFilter.Enabled {
		if _, err := plugins.PostFilterByName(ref.Name, nil); err != nil {
			return nil, "", fmt.Errorf("plugins.postFilter.enabled[%d].name: %w", i, err)
		}
		if !slices.Contains(p.PostFilters, ref.Name) {
			p.PostFilters = append(p.PostFilters, ref.Name)
		}
	}
	return p, fc.SchedulerName, nil
}

func removeFilter(fs []framework.FilterPlugin, name string) []framework.FilterPlugin {
	var out []framework.FilterPlugin
	for _, f := range fs {
		if f.Name() != name {
			out = append(out, f)
		}
	}
	return out
}

func removeScore(ss []framework.WeightedScore, name string) []framework.WeightedScore {
	var out []framework.WeightedScore
	for _, s := range ss {
		if s.Plugin.Name() != name {
			out = append(out, s)
		}
	}
	return out
}

// numFeasibleNodesToFind is how many feasible nodes a cycle looks for
// before it stops filtering (kube-scheduler's rule).
func (p *Profile) numFeasibleNodesToFind(all int) int {
	const minFeasible = 100
	if all < minFeasible || p.PercentageOfNodesToScore >= 100 {
		return all
	}
	pct := int(p.PercentageOfNodesToScore)
	if pct == 0 {
		pct = max(50-all/125, 5)
	}
	return max(all*pct/100, minFeasible)
}
