package dynamicadmission

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"slices"

	"github.com/google/uuid"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kobune/kobune/api/admissionregistration"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/api/patch"
	"github.com/kobune/kobune/api/scheme"
	"github.com/kobune/kobune/apiserver/admission"
	"github.com/kobune/kobune/apiserver/apierrors"
	"github.com/kobune/kobune/apiserver/request"
)

// admission.k8s.io/v1 AdmissionReview, as webhooks read and write it.
type (
	admissionReview struct {
		APIVersion string             `json:"apiVersion"`
		Kind       string             `json:"kind"`
		Request    *admissionRequest  `json:"request,omitempty"`
		Response   *admissionResponse `json:"response,omitempty"`
	}
	groupVersionKind struct {
		Group   string `json:"group"`
		Version string `json:"version"`
		Kind    string `json:"kind"`
	}
	groupVersionResource struct {
		Group    string `json:"group"`
		Version  string `json:"version"`
		Resource string `json:"resource"`
	}
	userInfo struct {
		Username string   `json:"username"`
		Groups   []string `json:"groups,omitempty"`
	}
	admissionRequest struct {
		UID             string               `json:"uid"`
		Kind            groupVersionKind     `json:"kind"`
		Resource        groupVersionResource `json:"resource"`
		SubResource     string               `json:"subResource,omitempty"`
		RequestKind     groupVersionKind     `json:"requestKind"`
		RequestResource groupVersionResource `json:"requestResource"`
		Name            string               `json:"name,omitempty"`
		Namespace       string               `json:"namespace,omitempty"`
		Operation       string               `json:"operation"`
		UserInfo        userInfo             `json:"userInfo"`
		Object          json.RawMessage      `json:"object,omitempty"`
		OldObject       json.RawMessage      `json:"oldObject,omitempty"`
		DryRun          bool                 `json:"dryRun"`
		Options         json.RawMessage      `json:"options,omitempty"`
	}
	admissionResponse struct {
		UID       string   `json:"uid"`
		Allowed   bool     `json:"allowed"`
		Result    *result  `json:"status,omitempty"`
		Patch     []byte   `json:"patch,omitempty"`
		PatchType *string  `json:"patchType,omitempty"`
		Warnings  []string `json:"warnings,omitempty"`
	}
	result struct {
		Code    int32  `json:"code,omitempty"`
		Message string `json:"message,omitempty"`
		Reason  string `json:"reason,omitempty"`
	}
)

// Mutating is the chain's MutatingAdmissionWebhook step.
func (w *Webhooks) Mutating() admission.Mutator { return mutating{w} }

// Validating is the chain's ValidatingAdmissionWebhook step; it also
// judges deletes and status updates.
func (w *Webhooks) Validating() admission.Validator { return validating{w} }

type mutating struct{ w *Webhooks }

func (mutating) Name() string { return "MutatingAdmissionWebhook" }

// Admit calls each matching mutating webhook in order, applying its
// patch; webhooks with reinvocationPolicy IfNeeded are called once more
// if a later one changed the object after them.
func (m mutating) Admit(ctx context.Context, a *admission.Attributes) error {
	hooks := *m.w.mutating.Load()
	if len(hooks) == 0 || exempt(a.Kind) {
		return nil
	}
	r := &subject{operation: string(a.Operation), kind: a.Kind, object: a.Object, old: a.OldObject, dryRun: admission.IsDryRun(ctx)}
	var again []int
	changedAfter, changedAny := false, false
	for i := range hooks {
		changed, called, err := m.w.dispatch(ctx, &hooks[i], r, true)
		if err != nil {
			return err
		}
		changedAny = changedAny || changed
		if changed && len(again) > 0 {
			changedAfter = true
		}
		if called && hooks[i].ReinvocationPolicy == admissionregistration.IfNeeded {
			again = append(again, i)
		}
	}
	if changedAfter {
		for _, i := range again {
			if _, _, err := m.w.dispatch(ctx, &hooks[i], r, true); err != nil {
				return err
			}
		}
	}
	if changedAny {
		// MutatingAdmissionPolicies with reinvocationPolicy IfNeeded run
		// once more: a webhook changed the object after them.
		return m.w.reinvokePolicies(ctx, r)
	}
	return nil
}

