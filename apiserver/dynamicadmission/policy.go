package dynamicadmission

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"

	"cel.dev/cel-go/cel"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kobune/kobune/api/admissionregistration"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/api/scheme"
	"github.com/kobune/kobune/api/selector"
	"github.com/kobune/kobune/apiserver/admission"
	"github.com/kobune/kobune/apiserver/apierrors"
	"github.com/kobune/kobune/apiserver/storage"
)

// ValidatingAdmissionPolicies: each binding applies its policy to the
// requests both select; the policy's variables, then its validations, are
// evaluated (CEL) with object, oldObject, request, params (the binding's
// parameter objects), namespaceObject and variables; a validation that
// is false takes the binding's actions: Deny refuses the request, Warn
// warns, Audit records it in the audit event.

// compiledPolicy is a policy with its expressions compiled.
type compiledPolicy struct {
	policy      *admissionregistration.ValidatingAdmissionPolicy
	variables   []namedProgram
	conditions  []namedProgram
	validations []compiledValidation
	audits      []namedProgram
	err         error // an expression that does not compile: the policy's failure
}

type namedProgram struct {
	name string
	prg  cel.Program
}

type compiledValidation struct {
	admissionregistration.Validation
	prg, message cel.Program
}

func compilePolicy(p *admissionregistration.ValidatingAdmissionPolicy) *compiledPolicy {
	c := &compiledPolicy{policy: p}
	compile := func(expr string, wantString bool) cel.Program {
		prg, err := CompilePolicyProgram(expr, wantString)
		if err != nil && c.err == nil {
			c.err = fmt.Errorf("expression %q: %v", expr, err)
		}
		return prg
	}
	for _, v := range p.Spec.Variables {
		c.variables = append(c.variables, namedProgram{v.Name, compile(v.Expression, false)})
	}
	for _, mc := range p.Spec.MatchConditions {
		c.conditions = append(c.conditions, namedProgram{mc.Name, compile(mc.Expression, false)})
	}
	for _, v := range p.Spec.Validations {
		cv := compiledValidation{Validation: v, prg: compile(v.Expression, false)}
		if v.MessageExpression != "" {
			cv.message = compile(v.MessageExpression, true)
		}
		c.validations = append(c.validations, cv)
	}
	for _, a := range p.Spec.AuditAnnotations {
		c.audits = append(c.audits, namedProgram{a.Key, compile(a.ValueExpression, false)})
	}
	return c
}

// boundPolicy is a binding with its policy.
type boundPolicy struct {
	binding *admissionregistration.ValidatingAdmissionPolicyBinding
	policy  *compiledPolicy
}

// policies keeps the bindings, each with its compiled policy.
type policies struct {
	bound atomic.Pointer[[]boundPolicy]
}

// runPolicies follows the policies and bindings until ctx ends; a policy
// is compiled again only when it changed.
func (w *Webhooks) runPolicies(ctx context.Context) {
	followBound(ctx, w.cfg.Store, "validatingadmissionpolicies", "validatingadmissionpolicybindings",
		func(o meta.Object) *compiledPolicy {
			return compilePolicy(o.(*admissionregistration.ValidatingAdmissionPolicy))
		},
		func(c *compiledPolicy, o meta.Object) bool { return c.policy == o },
		func(b meta.Object) string {
			return b.(*admissionregistration.ValidatingAdmissionPolicyBinding).Spec.PolicyName
		},
		func(bound []meta.Object, pols map[string]*compiledPolicy, compiled []meta.Object) {
			var out []boundPolicy
			for _, b := range bound {
				vb := b.(*admissionregistration.ValidatingAdmissionPolicyBinding)
				out = append(out, boundPolicy{binding: vb, policy: pols[vb.Spec.PolicyName]})
			}
			w.policies.bound.Store(&out)
			var written []*admissionregistration.ValidatingAdmissionPolicy
			for _, o := range compiled {
				written = append(written, o.(*admissionregistration.ValidatingAdmissionPolicy))
			}
			w.reportObserved(ctx, written)
		})
}

