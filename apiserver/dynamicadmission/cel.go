package dynamicadmission

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/ext"

	"github.com/kobune/kobune/api/admissionregistration"
	v "github.com/kobune/kobune/api/validation"
	"github.com/kobune/kobune/apiserver/admission"
)

// PolicyEnv is the CEL environment of admission policies and webhook
// match conditions: object, oldObject, request, params, namespaceObject
// and variables, as Kubernetes declares them (authorizer is not offered).
var PolicyEnv = sync.OnceValues(func() (*cel.Env, error) {
	return cel.NewEnv(
		cel.Variable("object", cel.DynType), cel.Variable("oldObject", cel.DynType), cel.Variable("request", cel.DynType),
		cel.Variable("params", cel.DynType), cel.Variable("namespaceObject", cel.DynType), cel.Variable("variables", cel.DynType),
		cel.OptionalTypes(), cel.CrossTypeNumericComparisons(true), cel.DefaultUTCTimeZone(true),
		ext.Strings(ext.StringsVersion(2)), ext.Sets(), ext.Lists(), ext.Math(), ext.Encoders(), ext.TwoVarComprehensions(), ext.Bindings(),
	)
})

// CompilePolicyExpression compiles one expression; wantString: it must
// give a string (a messageExpression).
func CompilePolicyExpression(expr string, wantString bool) error {
	_, err := CompilePolicyProgram(expr, wantString)
	return err
}

// CompilePolicyProgram compiles one expression into a program bounded by
// a cost of 1,000,000 per evaluation.
func CompilePolicyProgram(expr string, wantString bool) (cel.Program, error) {
	env, err := PolicyEnv()
	if err != nil {
		return nil, err
	}
	ast, iss := env.Compile(expr)
	if iss.Err() != nil {
		return nil, fmt.Errorf("compilation failed: %s", strings.ReplaceAll(iss.Err().Error(), "\n", " "))
	}
	if wantString && ast.OutputType() != cel.StringType && ast.OutputType() != cel.DynType {
		return nil, fmt.Errorf("must evaluate to a string, not %s", ast.OutputType())
	}
	return env.Program(ast, cel.CostLimit(1_000_000), cel.InterruptCheckFrequency(100))
}

// ExpressionCheck is the admission step that refuses a
// ValidatingAdmissionPolicy or a webhook configuration whose CEL
// expressions do not compile, naming each (Kubernetes checks them when it
// validates the object; Kobune does it here so that only the API server
// links CEL).
func ExpressionCheck() admission.Validator { return expressionCheck{} }

type expressionCheck struct{}

func (expressionCheck) Name() string { return "AdmissionExpressions" }

func (expressionCheck) Validate(_ context.Context, a *admission.Attributes) error {
	var errs v.ErrorList
	check := func(p *v.Path, expr string, wantString bool) {
		if expr == "" {
			return // the kind's validation requires it
		}
		if err := CompilePolicyExpression(expr, wantString); err != nil {
			errs = append(errs, v.NewInvalid(p, expr, err.Error()))
		}
	}
	conditions := func(p *v.Path, mcs []admissionregistration.MatchCondition) {
		for i, mc := range mcs {
			check(p.Child("matchConditions").Index(i).Child("expression"), mc.Expression, false)
		}
	}
	switch o := a.Object.(type) {
	case *admissionregistration.ValidatingAdmissionPolicy:
		sp := v.NewPath("spec")
		for i, val := range o.Spec.Validations {
			check(sp.Child("validations").Index(i).Child("expression"), val.Expression, false)
			check(sp.Child("validations").Index(i).Child("messageExpression"), val.MessageExpression, true)
		}
		for i, vr := range o.Spec.Variables {
			check(sp.Child("variables").Index(i).Child("expression"), vr.Expression, false)
		}
		conditions(sp, o.Spec.MatchConditions)
		for i, an := range o.Spec.AuditAnnotations {
			check(sp.Child("auditAnnotations").Index(i).Child("valueExpression"), an.ValueExpression, false)
		}
	case *admissionregistration.MutatingAdmissionPolicy:
		sp := v.NewPath("spec")
		mcheck := func(p *v.Path, expr string) {
			if expr == "" {
				return
			}
			if _, err := CompileMutationProgram(expr); err != nil {
				errs = append(errs, v.NewInvalid(p, expr, err.Error()))
			}
		}
		for i, m := range o.Spec.Mutations {
			p := sp.Child("mutations").Index(i)
			if m.ApplyConfiguration != nil {
				mcheck(p.Child("applyConfiguration", "expression"), m.ApplyConfiguration.Expression)
			}
			if m.JSONPatch != nil {
				mcheck(p.Child("jsonPatch", "expression"), m.JSONPatch.Expression)
			}
		}
		for i, vr := range o.Spec.Variables {
			mcheck(sp.Child("variables").Index(i).Child("expression"), vr.Expression)
		}
		for i, mc := range o.Spec.MatchConditions {
			mcheck(sp.Child("matchConditions").Index(i).Child("expression"), mc.Expression)
		}
	case *admissionregistration.ValidatingWebhookConfiguration:
		for i, w := range o.Webhooks {
			conditions(v.NewPath("webhooks").Index(i), w.MatchConditions)
		}
	case *admissionregistration.MutatingWebhookConfiguration:
		for i, w := range o.Webhooks {
			conditions(v.NewPath("webhooks").Index(i), w.MatchConditions)
		}
	default:
		return nil
	}
	if len(errs) == 0 {
		return nil
	}
	m := a.Object.GetObjectMeta()
	return admission.InvalidError(fmt.Sprintf("%s %q is invalid: %v", a.Kind.Kind, m.Name, errs.ToError()), errs)
}
