package dynamicadmission

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"

	"cel.dev/cel-go/cel"

	"github.com/kobune/kobune/api/admissionregistration"
	"github.com/kobune/kobune/api/fieldmanager"
	"github.com/kobune/kobune/api/k8sapi"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/api/patch"
	"github.com/kobune/kobune/api/scheme"
	"github.com/kobune/kobune/apiserver/admission"
)

// MutatingAdmissionPolicies: a binding applies a policy's mutations to
// the requests both select (the same matching, parameters, match
// conditions and variables as ValidatingAdmissionPolicies). Each mutation
// is a CEL expression: an apply configuration, Object{...}, merged into
// the object as server-side apply merges (fieldmanager.Apply, forced, with
// the kind's list keys), or a list of JSONPatch{op, path, value}. Each
// mutation sees the object as the ones before it left it; what they make
// is decoded and defaulted as a webhook's patch is, and validated later
// like any object. A mutation that fails fails the request unless the
// policy's failurePolicy is Ignore. As kube-apiserver orders them, the
// policies run before the mutating webhooks; a policy with
// reinvocationPolicy IfNeeded runs once more after them when a webhook
// changed the object.

type compiledMutation struct {
	patchType string
	prg       cel.Program
}

type compiledMutatingPolicy struct {
	policy                *admissionregistration.MutatingAdmissionPolicy
	variables, conditions []namedProgram
	mutations             []compiledMutation
	err                   error
}

// CompileMutationProgram compiles a mutation's expression (or a variable
// or match condition of a mutating policy).
func CompileMutationProgram(expr string) (cel.Program, error) {
	env, err := MutationEnv()
	if err != nil {
		return nil, err
	}
	ast, iss := env.Compile(expr)
	if iss.Err() != nil {
		return nil, fmt.Errorf("compilation failed: %s", iss.Err())
	}
	return env.Program(ast, cel.CostLimit(1_000_000), cel.InterruptCheckFrequency(100))
}

func compileMutatingPolicy(p *admissionregistration.MutatingAdmissionPolicy) *compiledMutatingPolicy {
	c := &compiledMutatingPolicy{policy: p}
	compile := func(expr string) cel.Program {
		prg, err := CompileMutationProgram(expr)
		if err != nil && c.err == nil {
			c.err = fmt.Errorf("expression %q: %v", expr, err)
		}
		return prg
	}
	for _, v := range p.Spec.Variables {
		c.variables = append(c.variables, namedProgram{v.Name, compile(v.Expression)})
	}
	for _, mc := range p.Spec.MatchConditions {
		c.conditions = append(c.conditions, namedProgram{mc.Name, compile(mc.Expression)})
	}
	for _, m := range p.Spec.Mutations {
		expr := ""
		switch {
		case m.ApplyConfiguration != nil:
			expr = m.ApplyConfiguration.Expression
		case m.JSONPatch != nil:
			expr = m.JSONPatch.Expression
		}
		c.mutations = append(c.mutations, compiledMutation{patchType: m.PatchType, prg: compile(expr)})
	}
	return c
}

type boundMutatingPolicy struct {
	binding *admissionregistration.MutatingAdmissionPolicyBinding
	policy  *compiledMutatingPolicy
}

type mutatingPolicies struct {
	bound atomic.Pointer[[]boundMutatingPolicy]
}

// runMutatingPolicies follows the mutating policies and their bindings.
func (w *Webhooks) runMutatingPolicies(ctx context.Context) {
	followBound(ctx, w.cfg.Store, "mutatingadmissionpolicies", "mutatingadmissionpolicybindings",
		func(o meta.Object) *compiledMutatingPolicy {
			return compileMutatingPolicy(o.(*admissionregistration.MutatingAdmissionPolicy))
		},
		func(c *compiledMutatingPolicy, o meta.Object) bool { return c.policy == o },
		func(b meta.Object) string {
			return b.(*admissionregistration.MutatingAdmissionPolicyBinding).Spec.PolicyName
		},
		func(bound []meta.Object, pols map[string]*compiledMutatingPolicy, _ []meta.Object) {
			var out []boundMutatingPolicy
			for _, b := range bound {
				mb := b.(*admissionregistration.MutatingAdmissionPolicyBinding)
				out = append(out, boundMutatingPolicy{binding: mb, policy: pols[mb.Spec.PolicyName]})
			}
			w.mutatingPolicies.bound.Store(&out)
		})
}

// MutatingPolicies is the chain's MutatingAdmissionPolicy step.
func (w *Webhooks) MutatingPolicies() admission.Mutator { return mutatingPolicyStep{w} }

type mutatingPolicyStep struct{ w *Webhooks }

func (mutatingPolicyStep) Name() string { return "MutatingAdmissionPolicy" }

// Admit applies every bound policy that selects the request, in the
// bindings' name order.
func (m mutatingPolicyStep) Admit(ctx context.Context, a *admission.Attributes) error {
	bound := m.w.mutatingPolicies.bound.Load()
	if bound == nil || len(*bound) == 0 || exempt(a.Kind) || a.Object == nil {
		return nil
	}
	r := &subject{operation: string(a.Operation), kind: a.Kind, object: a.Object, old: a.OldObject, dryRun: admission.IsDryRun(ctx)}
	for i := range *bound {
		if err := m.w.mutate(ctx, &(*bound)[i], r); err != nil {
			return err
		}
	}
	return nil
}