// AdmitConnect implements admission.ConnectAdmitter: the mutating
// webhooks see CONNECT requests too (a patch changes the options).
func (m mutating) AdmitConnect(ctx context.Context, k *scheme.Kind, sub string, o *admission.ConnectOptions) error {
	hooks := *m.w.mutating.Load()
	r := &subject{operation: string(admission.Connect), kind: k, subresource: sub, object: o}
	for i := range hooks {
		if _, _, err := m.w.dispatch(ctx, &hooks[i], r, true); err != nil {
			return err
		}
	}
	return nil
}

type validating struct{ w *Webhooks }

// AdmitConnect implements admission.ConnectAdmitter.
func (v validating) AdmitConnect(ctx context.Context, k *scheme.Kind, sub string, o *admission.ConnectOptions) error {
	return v.all(ctx, &subject{operation: string(admission.Connect), kind: k, subresource: sub, object: o})
}

func (validating) Name() string { return "ValidatingAdmissionWebhook" }

// Validate calls each matching validating webhook.
func (v validating) Validate(ctx context.Context, a *admission.Attributes) error {
	return v.all(ctx, &subject{operation: string(a.Operation), kind: a.Kind, object: a.Object, old: a.OldObject, dryRun: admission.IsDryRun(ctx)})
}

// ValidateDelete implements admission.DeleteValidator.
func (v validating) ValidateDelete(ctx context.Context, k *scheme.Kind, stored meta.Object) error {
	return v.all(ctx, &subject{operation: "DELETE", kind: k, old: stored, dryRun: admission.IsDryRun(ctx)})
}

// ValidateStatus implements admission.StatusValidator.
func (v validating) ValidateStatus(ctx context.Context, a *admission.Attributes) error {
	return v.all(ctx, &subject{operation: string(a.Operation), kind: a.Kind, subresource: "status", object: a.Object, old: a.OldObject, dryRun: admission.IsDryRun(ctx)})
}

func (v validating) all(ctx context.Context, r *subject) error {
	hooks := *v.w.validating.Load()
	if len(hooks) == 0 || exempt(r.kind) {
		return nil
	}
	for i := range hooks {
		if _, _, err := v.w.dispatch(ctx, &hooks[i], r, false); err != nil {
			return err
		}
	}
	return nil
}

// dispatch calls one webhook if it selects the request; a mutating one's
// patch is applied to r.object in place. changed: the patch changed the
// object; called: the webhook was called.
func (w *Webhooks) dispatch(ctx context.Context, hook *admissionregistration.Webhook, r *subject, mutate bool) (changed, called bool, err error) {
	if !matchRules(hook, r) {
		return false, false, nil
	}
	ok, err := w.matchSelectors(ctx, hook.NamespaceSelector, hook.ObjectSelector, r)
	if err != nil || !ok {
		return false, false, w.failed(hook, err)
	}
	review, vars, err := newReview(ctx, r, reviewVersion(hook))
	if err != nil {
		return false, false, err
	}
	if len(hook.MatchConditions) > 0 {
		ok, err := w.matchConditions(hook, vars)
		if err != nil || !ok {
			return false, false, w.failed(hook, err)
		}
	}
	if r.dryRun && hook.SideEffects != admissionregistration.SideEffectsNone && hook.SideEffects != admissionregistration.SideEffectsNoneOnDryRun {
		return false, false, apierrors.WithReason(codes.InvalidArgument, apierrors.ReasonBadRequest, "admission webhook %q has side effects and does not support dry run", hook.Name)
	}
	resp, err := w.call(ctx, hook, review)
	if err != nil {
		return false, true, w.failed(hook, err)
	}
	for _, msg := range resp.Warnings {
		admission.Warn(ctx, msg)
	}
	if !resp.Allowed {
		return false, true, denied(hook.Name, resp.Result)
	}
	if len(resp.Patch) == 0 {
		return false, true, nil
	}
	if !mutate {
		return false, true, w.failed(hook, fmt.Errorf("a validating webhook may not return a patch"))
	}
	if resp.PatchType == nil || *resp.PatchType != "JSONPatch" {
		return false, true, w.failed(hook, fmt.Errorf("the webhook returned a patch without patchType JSONPatch"))
	}
	changed, err = applyPatch(r, resp.Patch)
	if err != nil {
		return false, true, w.failed(hook, fmt.Errorf("apply the webhook's patch: %w", err))
	}
	return changed, true, nil
}