// followBound follows one kind of policy and its bindings until ctx ends:
// a policy is compiled again only when it changed (same says it did not),
// and publish gets, on every change of either, the bindings whose policy
// exists (by name order), the compiled policies, and the policies just
// compiled.
func followBound[C any](ctx context.Context, st *storage.Store, policies, bindings string,
	compile func(meta.Object) C, same func(C, meta.Object) bool, policyOf func(meta.Object) string,
	publish func(bound []meta.Object, pols map[string]C, compiled []meta.Object)) {
	var mu sync.Mutex
	pols := map[string]C{}
	binds := map[string]meta.Object{}
	send := func(compiled []meta.Object) {
		var bound []meta.Object
		for _, n := range sortedNames(binds) {
			if _, ok := pols[policyOf(binds[n])]; ok {
				bound = append(bound, binds[n])
			}
		}
		publish(bound, pols, compiled)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		followByName(ctx, st, policies, func(objs map[string]meta.Object) {
			mu.Lock()
			defer mu.Unlock()
			next := make(map[string]C, len(objs))
			var compiled []meta.Object
			for name, o := range objs {
				if old, ok := pols[name]; ok && same(old, o) {
					next[name] = old
				} else {
					next[name] = compile(o)
					compiled = append(compiled, o)
				}
			}
			pols = next
			send(compiled)
		})
	}()
	followByName(ctx, st, bindings, func(objs map[string]meta.Object) {
		mu.Lock()
		defer mu.Unlock()
		binds = maps.Clone(objs)
		send(nil)
	})
	<-done
}

// ReportPoliciesWith gives the webhooks the way to write a policy's
// status (the registry's); set before Run.
func (w *Webhooks) ReportPoliciesWith(updateStatus func(ctx context.Context, k *scheme.Kind, o meta.Object) ([]byte, error)) {
	w.updateStatus = updateStatus
}

// reportObserved writes status.observedGeneration of the policies just
// compiled: the generation requests are judged by from now on. A write
// that loses a race is left to the next change's event.
func (w *Webhooks) reportObserved(ctx context.Context, compiled []*admissionregistration.ValidatingAdmissionPolicy) {
	if w.updateStatus == nil {
		return
	}
	k, _ := scheme.ByResource("validatingadmissionpolicies")
	for _, p := range compiled {
		if p.Status.ObservedGeneration == p.Generation {
			continue
		}
		updated := *p
		updated.Status.ObservedGeneration = p.Generation
		if _, err := w.updateStatus(ctx, k, &updated); err != nil && ctx.Err() == nil && status.Code(err) != codes.Aborted && status.Code(err) != codes.NotFound {
			w.cfg.Logf("ValidatingAdmissionPolicy %q: write status.observedGeneration: %v", p.Name, err)
		}
	}
}

// Policies is the chain's ValidatingAdmissionPolicy step; it also judges
// deletes.
func (w *Webhooks) Policies() admission.Validator { return policyStep{w} }

type policyStep struct{ w *Webhooks }

func (policyStep) Name() string { return "ValidatingAdmissionPolicy" }

func (p policyStep) Validate(ctx context.Context, a *admission.Attributes) error {
	return p.w.evaluatePolicies(ctx, &subject{operation: string(a.Operation), kind: a.Kind, object: a.Object, old: a.OldObject, dryRun: admission.IsDryRun(ctx)})
}

// ValidateDelete implements admission.DeleteValidator.
func (p policyStep) ValidateDelete(ctx context.Context, k *scheme.Kind, stored meta.Object) error {
	return p.w.evaluatePolicies(ctx, &subject{operation: "DELETE", kind: k, old: stored, dryRun: admission.IsDryRun(ctx)})
}

func (w *Webhooks) evaluatePolicies(ctx context.Context, r *subject) error {
	bound := w.policies.bound.Load()
	if bound == nil || len(*bound) == 0 || exempt(r.kind) {
		return nil
	}
	for i := range *bound {
		if err := w.evaluate(ctx, &(*bound)[i], r); err != nil {
			return err
		}
	}
	return nil
}

// evaluate applies one binding to a request.
func (w *Webhooks) evaluate(ctx context.Context, bp *boundPolicy, r *subject) error {
	pol, b := bp.policy.policy, bp.binding
	return w.applyBinding(ctx, r, bindingOf{kind: "ValidatingAdmissionPolicy", policy: pol.Name, binding: b.Name,
		match: pol.Spec.MatchConstraints, bindingMatch: b.Spec.MatchResources, failurePolicy: pol.Spec.FailurePolicy,
		compileErr: bp.policy.err, paramKind: pol.Spec.ParamKind, paramRef: b.Spec.ParamRef},
		func(param any) error {
			_, vars, err := newReview(ctx, r, "v1")
			if err != nil {
				return err
			}
			vars["namespaceObject"] = w.namespaceObject(ctx, r)
			vars["params"] = param
			return w.evaluateWith(ctx, bp, vars)
		})
}

