package rest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kobune/kobune/api/k8sapi"
	"github.com/kobune/kobune/api/patch"
	"github.com/kobune/kobune/api/scheme"
	"github.com/kobune/kobune/apiserver/apierrors"
	"github.com/kobune/kobune/apiserver/filters"
	"github.com/kobune/kobune/apiserver/registry"
	"github.com/kobune/kobune/proto/apipb"
)

// A kind served at another apiVersion besides its stored one
// (scheme.Kind.Versions: autoscaling/v1 HorizontalPodAutoscalers) is
// converted at this door and nowhere else: request bodies to the stored
// version before they go the usual way, objects answered back to the
// version the URL named. The gRPC API, storage, admission and the
// controllers see the stored version only, as kube-apiserver's storage
// does.

// toStored turns a request body of the URL's version into the stored
// version's JSON. The body's fields are checked against Kubernetes' type
// of that version first (a typo would be lost in the conversion):
// refused under Strict, a warning otherwise.
func (t *restTarget) toStored(body []byte, fieldValidation string) ([]byte, []string, error) {
	if t.conv == nil || t.converted() {
		return body, nil, nil // a conversion webhook's kind: the registry converts, whatever the door
	}
	var doc map[string]any
	if err := json.Unmarshal(body, &doc); err != nil {
		return nil, nil, statusWithCode(http.StatusBadRequest, "BadRequest", fmt.Sprintf("%s in version %q cannot be handled as a %s: %v", t.kind.Kind, t.conv.APIVersion, t.kind.Kind, err))
	}
	var warnings []string
	if kt, ok := k8sapi.ForKind(t.conv.APIVersion, t.kind.Kind); ok && fieldValidation != "Ignore" {
		if typos := k8sapi.UnknownFields(kt, doc); len(typos) > 0 {
			for i, f := range typos {
				typos[i] = fmt.Sprintf("unknown field %q", f)
			}
			if fieldValidation == "Strict" || fieldValidation == registry.KobuneStrict {
				return nil, nil, statusWithCode(http.StatusBadRequest, "BadRequest", fmt.Sprintf("%s in version %q cannot be handled as a %s: strict decoding error: %s",
					t.kind.Kind, t.conv.APIVersion, t.kind.Kind, strings.Join(typos, ", ")))
			}
			warnings = typos
		}
	}
	out, err := t.conv.ToStored(body)
	if err != nil {
		return nil, nil, statusWithCode(http.StatusBadRequest, "BadRequest", fmt.Sprintf("%s in version %q cannot be handled as a %s: %v", t.kind.Kind, t.conv.APIVersion, t.kind.Kind, err))
	}
	return out, warnings, nil
}

// converted says the kind's versions are converted by a webhook
// (scheme.Custom.Convert).
func (t *restTarget) converted() bool {
	return t.kind != nil && t.kind.Custom != nil && t.kind.Custom.Convert != nil
}

// fromStored turns a stored object into the URL's version; anything else
// (a Status, a list) passes as it is. Only a conversion webhook fails.
func (t *restTarget) fromStored(ctx context.Context, obj []byte) ([]byte, error) {
	if t.conv == nil {
		return obj, nil
	}
	out, err := t.fromStoredAll(ctx, [][]byte{obj})
	if err != nil {
		return nil, err
	}
	return out[0], nil
}

