package apiextensions

import (
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"sync"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/cost"
	"cel.dev/cel-go/ext"

	apiext "github.com/kobune/kobune/api/apiextensions"
	v "github.com/kobune/kobune/api/validation"
	"github.com/kobune/kobune/apiserver/admission"
)

// CEL validation rules (x-kubernetes-validations), as Kubernetes checks
// them: each rule compiles against its schema node (self, and oldSelf in a
// transition rule), must return a bool, and its estimated cost — how much
// work it can take on the largest value the schema admits — must stay
// within a budget (RuleCheck refuses a definition whose rules do not);
// objects are then checked by them (cel.go). cel-go (cel.dev/cel-go) is
// the library Kubernetes itself uses: the same language, the same cost
// model. It lives here, in the API server, so that no client links it.

// The cost limits, Kubernetes' own.
const (
	// PerCallLimit bounds one rule's evaluation on one value.
	PerCallLimit = 1_000_000
	// StaticEstimatedCostLimit bounds one rule's estimated cost.
	StaticEstimatedCostLimit = 10_000_000
	// RuntimeCostBudget bounds every rule of one object together.
	RuntimeCostBudget = 10_000_000
	// maxRequestBytes is the largest object: what an unbounded list or
	// string is assumed to fill (Kubernetes assumes 3 MB, its request limit).
	maxRequestBytes = 3 * 1024 * 1024
)

// Rule is one compiled rule.
type Rule struct {
	apiext.ValidationRule
	Program cel.Program
	// Message, when the rule has a messageExpression, computes the message.
	Message cel.Program
	// Transition: the rule reads oldSelf, so it runs on updates only.
	Transition bool
	// Cost is the rule's estimated cost.
	Cost uint64
}

var celEnvs = sync.OnceValues(func() (*cel.Env, error) {
	return cel.NewEnv(
		cel.Variable("self", cel.DynType),
		cel.Variable("oldSelf", cel.DynType),
		cel.OptionalTypes(),
		cel.CrossTypeNumericComparisons(true),
		cel.DefaultUTCTimeZone(true),
		ext.Strings(ext.StringsVersion(2)),
		ext.Sets(),
		ext.Lists(),
		ext.Math(),
		ext.Encoders(),
		ext.TwoVarComprehensions(),
		ext.Bindings(),
	)
})

// CompileRules compiles the rules of one schema node; errs name each rule
// that does not compile, does not return a bool, or costs too much (with
// its estimated cost: the question every refused rule raises).
func CompileRules(s *apiext.JSONSchemaProps, p *v.Path) ([]Rule, v.ErrorList) {
	if len(s.XValidations) == 0 {
		return nil, nil
	}
	env, err := celEnvs()
	if err != nil {
		return nil, v.ErrorList{v.NewInvalid(p, "x-kubernetes-validations", "the CEL environment: "+err.Error())}
	}
	var rules []Rule
	var errs v.ErrorList
	for i, r := range s.XValidations {
		rp := p.Child("x-kubernetes-validations").Index(i)
		if r.Rule == "" {
			errs = append(errs, v.NewRequired(rp.Child("rule"), ""))
			continue
		}
		ast, iss := env.Compile(r.Rule)
		if iss.Err() != nil {
			errs = append(errs, v.NewInvalid(rp.Child("rule"), r.Rule, "compilation failed: "+strings.ReplaceAll(iss.Err().Error(), "\n", " ")))
			continue
		}
		if ast.OutputType() != cel.BoolType && ast.OutputType() != cel.DynType {
			errs = append(errs, v.NewInvalid(rp.Child("rule"), r.Rule, fmt.Sprintf("must evaluate to a bool, not %s", ast.OutputType())))
			continue
		}
		est, err := env.EstimateCost(ast, schemaSizes{s})
		c := est.Max
		if err != nil {
			c = math.MaxUint64
		}
		if c > StaticEstimatedCostLimit {
			errs = append(errs, v.NewForbidden(rp.Child("rule"), fmt.Sprintf(
				"estimated rule cost %s exceeds budget %s by factor of %s (try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)",
				costText(c), costText(StaticEstimatedCostLimit), factor(c, StaticEstimatedCostLimit))))
			continue
		}
		prg, err := env.Program(ast, cel.CostLimit(PerCallLimit), cel.InterruptCheckFrequency(100))
		if err != nil {
			errs = append(errs, v.NewInvalid(rp.Child("rule"), r.Rule, err.Error()))
			continue
		}
		rule := Rule{ValidationRule: r, Program: prg, Transition: readsOldSelf(ast), Cost: c}
		if r.MessageExpression != "" {
			mast, iss := env.Compile(r.MessageExpression)
			switch {
			case iss.Err() != nil:
				errs = append(errs, v.NewInvalid(rp.Child("messageExpression"), r.MessageExpression, "compilation failed: "+strings.ReplaceAll(iss.Err().Error(), "\n", " ")))
				continue
			case mast.OutputType() != cel.StringType && mast.OutputType() != cel.DynType:
				errs = append(errs, v.NewInvalid(rp.Child("messageExpression"), r.MessageExpression, "must evaluate to a string"))
				continue
			}
			if rule.Message, err = env.Program(mast, cel.CostLimit(PerCallLimit)); err != nil {
				errs = append(errs, v.NewInvalid(rp.Child("messageExpression"), r.MessageExpression, err.Error()))
				continue
			}
		}
		if r.Reason != nil {
			switch *r.Reason {
			case "FieldValueInvalid", "FieldValueForbidden", "FieldValueRequired", "FieldValueDuplicate":
			default:
				errs = append(errs, v.NewNotSupported(rp.Child("reason"), *r.Reason, []string{"FieldValueDuplicate", "FieldValueForbidden", "FieldValueInvalid", "FieldValueRequired"}))
			}
		}
		rules = append(rules, rule)
	}
	return rules, errs
}