// bindingOf is what applyBinding reads of a binding and its policy.
type bindingOf struct {
	kind, policy, binding string
	match, bindingMatch   *admissionregistration.MatchResources
	failurePolicy         *string
	compileErr            error
	paramKind             *admissionregistration.ParamKind
	paramRef              *admissionregistration.ParamRef
}

// applyBinding runs one binding of either kind of policy: when both the
// policy's constraints and the binding's resources select the request, run
// is called with each parameter object; what fails is the request's
// failure, or passed over under failurePolicy Ignore.
func (w *Webhooks) applyBinding(ctx context.Context, r *subject, b bindingOf, run func(param any) error) error {
	if ok, err := w.matchResources(ctx, b.match, r, false); err != nil || !ok {
		return err
	}
	if b.bindingMatch != nil {
		// A binding without resource rules takes every request the
		// policy matches, narrowed by its selectors and exclusions.
		if ok, err := w.matchResources(ctx, b.bindingMatch, r, true); err != nil || !ok {
			return err
		}
	}
	fail := func(err error) error {
		if b.failurePolicy != nil && *b.failurePolicy == admissionregistration.Ignore {
			w.cfg.Logf("%s %q with binding %q failed and is ignored (failurePolicy Ignore): %v", b.kind, b.policy, b.binding, err)
			return nil
		}
		return apierrors.WithReason(codes.InvalidArgument, apierrors.ReasonBadRequest, "%s '%s' with binding '%s' denied request: %v", b.kind, b.policy, b.binding, err)
	}
	if b.compileErr != nil {
		return fail(b.compileErr)
	}
	params, err := w.params(ctx, b.paramKind, b.paramRef, b.binding, r)
	if err != nil {
		return fail(err)
	}
	for _, param := range params {
		if err := run(param); err != nil {
			if st, ok := status.FromError(err); ok && st.Code() != codes.Unknown {
				return err
			}
			return fail(err)
		}
	}
	return nil
}

