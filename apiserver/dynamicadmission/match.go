package dynamicadmission

import (
	"context"
	"fmt"
	"path"
	"slices"
	"sort"
	"sync"

	"cel.dev/cel-go/cel"

	"github.com/kobune/kobune/api/admissionregistration"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/api/scheme"
	"github.com/kobune/kobune/api/selector"
)

// subject is one admission request as the webhooks see it.
type subject struct {
	operation   string // CREATE, UPDATE, DELETE
	kind        *scheme.Kind
	subresource string
	object, old meta.Object
	dryRun      bool
}

func (r *subject) namespace() string {
	if r.object != nil {
		return r.object.GetObjectMeta().Namespace
	}
	return r.old.GetObjectMeta().Namespace
}

// exempt: the webhooks' own configurations are never sent to webhooks, so
// that a broken webhook can always be removed (as in Kubernetes).
func exempt(k *scheme.Kind) bool {
	return k.Group() == admissionregistration.Group
}

// matchRules: some rule selects the request's operation, group, version,
// resource (with its subresource) and scope.
func matchRules(w *admissionregistration.Webhook, r *subject) bool {
	return slices.ContainsFunc(w.Rules, func(rule admissionregistration.RuleWithOperations) bool { return ruleMatches(&rule, w.MatchPolicy, r) })
}

// ruleMatches: one rule selects the request.
func ruleMatches(rule *admissionregistration.RuleWithOperations, matchPolicy string, r *subject) bool {
	group, version := r.kind.Group(), r.kind.APIVersion
	if group != "" {
		version = version[len(group)+1:]
	}
	res := r.kind.PluralName()
	if !anyOf(rule.Operations, r.operation) || !anyOf(rule.APIGroups, group) {
		return false
	}
	// Equivalent: the same resource at another version matches too
	// (Kobune serves each kind at one stored version).
	if matchPolicy == admissionregistration.Exact && !anyOf(rule.APIVersions, version) {
		return false
	}
	if !slices.ContainsFunc(rule.Resources, func(pattern string) bool { return resourceMatches(pattern, res, r.subresource) }) {
		return false
	}
	if s := rule.Scope; s != nil && (*s == "Cluster" && r.kind.Namespaced || *s == "Namespaced" && !r.kind.Namespaced) {
		return false
	}
	return true
}

func anyOf(list []string, v string) bool {
	return slices.Contains(list, "*") || slices.Contains(list, v)
}

// resourceMatches reads a rule's resource: "pods", "pods/status", "*"
// (every resource, no subresource), "*/*", "pods/*", "*/status".
func resourceMatches(pattern, res, sub string) bool {
	want := res
	if sub != "" {
		want = res + "/" + sub
	}
	if pattern == "*/*" {
		return true
	}
	ok, _ := path.Match(pattern, want)
	return ok && (sub != "" || pattern == "*" || pattern == res)
}

// matchSelectors: the namespace's labels match namespaceSelector (for a
// namespaced object; a Namespace is judged by its own labels), and the
// object's labels, or the old object's, match objectSelector.
func (w *Webhooks) matchSelectors(ctx context.Context, nsSelector, objSelector *meta.LabelSelector, r *subject) (bool, error) {
	if nsSelector != nil {
		sel, err := selector.FromLabelSelector(nsSelector)
		if err != nil {
			return false, err
		}
		var labels map[string]string
		switch {
		case r.kind.Resource == "namespaces":
			labels = r.labels()
		case r.kind.Namespaced:
			l, _, err := w.cfg.Namespaces.NamespaceLabels(ctx, r.namespace())
			if err != nil {
				return false, err
			}
			labels = l
		}
		if (r.kind.Namespaced || r.kind.Resource == "namespaces") && !sel.Matches(labels) {
			return false, nil
		}
	}
	if objSelector != nil {
		sel, err := selector.FromLabelSelector(objSelector)
		if err != nil {
			return false, err
		}
		newOK := r.object != nil && sel.Matches(r.object.GetObjectMeta().Labels)
		oldOK := r.old != nil && sel.Matches(r.old.GetObjectMeta().Labels)
		if !newOK && !oldOK {
			return false, nil
		}
	}
	return true, nil
}

func (r *subject) labels() map[string]string {
	if r.object != nil {
		return r.object.GetObjectMeta().Labels
	}
	return r.old.GetObjectMeta().Labels
}

// conditions compiles match conditions once per expression.
type conditions struct {
	programs sync.Map // expression → cel.Program or error
}

// program is the compiled expression of a match condition.
func (c *conditions) program(expr string) (cel.Program, error) {
	if p, ok := c.programs.Load(expr); ok {
		if err, isErr := p.(error); isErr {
			return nil, err
		}
		return p.(cel.Program), nil
	}
	prg, err := CompilePolicyProgram(expr, false)
	if err != nil {
		c.programs.Store(expr, err)
		return nil, err
	}
	c.programs.Store(expr, prg)
	return prg, nil
}

// matchConditions: every condition is true. An error (a condition that
// does not compile or evaluate) is the webhook's failure, which its
// failurePolicy judges.
func (w *Webhooks) matchConditions(hook *admissionregistration.Webhook, vars map[string]any) (bool, error) {
	for _, mc := range hook.MatchConditions {
		prg, err := w.conditions.program(mc.Expression)
		if err != nil {
			return false, fmt.Errorf("match condition %q: %v", mc.Name, err)
		}
		out, _, err := prg.Eval(vars)
		if err != nil {
			return false, fmt.Errorf("match condition %q: %v", mc.Name, err)
		}
		if b, ok := out.Value().(bool); !ok {
			return false, fmt.Errorf("match condition %q: must evaluate to a bool", mc.Name)
		} else if !b {
			return false, nil
		}
	}
	return true, nil
}

func sortedNames(m map[string]meta.Object) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func keyName(key string) string { return path.Base(key) }