// failed is a webhook's failure, as its failurePolicy says: the request
// fails (500), or the webhook is passed over.
func (w *Webhooks) failed(hook *admissionregistration.Webhook, err error) error {
	if err == nil {
		return nil
	}
	if hook.FailurePolicy == admissionregistration.Ignore {
		w.cfg.Logf("admission webhook %q failed and is ignored (failurePolicy Ignore): %v", hook.Name, err)
		return nil
	}
	return apierrors.WithReason(codes.Internal, apierrors.ReasonInternalError, "Internal error occurred: failed calling webhook %q: %v", hook.Name, err)
}

// denied is a webhook's refusal, with its code (400 if it gives none or
// one that is not an error) and message.
func denied(name string, res *result) error {
	msg := fmt.Sprintf("admission webhook %q denied the request", name)
	code := int32(http.StatusBadRequest)
	if res != nil {
		switch {
		case res.Message != "":
			msg += ": " + res.Message
		case res.Reason != "":
			msg += ": " + res.Reason
		default:
			msg += " without explanation"
		}
		if res.Code >= 400 && res.Code < 500 {
			code = res.Code
		}
	} else {
		msg += " without explanation"
	}
	switch code {
	case http.StatusForbidden:
		return status.Error(codes.PermissionDenied, msg)
	case http.StatusNotFound:
		return status.Error(codes.NotFound, msg)
	case http.StatusConflict:
		return status.Error(codes.Aborted, msg)
	case http.StatusUnprocessableEntity:
		return status.Error(codes.InvalidArgument, msg)
	case http.StatusTooManyRequests:
		return status.Error(codes.ResourceExhausted, msg)
	}
	return apierrors.WithReason(codes.InvalidArgument, apierrors.ReasonBadRequest, "%s", msg)
}

// newReview is the AdmissionReview of a request, and the variables its
// match conditions see.
func newReview(ctx context.Context, r *subject, reviewVersion string) (*admissionReview, map[string]any, error) {
	k := r.kind
	group, version := k.Group(), k.APIVersion
	if group != "" {
		version = version[len(group)+1:]
	}
	u := request.UserFrom(ctx)
	m := r.old
	if r.object != nil {
		m = r.object
	}
	kind := k.Kind
	if o, ok := r.object.(*admission.ConnectOptions); ok {
		kind = o.Kind // PodAttachOptions ..., as kube-apiserver sends a CONNECT
	}
	req := &admissionRequest{UID: uuid.NewString(), Kind: groupVersionKind{group, version, kind},
		Resource: groupVersionResource{group, version, k.PluralName()}, SubResource: r.subresource,
		Name: m.GetObjectMeta().Name, Namespace: m.GetObjectMeta().Namespace, Operation: r.operation,
		UserInfo: userInfo{Username: u.Name, Groups: u.Groups}, DryRun: r.dryRun}
	req.RequestKind, req.RequestResource = req.Kind, req.Resource
	vars := map[string]any{"object": nil, "oldObject": nil}
	for _, o := range []struct {
		obj meta.Object
		raw *json.RawMessage
		key string
	}{{r.object, &req.Object, "object"}, {r.old, &req.OldObject, "oldObject"}} {
		if o.obj == nil {
			continue
		}
		b, err := scheme.Encode(o.obj)
		if err != nil {
			return nil, nil, status.Errorf(codes.Internal, "encode for a webhook: %v", err)
		}
		*o.raw = b
		v, err := meta.DecodeJSONValue(b)
		if err != nil {
			return nil, nil, err
		}
		vars[o.key] = celNumbers(v)
	}
	if opts := map[string]string{"CREATE": "CreateOptions", "UPDATE": "UpdateOptions", "DELETE": "DeleteOptions"}[r.operation]; opts != "" {
		req.Options, _ = json.Marshal(map[string]string{"apiVersion": "meta.k8s.io/v1", "kind": opts})
	}
	rb, _ := json.Marshal(req)
	rv, _ := meta.DecodeJSONValue(rb)
	vars["request"] = celNumbers(rv)
	return &admissionReview{APIVersion: "admission.k8s.io/" + reviewVersion, Kind: "AdmissionReview", Request: req}, vars, nil
}

