package apiextensions

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"cel.dev/cel-go/common/types"

	apiext "github.com/kobune/kobune/api/apiextensions"
	"github.com/kobune/kobune/api/meta"
	v "github.com/kobune/kobune/api/validation"
)

// celNode is the schema beside its compiled CEL rules, only where rules
// are (a subtree without rules is nil): what an object is walked with to
// run its rules.
type celNode struct {
	schema     *apiext.JSONSchemaProps
	rules      []Rule
	props      map[string]*celNode
	items      *celNode
	additional *celNode
}

// compileCEL compiles every rule of the schema; nil when it has none.
// The definition's validation compiled them already, so errors here are
// not expected and a rule that fails is left out.
func compileCEL(s *apiext.JSONSchemaProps) *celNode {
	if s == nil {
		return nil
	}
	n := &celNode{schema: s}
	if len(s.XValidations) > 0 {
		n.rules, _ = CompileRules(s, v.NewPath("self"))
	}
	for name, p := range s.Properties {
		if c := compileCEL(&p); c != nil {
			if n.props == nil {
				n.props = map[string]*celNode{}
			}
			n.props[name] = c
		}
	}
	n.items = compileCEL(s.Items)
	if ap := s.AdditionalProperties; ap != nil {
		n.additional = compileCEL(ap.Schema)
	}
	if len(n.rules) == 0 && n.props == nil && n.items == nil && n.additional == nil {
		return nil
	}
	return n
}

// errCostBudget: the object's rules used up RuntimeCostBudget.
var errCostBudget = errors.New("validation failed due to running out of cost budget, no further validation rules will be run")

// celRun is one object's validation: the budget its rules share.
type celRun struct {
	budget int64
	// transitionOnly: an update's second pass, which runs the rules that
	// read oldSelf (the others ran in the first).
	transitionOnly bool
	errs           v.ErrorList
	out            bool // the budget ran out
}

// validate runs the rules at n on val (old: the value at the same place
// before an update, nil on a create), then below it.
func (r *celRun) validate(n *celNode, val, old any, p *v.Path) {
	if n == nil || val == nil || r.out {
		return
	}
	for i := range n.rules {
		rule := &n.rules[i]
		if rule.Transition != r.transitionOnly || rule.Transition && old == nil {
			continue
		}
		vars := map[string]any{"self": celValue(val, n.schema)}
		if old != nil {
			vars["oldSelf"] = celValue(old, n.schema)
		}
		out, det, err := rule.Program.Eval(vars)
		if det != nil && det.ActualCost() != nil {
			r.budget -= int64(*det.ActualCost())
		}
		if r.budget < 0 || err != nil && strings.Contains(err.Error(), "cost limit exceeded") {
			r.errs = append(r.errs, v.NewInvalid(p, typeOf(n.schema, val), errCostBudget.Error()))
			r.out = true
			return
		}
		if err != nil {
			r.errs = append(r.errs, v.NewInvalid(p, typeOf(n.schema, val), fmt.Sprintf("rule %q could not be evaluated: %v", rule.Rule, err)))
			continue
		}
		if ok, isBool := out.Value().(bool); isBool && ok {
			continue
		}
		r.errs = append(r.errs, ruleError(rule, vars, rulePath(p, rule.FieldPath), typeOf(n.schema, val)))
	}
	switch x := val.(type) {
	case map[string]any:
		oldMap, _ := old.(map[string]any)
		for k, child := range x {
			var oldChild any
			if oldMap != nil {
				oldChild = oldMap[k]
			}
			if c, ok := n.props[k]; ok {
				r.validate(c, child, oldChild, childPath(p, k))
			} else if _, declared := n.schema.Properties[k]; !declared && n.additional != nil {
				r.validate(n.additional, child, oldChild, p.Key(k))
			}
		}
	case []any:
		if n.items == nil {
			return
		}
		oldItems := correlate(n.schema, x, old)
		for i, item := range x {
			r.validate(n.items, item, oldItems[i], p.Index(i))
		}
	}
}

// correlate pairs a list's items with their old versions: by key in a
// list of type map (the only lists whose items keep an identity, as in
// Kubernetes); none otherwise.
func correlate(s *apiext.JSONSchemaProps, items []any, old any) []any {
	out := make([]any, len(items))
	oldList, ok := old.([]any)
	if !ok || s.XListType == nil || *s.XListType != "map" {
		return out
	}
	key := func(item any) string {
		m, _ := item.(map[string]any)
		b, _ := json.Marshal(func() []any {
			var k []any
			for _, name := range s.XListMapKeys {
				k = append(k, m[name])
			}
			return k
		}())
		return string(b)
	}
	byKey := map[string]any{}
	for _, o := range oldList {
		byKey[key(o)] = o
	}
	for i, item := range items {
		out[i] = byKey[key(item)]
	}
	return out
}