func readsOldSelf(ast *cel.Ast) bool {
	for _, ref := range ast.NativeRep().ReferenceMap() {
		if ref.Name == "oldSelf" {
			return true
		}
	}
	return false
}

func costText(c uint64) string {
	if c == math.MaxUint64 {
		return "unbounded"
	}
	s := fmt.Sprint(c)
	var b strings.Builder
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	return b.String()
}

func factor(c, limit uint64) string {
	if c == math.MaxUint64 {
		return "more than 100x"
	}
	return fmt.Sprintf("%.1fx", float64(c)/float64(limit))
}

// schemaSizes tells the cost estimator how large a value can be: a
// string's maxLength, a list's maxItems, a map's maxProperties, and, where
// the schema sets no bound, as many as fit in the largest request.
type schemaSizes struct{ root *apiext.JSONSchemaProps }

func (e schemaSizes) EstimateSize(node cost.AstNode) *cost.SizeEstimate {
	path := node.Path()
	if len(path) == 0 || (path[0] != "self" && path[0] != "oldSelf") {
		return nil
	}
	s := e.root
	for _, step := range path[1:] {
		switch {
		case s == nil:
			return nil
		case step == "@items":
			s = s.Items
		case step == "@values":
			if s.AdditionalProperties == nil {
				return nil
			}
			s = s.AdditionalProperties.Schema
		case step == "@keys":
			return nil
		default:
			child, ok := s.Properties[step]
			if !ok {
				return nil
			}
			s = &child
		}
	}
	if s == nil {
		return nil
	}
	max := uint64(maxRequestBytes)
	switch {
	case s.Type == "string" && s.MaxLength != nil:
		max = uint64(*s.MaxLength)
	case s.Type == "array" && s.MaxItems != nil:
		max = uint64(*s.MaxItems)
	case s.Type == "array":
		max = maxRequestBytes / minSize(s.Items)
	case s.Type == "object" && s.MaxProperties != nil:
		max = uint64(*s.MaxProperties)
	case s.Type == "object":
		max = maxRequestBytes / 4 // "k":0,
	}
	size := cost.RangedSizeEstimate(0, max)
	return &size
}

// minSize is the fewest bytes one element of this schema takes in JSON
// (with its comma).
func minSize(s *apiext.JSONSchemaProps) uint64 {
	if s == nil {
		return 2
	}
	switch s.Type {
	case "string":
		return 3 // "",
	case "object", "array":
		return 3 // {},
	case "boolean":
		return 5 // true,
	}
	return 2 // 0,
}

func (schemaSizes) EstimateCallCost(string, string, *cost.AstNode, []cost.AstNode) *cost.CallEstimate {
	return nil
}

// RuleCheck is the admission step that refuses a CustomResourceDefinition
// whose CEL rules do not compile, do not return a bool or cost more than
// the budget, naming each (Kubernetes checks them when it validates the
// definition; Kobune does it here so that only the API server links CEL).
type RuleCheck struct{}

// Name implements admission.Validator.
func (RuleCheck) Name() string { return "CustomResourceDefinitionRules" }

// Validate implements admission.Validator.
func (RuleCheck) Validate(_ context.Context, a *admission.Attributes) error {
	crd, ok := a.Object.(*apiext.CustomResourceDefinition)
	if !ok || a.Kind.Custom != nil {
		return nil
	}
	var errs v.ErrorList
	for i := range crd.Spec.Versions {
		if s := crd.Spec.Versions[i].Schema; s != nil && s.OpenAPIV3Schema != nil {
			errs = append(errs, compileAll(s.OpenAPIV3Schema, v.NewPath("spec", "versions").Index(i).Child("schema", "openAPIV3Schema"))...)
		}
	}
	if len(errs) == 0 {
		return nil
	}
	return admission.InvalidError(fmt.Sprintf("CustomResourceDefinition %q is invalid: %v", crd.Name, errs.ToError()), errs)
}

// compileAll compiles the rules of every node of a schema.
func compileAll(s *apiext.JSONSchemaProps, p *v.Path) v.ErrorList {
	_, errs := CompileRules(s, p)
	for _, name := range slices.Sorted(maps.Keys(s.Properties)) {
		c := s.Properties[name]
		errs = append(errs, compileAll(&c, p.Child("properties").Key(name))...)
	}
	if s.Items != nil {
		errs = append(errs, compileAll(s.Items, p.Child("items"))...)
	}
	if ap := s.AdditionalProperties; ap != nil && ap.Schema != nil {
		errs = append(errs, compileAll(ap.Schema, p.Child("additionalProperties"))...)
	}
	return errs
}