// reviewVersion is the AdmissionReview version a webhook takes: v1 if it
// lists it, else v1beta1 (validation allows nothing else; the two are
// the same shape).
func reviewVersion(hook *admissionregistration.Webhook) string {
	if slices.Contains(hook.AdmissionReviewVersions, "v1") {
		return "v1"
	}
	return "v1beta1"
}

// celNumbers turns json.Numbers into int64 or float64, as CEL takes them.
func celNumbers(v any) any {
	switch x := v.(type) {
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return i
		}
		f, _ := x.Float64()
		return f
	case map[string]any:
		for k, c := range x {
			x[k] = celNumbers(c)
		}
	case []any:
		for i, c := range x {
			x[i] = celNumbers(c)
		}
	}
	return v
}

// applyPatch applies a JSON patch to the request's object, in place.
func applyPatch(r *subject, p []byte) (bool, error) {
	if r.object == nil {
		return false, fmt.Errorf("there is no object to patch")
	}
	before, err := scheme.Encode(r.object)
	if err != nil {
		return false, err
	}
	after, err := patch.Apply(patch.JSONPatchType, before, p, nil)
	if err != nil {
		return false, err
	}
	return replaceObject(r, before, after)
}

// replaceObject makes after (JSON) the request's object, decoded as
// kube-apiserver decodes a mutation's result; it reports whether the
// object changed from before.
func replaceObject(r *subject, before, after []byte) (bool, error) {
	var err error
	if co, ok := r.object.(*admission.ConnectOptions); ok {
		n := admission.ConnectOptions{Meta: co.Meta}
		if err := json.Unmarshal(after, &n); err != nil {
			return false, err
		}
		changed := !reflect.DeepEqual(*co, n)
		*co = n
		return changed, nil
	}
	var o meta.Object
	if c := r.kind.Custom; c != nil {
		// A custom resource is pruned again by its schema: a webhook may
		// not add what the schema does not allow (Kubernetes prunes
		// webhooks' patches too).
		if o, _, err = c.Decode(after); err == nil {
			*o.GetTypeMeta() = meta.TypeMeta{APIVersion: r.kind.APIVersion, Kind: r.kind.Kind}
		}
	} else if o, err = r.kind.Decode(after); err == nil && r.kind.Default != nil {
		// As kube-apiserver decodes a webhook's patch: with defaulting,
		// so that what a webhook adds (an init container) gets its
		// defaults (terminationMessagePolicy File ...).
		r.kind.Default(o)
	}
	if err != nil {
		return false, err
	}
	now, err := scheme.Encode(o)
	if err != nil {
		return false, err
	}
	if string(now) == string(before) {
		return false, nil
	}
	reflect.ValueOf(r.object).Elem().Set(reflect.ValueOf(o).Elem())
	return true, nil
}