// evaluateWith runs the policy with one set of variables.
func (w *Webhooks) evaluateWith(ctx context.Context, bp *boundPolicy, vars map[string]any) error {
	pol, b := bp.policy.policy, bp.binding
	for _, c := range bp.policy.conditions {
		out, _, err := c.prg.Eval(vars)
		if err != nil {
			return fmt.Errorf("match condition %q resulted in error: %v", c.name, err)
		}
		if ok, _ := out.Value().(bool); !ok {
			return nil
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
	for i, v := range bp.policy.validations {
		out, _, err := v.prg.Eval(vars)
		if err != nil {
			return fmt.Errorf("expression '%s' resulted in error: %v", v.Expression, err)
		}
		if ok, isBool := out.Value().(bool); isBool && ok {
			continue
		} else if !isBool {
			return fmt.Errorf("expression '%s' must evaluate to a bool", v.Expression)
		}
		msg := v.Message
		if v.message != nil {
			if m, _, err := v.message.Eval(vars); err == nil {
				if s, ok := m.Value().(string); ok && s != "" {
					msg = s
				}
			}
		}
		if msg == "" {
			msg = "failed expression: " + v.Expression
		}
		for _, action := range b.Spec.ValidationActions {
			switch action {
			case admissionregistration.ActionDeny:
				return policyDenied(pol.Name, b.Name, msg, v.Reason)
			case admissionregistration.ActionWarn:
				admission.Warn(ctx, fmt.Sprintf("Validation failed for ValidatingAdmissionPolicy '%s' with binding '%s': %s", pol.Name, b.Name, msg))
			case admissionregistration.ActionAudit:
				failure, _ := json.Marshal([]map[string]any{{"message": msg, "policy": pol.Name, "binding": b.Name, "expressionIndex": i, "validationActions": b.Spec.ValidationActions}})
				admission.Annotate(ctx, "validation.policy.admission.k8s.io/validation_failure", string(failure))
			}
		}
	}
	for _, a := range bp.policy.audits {
		out, _, err := a.prg.Eval(vars)
		if err != nil {
			return fmt.Errorf("audit annotation %q resulted in error: %v", a.name, err)
		}
		if s, ok := out.Value().(string); ok && s != "" {
			admission.Annotate(ctx, pol.Name+"/"+a.name, s)
		}
	}
	return nil
}

// policyDenied is a Deny action's error, with the validation's reason.
func policyDenied(policy, binding, msg string, reason *string) error {
	text := fmt.Sprintf("ValidatingAdmissionPolicy '%s' with binding '%s' denied request: %s", policy, binding, msg)
	r := "Invalid"
	if reason != nil {
		r = *reason
	}
	switch r {
	case "Forbidden":
		return status.Error(codes.PermissionDenied, text)
	case "Unauthorized":
		return status.Error(codes.Unauthenticated, text)
	case "RequestEntityTooLarge":
		return apierrors.WithReason(codes.ResourceExhausted, apierrors.ReasonRequestEntityTooLarge, "%s", text)
	}
	return status.Error(codes.InvalidArgument, text)
}

// matchResources: the request is selected by a rule (any request when
// there are none and anyWithoutRules: a binding's), not excluded, and its
// namespace and object match the selectors.
func (w *Webhooks) matchResources(ctx context.Context, m *admissionregistration.MatchResources, r *subject, anyWithoutRules bool) (bool, error) {
	if m == nil {
		return false, nil
	}
	policy := admissionregistration.Equivalent
	if m.MatchPolicy != nil {
		policy = *m.MatchPolicy
	}
	named := func(rule admissionregistration.NamedRuleWithOperations) bool {
		return ruleMatches(&rule.RuleWithOperations, policy, r) && (len(rule.ResourceNames) == 0 || slices.Contains(rule.ResourceNames, r.name()))
	}
	included := anyWithoutRules && len(m.ResourceRules) == 0 || slices.ContainsFunc(m.ResourceRules, named)
	if !included || slices.ContainsFunc(m.ExcludeResourceRules, named) {
		return false, nil
	}
	return w.matchSelectors(ctx, m.NamespaceSelector, m.ObjectSelector, r)
}

func (r *subject) name() string {
	if r.object != nil {
		return r.object.GetObjectMeta().Name
	}
	return r.old.GetObjectMeta().Name
}

// namespaceObject is the request's namespace as CEL sees it (nil for a
// cluster-scoped object).
func (w *Webhooks) namespaceObject(ctx context.Context, r *subject) any {
	if !r.kind.Namespaced {
		return nil
	}
	kv, err := w.cfg.Store.Get(ctx, storage.Key("namespaces", "", r.namespace()))
	if err != nil {
		return nil
	}
	v, err := meta.DecodeJSONValue(kv.Value)
	if err != nil {
		return nil
	}
	return celNumbers(v)
}

// params are the binding's parameter objects (one nil when the policy
// takes none); none found is an error under parameterNotFoundAction Deny.
func (w *Webhooks) params(ctx context.Context, pk *admissionregistration.ParamKind, ref *admissionregistration.ParamRef, binding string, r *subject) ([]any, error) {
	if pk == nil {
		return []any{nil}, nil
	}
	if ref == nil {
		return nil, fmt.Errorf("the policy takes parameters of kind %s, and binding %q names none (paramRef)", pk.Kind, binding)
	}
	k, err := w.cfg.Kinds.ByKind(pk.APIVersion, pk.Kind)
	if err != nil {
		return nil, fmt.Errorf("paramKind: %v", err)
	}
	ns := ""
	if k.Namespaced {
		ns = ref.Namespace
		if ns == "" {
			ns = r.namespace()
		}
	}
	var found []any
	if ref.Name != "" {
		kv, err := w.cfg.Store.Get(ctx, storage.Key(k.Resource, ns, ref.Name))
		if err == nil {
			if v, err := meta.DecodeJSONValue(kv.Value); err == nil {
				found = append(found, celNumbers(v))
			}
		}
	} else {
		sel, err := selector.FromLabelSelector(ref.Selector)
		if err != nil {
			return nil, err
		}
		kvs, _, err := w.cfg.Store.List(ctx, storage.ListPrefix(k.Resource, ns))
		if err != nil {
			return nil, err
		}
		for _, kv := range kvs {
			var o struct {
				Metadata meta.ObjectMeta `json:"metadata"`
			}
			if json.Unmarshal(kv.Value, &o) == nil && sel.Matches(o.Metadata.Labels) {
				if v, err := meta.DecodeJSONValue(kv.Value); err == nil {
					found = append(found, celNumbers(v))
				}
			}
		}
	}
	if len(found) == 0 {
		if ref.ParameterNotFoundAction != nil && *ref.ParameterNotFoundAction == admissionregistration.AllowAction {
			return nil, nil
		}
		return nil, fmt.Errorf("no params found for policy binding with `Deny` parameterNotFoundAction")
	}
	return found, nil
}