// reinvokePolicies runs again the policies with reinvocationPolicy
// IfNeeded (the mutating webhooks changed the object after them).
func (w *Webhooks) reinvokePolicies(ctx context.Context, r *subject) error {
	bound := w.mutatingPolicies.bound.Load()
	if bound == nil {
		return nil
	}
	for i := range *bound {
		if (*bound)[i].policy.policy.Spec.ReinvocationPolicy != admissionregistration.IfNeededReinvocation {
			continue
		}
		if err := w.mutate(ctx, &(*bound)[i], r); err != nil {
			return err
		}
	}
	return nil
}

// mutate applies one binding to a request.
func (w *Webhooks) mutate(ctx context.Context, bp *boundMutatingPolicy, r *subject) error {
	pol, b := bp.policy.policy, bp.binding
	return w.applyBinding(ctx, r, bindingOf{kind: "MutatingAdmissionPolicy", policy: pol.Name, binding: b.Name,
		match: pol.Spec.MatchConstraints, bindingMatch: b.Spec.MatchResources, failurePolicy: pol.Spec.FailurePolicy,
		compileErr: bp.policy.err, paramKind: pol.Spec.ParamKind, paramRef: b.Spec.ParamRef},
		func(param any) error { return w.mutateWith(ctx, bp, r, param) })
}

// mutateWith runs the policy's mutations with one parameter object.
func (w *Webhooks) mutateWith(ctx context.Context, bp *boundMutatingPolicy, r *subject, param any) error {
	vars, err := w.mutationVars(ctx, r, param)
	if err != nil {
		return err
	}
	for _, c := range bp.policy.conditions {
		out, _, err := c.prg.Eval(vars)
		if err != nil {
			return fmt.Errorf("match condition %q resulted in error: %v", c.name, err)
		}
		if ok, _ := out.Value().(bool); !ok {
			return nil
		}
	}
	for i, mu := range bp.policy.mutations {
		if i > 0 { // each mutation sees what the ones before it did
			if vars, err = w.mutationVars(ctx, r, param); err != nil {
				return err
			}
		}
		variables := map[string]any{}
		vars["variables"] = variables
		for _, v := range bp.policy.variables {
			out, _, err := v.prg.Eval(vars)
			if err != nil {
				return fmt.Errorf("variable %q resulted in error: %v", v.name, err)
			}
			variables[v.name] = out
		}
		out, _, err := mu.prg.Eval(vars)
		if err != nil {
			return fmt.Errorf("mutation %d resulted in error: %v", i, err)
		}
		result := nativeJSON(out)
		before, err := scheme.Encode(r.object)
		if err != nil {
			return err
		}
		var after []byte
		switch mu.patchType {
		case admissionregistration.PatchTypeApplyConfiguration:
			cfg, ok := result.(map[string]any)
			if !ok {
				return fmt.Errorf("mutation %d: an apply configuration must be an Object{...}, not %T", i, result)
			}
			if after, err = applyConfiguration(r.kind, before, cfg); err != nil {
				return fmt.Errorf("mutation %d: %v", i, err)
			}
		case admissionregistration.PatchTypeJSONPatch:
			ops, err := json.Marshal(result)
			if err != nil {
				return err
			}
			if after, err = patch.Apply(patch.JSONPatchType, before, ops, nil); err != nil {
				return fmt.Errorf("mutation %d: the JSON patch cannot be applied: %v", i, err)
			}
		}
		if _, err := replaceObject(r, before, after); err != nil {
			return fmt.Errorf("mutation %d: the mutated object cannot be read as a %s: %v", i, r.kind.Kind, err)
		}
	}
	return nil
}

// mutationVars are the CEL variables of a mutation.
func (w *Webhooks) mutationVars(ctx context.Context, r *subject, param any) (map[string]any, error) {
	_, vars, err := newReview(ctx, r, "v1")
	if err != nil {
		return nil, err
	}
	vars["namespaceObject"] = w.namespaceObject(ctx, r)
	vars["params"] = param
	return vars, nil
}

// applyConfiguration merges cfg into the object (JSON) as a forced
// server-side apply with no field owners: maps merge, a list keyed in the
// kind's type (containers by name) merges by key, any other list and
// every scalar is replaced.
func applyConfiguration(k *scheme.Kind, obj []byte, cfg map[string]any) ([]byte, error) {
	var live map[string]any
	d := json.NewDecoder(bytes.NewReader(obj))
	d.UseNumber()
	if err := d.Decode(&live); err != nil {
		return nil, err
	}
	t, _ := k8sapi.ForKind(k.APIVersion, k.Kind)
	merged, _, err := fieldmanager.Apply(fieldmanager.Request{Live: live, Applied: cfg, Force: true, Type: t, APIVersion: k.APIVersion, Manager: "mutating-admission-policy"})
	if err != nil {
		return nil, err
	}
	return json.Marshal(merged)
}