// fromStoredAll is fromStored of a list's items: a conversion webhook is
// sent them in one review.
func (t *restTarget) fromStoredAll(ctx context.Context, objs [][]byte) ([][]byte, error) {
	if t.conv == nil {
		return objs, nil
	}
	out := slices.Clone(objs)
	var idx []int
	for i, obj := range objs {
		var tm struct{ APIVersion, Kind string }
		if json.Unmarshal(obj, &tm) != nil || tm.Kind != t.kind.Kind || tm.APIVersion == t.conv.APIVersion {
			continue
		}
		if t.converted() {
			idx = append(idx, i)
			continue
		}
		if tm.APIVersion != t.kind.APIVersion {
			continue
		}
		if b, err := t.conv.FromStored(obj); err == nil {
			out[i] = b // a built-in conversion always succeeds; never lose an answer over it
		}
	}
	if len(idx) == 0 {
		return out, nil
	}
	send := make([][]byte, len(idx))
	for n, i := range idx {
		send[n] = objs[i]
	}
	conv, err := t.kind.Custom.Convert(ctx, send, t.conv.APIVersion)
	if err != nil {
		return nil, statusWithCode(http.StatusInternalServerError, "InternalError", err.Error())
	}
	for n, i := range idx {
		out[i] = conv[n]
	}
	return out, nil
}

// apiVersion is the apiVersion the URL asked for.
func (t *restTarget) apiVersion() string {
	if t.conv != nil {
		return t.conv.APIVersion
	}
	return t.kind.APIVersion
}

// restPatchConverted patches an object of another served version as
// kube-apiserver does: the patch applies to the object in the URL's
// version, the result is converted back and stored as an update with
// the revision it was made from (again after a conflict).
func (s *Handler) restPatchConverted(ctx context.Context, w http.ResponseWriter, r *http.Request, t *restTarget, mt string, body []byte, dry bool) {
	if mt == patch.ApplyPatchType || t.sub != "" {
		writeError(w, statusWithCode(http.StatusBadRequest, "BadRequest",
			fmt.Sprintf("server-side apply and subresource patches of %s are served in %s only: use apiVersion %s", t.kind.Kind, t.kind.APIVersion, t.kind.APIVersion)), t)
		return
	}
	kt, _ := k8sapi.ForKind(t.conv.APIVersion, t.kind.Kind)
	q := r.URL.Query()
	var warnings []string
	// Authorized and audited once, as the patch it is; then a read and an
	// update of the stored version, again from a fresh read if someone
	// wrote between the two.
	req := &apipb.PatchRequest{Resource: t.resource, Namespace: t.namespace, Name: t.name, PatchType: mt, Patch: body,
		FieldValidation: q.Get("fieldValidation"), DryRun: dry, FieldManager: q.Get("fieldManager")}
	resp, err := filters.Unary(ctx, s.chain, "Patch", req, func(ctx context.Context, req *apipb.PatchRequest) (*apipb.ObjectResponse, error) {
		for attempt := 0; ; attempt++ {
			cur, err := s.registry.Get(ctx, &apipb.GetRequest{Resource: t.resource, Namespace: t.namespace, Name: t.name})
			if err != nil {
				return nil, err
			}
			at, err := t.fromStored(ctx, cur.Object)
			if err != nil {
				return nil, err
			}
			patched, err := patch.Apply(mt, at, body, kt)
			if err != nil {
				return nil, apierrors.Invalid("%s %q: the patch cannot be applied: %v", t.kind.Kind, t.name, err)
			}
			stored, w, err := t.toStored(patched, req.FieldValidation)
			if err != nil {
				return nil, err
			}
			warnings = w
			resp, err := s.registry.Update(ctx, &apipb.UpdateRequest{Resource: t.resource, Namespace: t.namespace, Object: stored,
				FieldValidation: req.FieldValidation, DryRun: req.DryRun, FieldManager: req.FieldManager})
			if status.Code(err) == codes.Aborted && attempt < 5 && !strings.Contains(string(body), `"resourceVersion"`) {
				continue // someone wrote between the read and the update: patch the new object
			}
			return resp, err
		}
	})
	writeWarnings(w, warnings)
	respond(w, r, http.StatusOK, resp, err, t)
}

// servedVersions lists a kind's apiVersions, the stored (preferred) first.
func servedVersions(k *scheme.Kind) []string {
	out := []string{k.APIVersion}
	for _, v := range k.Versions {
		out = append(out, v.APIVersion)
	}
	return out
}