// ruleError is the error a failed rule gives: its message (computed by
// messageExpression, or as written, or Kubernetes' default), of the type
// its reason names.
func ruleError(rule *Rule, vars map[string]any, p *v.Path, typ string) *v.Error {
	msg := rule.ValidationRule.Message
	if rule.MessageExpression != "" && rule.Message != nil {
		if out, _, err := rule.Message.Eval(vars); err == nil {
			if s, ok := out.Value().(string); ok && s != "" && !strings.Contains(s, "\n") {
				msg = s
			}
		}
	}
	if msg == "" {
		msg = "failed rule: " + rule.Rule
	}
	reason := "FieldValueInvalid"
	if rule.Reason != nil {
		reason = *rule.Reason
	}
	switch reason {
	case "FieldValueForbidden":
		return v.NewForbidden(p, msg)
	case "FieldValueRequired":
		return v.NewRequired(p, msg)
	case "FieldValueDuplicate":
		e := v.NewDuplicate(p, typ)
		e.Detail = msg
		return e
	}
	return v.NewInvalid(p, typ, msg)
}

// typeOf names a value's type as Kubernetes' errors do: the schema's.
func typeOf(s *apiext.JSONSchemaProps, val any) string {
	if s != nil && s.Type != "" {
		return s.Type
	}
	return jsonType(val)
}

// childPath is field k below p (p nil: the object's root).
func childPath(p *v.Path, k string) *v.Path {
	if p == nil {
		return v.NewPath(k)
	}
	return p.Child(k)
}

// rulePath is where a rule's error points: its node, or below it as
// fieldPath says (".spec.replicas", "['a.b']").
func rulePath(p *v.Path, fieldPath string) *v.Path {
	for _, part := range strings.FieldsFunc(fieldPath, func(r rune) bool { return r == '.' || r == '[' || r == ']' }) {
		p = childPath(p, strings.Trim(part, `'"`))
	}
	return p
}

// celValue is a JSON value as CEL sees it: numbers as int or double by
// the schema's type (an integer field is an int, a number field a double
// even when it has no fraction), objects and lists of such values.
func celValue(val any, s *apiext.JSONSchemaProps) any {
	switch x := val.(type) {
	case json.Number:
		if s != nil && s.Type == "number" {
			f, _ := x.Float64()
			return f
		}
		if i, err := x.Int64(); err == nil {
			return i
		}
		f, _ := x.Float64()
		return f
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, c := range x {
			var cs *apiext.JSONSchemaProps
			if s != nil {
				if p, ok := s.Properties[k]; ok {
					cs = &p
				} else if s.AdditionalProperties != nil {
					cs = s.AdditionalProperties.Schema
				}
			}
			out[k] = celValue(c, cs)
		}
		return out
	case []any:
		out := make([]any, len(x))
		var is *apiext.JSONSchemaProps
		if s != nil {
			is = s.Items
		}
		for i, c := range x {
			out[i] = celValue(c, is)
		}
		return out
	case nil:
		return types.NullValue
	}
	return val
}

// celRoot is the object as a rule at the schema's root sees it: its
// fields, apiVersion, kind, and of its metadata the name and generateName.
func celRoot(u *meta.Unstructured) map[string]any {
	m := map[string]any{"apiVersion": u.APIVersion, "kind": u.Kind}
	md := map[string]any{}
	if u.Name != "" {
		md["name"] = u.Name
	}
	if u.GenerateName != "" {
		md["generateName"] = u.GenerateName
	}
	m["metadata"] = md
	for k, val := range u.Content {
		m[k] = val
	}
	if u.Status != nil {
		m["status"] = u.Status
	}
	return m
}

// validateRules runs the rules of an object (old: the stored one, on an
// update's pass over the transition rules).
func validateRules(tree *celNode, u, old *meta.Unstructured) v.ErrorList {
	if tree == nil {
		return nil
	}
	run := &celRun{budget: RuntimeCostBudget, transitionOnly: old != nil}
	var oldRoot any
	if old != nil {
		oldRoot = celRoot(old)
	}
	run.validate(tree, celRoot(u), oldRoot, nil)
	return run.errs
}
