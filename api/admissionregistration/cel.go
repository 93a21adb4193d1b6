package admissionregistration

import (
	"fmt"
	"strings"
	"sync"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/ext"
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
