package registry

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/kobune/kobune/api/fieldmanager"
	"github.com/kobune/kobune/api/k8sapi"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/api/scheme"
	"github.com/kobune/kobune/apiserver/admission"
	"github.com/kobune/kobune/apiserver/apierrors"
	"github.com/kobune/kobune/apiserver/storage"
	"github.com/kobune/kobune/proto/apipb"
)

// Server-side apply (kubectl apply --server-side): a Patch of type
// application/apply-patch+yaml with a fieldManager. api/fieldmanager does
// the merge and the bookkeeping in metadata.managedFields; the result is
// stored as a create (the object did not exist) or an update would be, with
// the same admission and validation.
//
// managedFields are kept only for objects an apply has touched: once an
// object has them, every later write records its manager's changes
// (Update entries), so that a controller's change to a field the user
// applied shows as the conflict Kubernetes reports. Objects that were
// never applied carry none, and writes to them pay nothing for it (in
// Kubernetes every write of every object is tracked).

type fieldManagerKey struct{}

type fieldManagerInfo struct {
	name     string
	applying bool
}

// withFieldManager says who writes, for the managedFields of tracked
// objects: the request's fieldManager, else the first word of its user
// agent (as Kubernetes does).
func withFieldManager(ctx context.Context, name string, applying bool) context.Context {
	if name == "" {
		name = "unknown"
		if md, ok := metadata.FromIncomingContext(ctx); ok {
			if ua := md.Get("user-agent"); len(ua) > 0 && ua[0] != "" {
				name = strings.FieldsFunc(ua[0], func(r rune) bool { return r == '/' || r == ' ' })[0]
			}
		}
	}
	return context.WithValue(ctx, fieldManagerKey{}, fieldManagerInfo{name: name, applying: applying})
}

// trackFields records an update's changes in the new object's
// managedFields when the object is tracked (an apply made it so).
func trackFields(ctx context.Context, k *scheme.Kind, old, updated meta.Object, statusOnly bool) error {
	fm, _ := ctx.Value(fieldManagerKey{}).(fieldManagerInfo)
	if fm.applying || len(updated.GetObjectMeta().ManagedFields) == 0 {
		return nil
	}
	if fm.name == "" {
		fm = withFieldManager(ctx, "", false).Value(fieldManagerKey{}).(fieldManagerInfo)
	}
	entries, err := entriesOf(updated.GetObjectMeta().ManagedFields)
	if err != nil {
		return err
	}
	oldMap, err := toMap(old)
	if err != nil {
		return err
	}
	newMap, err := toMap(updated)
	if err != nil {
		return err
	}
	kt, _ := k8sapi.ForKind(k.APIVersion, k.Kind)
	sub := ""
	if statusOnly {
		sub = "status"
	}
	out := fieldmanager.Update(oldMap, newMap, entries, fm.name, sub, kt, k.APIVersion, meta.Now().UTC().Format(time.RFC3339))
	mf, err := managedFieldsOf(out)
	if err != nil {
		return err
	}
	updated.GetObjectMeta().ManagedFields = mf
	return nil
}

func toMap(o any) (map[string]any, error) {
	b, err := json.Marshal(o)
	if err != nil {
		return nil, status.Errorf(codes.Internal, "encode: %v", err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, status.Errorf(codes.Internal, "decode: %v", err)
	}
	return m, nil
}

func entriesOf(mf []meta.ManagedFieldsEntry) ([]fieldmanager.Entry, error) {
	var out []fieldmanager.Entry
	b, _ := json.Marshal(mf)
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, apierrors.Invalid("metadata.managedFields: Invalid value: %v", err)
	}
	return out, nil
}

func managedFieldsOf(entries []fieldmanager.Entry) ([]meta.ManagedFieldsEntry, error) {
	if len(entries) == 0 {
		return nil, nil
	}
	var out []meta.ManagedFieldsEntry
	b, _ := json.Marshal(entries)
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, status.Errorf(codes.Internal, "managedFields: %v", err)
	}
	return out, nil
}

// apply serves a Patch of type apply.
func (s *Registry) apply(ctx context.Context, k *scheme.Kind, ns string, req *apipb.PatchRequest) (*apipb.ObjectResponse, error) {
	if req.FieldManager == "" {
		return nil, apierrors.Invalid("fieldManager: Required value: is required for apply patch")
	}
	statusOnly := req.Subresource == "status"
	if req.Subresource != "" && !statusOnly {
		return nil, apierrors.Invalid("server-side apply to the %s subresource is not supported by kobune", req.Subresource)
	}
	applied, err := appliedConfiguration(k, req)
	if err != nil {
		return nil, err
	}
	if req.FieldValidation == "Strict" || req.FieldValidation == KobuneStrict {
		if err := undeclaredFields(k, applied); err != nil {
			return nil, err
		}
	}
	kt, _ := k8sapi.ForKind(k.APIVersion, k.Kind)
	ctx = withFieldManager(ctx, req.FieldManager, true)
	for attempt := 1; ; attempt++ {
		live, entries, err := liveForApply(ctx, s.store, k, ns, req.Name)
		if err != nil {
			return nil, err
		}
		if live == nil && statusOnly {
			return nil, apierrors.FromStorage(storage.ErrNotFound, k, req.Name) // an apply to status creates nothing
		}
		if statusOnly {
			applied = statusOf(applied)
		}
		merged, entries, err := fieldmanager.Apply(fieldmanager.Request{Live: live, Applied: applied, Entries: entries, Manager: req.FieldManager,
			Subresource: req.Subresource, Force: req.Force, Type: kt, APIVersion: k.APIVersion, Now: meta.Now().UTC().Format(time.RFC3339)})
		var conflict *fieldmanager.ConflictError
		if errors.As(err, &conflict) {
			return nil, status.Error(codes.Aborted, conflict.Error())
		}
		if err != nil {
			return nil, apierrors.Invalid("%s %q: the applied configuration cannot be merged: %v", k.Kind, req.Name, err)
		}
		mm, _ := merged["metadata"].(map[string]any)
		mm["managedFields"] = entries
		b, err := json.Marshal(merged)
		if err != nil {
			return nil, status.Errorf(codes.Internal, "encode: %v", err)
		}
		_, o, warnings, err := decodeRequest(ctx, s.cfg.Kinds, req.Resource, ns, b, req.FieldValidation)
		if err != nil {
			return nil, err
		}
		actx, admitted := admission.WithWarnings(ctx)
		var out []byte
		if live == nil {
			// An apply that creates is a create too: the caller needs that
			// right as well as patch's.
			if err := s.cfg.Authorize(ctx, "Create", &apipb.CreateRequest{Resource: req.Resource, Namespace: ns, Object: b}); err != nil {
				return nil, err
			}
			if req.DryRun {
				resp, err := dryRunCreate(actx, s.admission, k, o, warnings)
				if resp != nil {
					resp.Warnings = append(resp.Warnings, *admitted...)
				}
				return resp, err
			}
			out, err = s.create(actx, k, o)
			if IsAlreadyExists(err) && attempt < maxPatchAttempts {
				continue // created meanwhile: apply to it
			}
		} else {
			out, err = s.update(actx, k, o, statusOnly, req.DryRun)
			if status.Code(err) == codes.Aborted && attempt < maxPatchAttempts {
				continue
			}
		}
		if err != nil {
			return nil, err
		}
		return &apipb.ObjectResponse{Object: out, Warnings: append(warnings, *admitted...)}, nil
	}
}

// statusOf is the part of an applied configuration an apply to the status
// subresource may own: its status, under the object's identity (the rest
// is the main resource's, as kube-apiserver's status strategies keep it).
func statusOf(applied map[string]any) map[string]any {
	md, _ := applied["metadata"].(map[string]any)
	out := map[string]any{"apiVersion": applied["apiVersion"], "kind": applied["kind"], "metadata": map[string]any{"name": md["name"]}}
	if st, ok := applied["status"]; ok {
		out["status"] = st
	}
	return out
}

// undeclaredFields refuses an applied configuration that names fields the
// kind does not have, in the words of kube-apiserver's structured merge
// ("failed to create typed patch object (...): .spec.x: field not
// declared in schema"), as server-side apply under Strict answers.
func undeclaredFields(k *scheme.Kind, applied map[string]any) error {
	typos, _ := scheme.CheckFields(k, applied)
	if len(typos) == 0 {
		return nil
	}
	lines := make([]string, len(typos))
	for i, t := range typos {
		path := strings.TrimSuffix(strings.TrimPrefix(t, `unknown field "`), `"`)
		lines[i] = "." + path + ": field not declared in schema"
	}
	group, version := k.Group(), k.APIVersion
	if group != "" {
		version = strings.TrimPrefix(version, group+"/")
	}
	msg := lines[0]
	if len(lines) > 1 {
		msg = "errors:\n  " + strings.Join(lines, "\n  ")
	}
	return apierrors.WithReason(codes.InvalidArgument, apierrors.ReasonBadRequest, "failed to create typed patch object (%s/%s, Kind=%s): %s", group, version, k.Kind, msg)
}

// appliedConfiguration reads an apply's body: an object of the kind,
// named as the request, without the fields the server owns.
func appliedConfiguration(k *scheme.Kind, req *apipb.PatchRequest) (map[string]any, error) {
	var applied map[string]any
	if err := json.Unmarshal(req.Patch, &applied); err != nil {
		return nil, apierrors.Invalid("the applied configuration is not a JSON or YAML object: %v", err)
	}
	if av, _ := applied["apiVersion"].(string); av != k.APIVersion {
		return nil, apierrors.Invalid("apiVersion: Invalid value: %q: must be %q for %s", av, k.APIVersion, k.Resource)
	}
	if kd, _ := applied["kind"].(string); kd != k.Kind {
		return nil, apierrors.Invalid("kind: Invalid value: %q: must be %q for %s", kd, k.Kind, k.Resource)
	}
	md, _ := applied["metadata"].(map[string]any)
	if md == nil {
		md = map[string]any{}
		applied["metadata"] = md
	}
	if n, _ := md["name"].(string); n != "" && n != req.Name {
		return nil, apierrors.Invalid("metadata.name: Invalid value: %q: does not match the name in the request (%q)", n, req.Name)
	}
	md["name"] = req.Name
	for _, f := range []string{"resourceVersion", "managedFields", "uid", "creationTimestamp", "generation"} {
		delete(md, f) // the server's; an applied configuration does not own them
	}
	return applied, nil
}

// liveForApply is the stored object as JSON (nil when there is none) and
// its managedFields.
func liveForApply(ctx context.Context, store *storage.Store, k *scheme.Kind, ns, name string) (map[string]any, []fieldmanager.Entry, error) {
	kv, err := store.Get(ctx, storage.Key(k.Resource, ns, name))
	var live map[string]any
	var entries []fieldmanager.Entry
	switch {
	case errors.Is(err, storage.ErrNotFound):
	case err != nil:
		return nil, nil, apierrors.FromStorage(err, k, name)
	default:
		if err := json.Unmarshal(withRevision(kv.Value, kv.Revision), &live); err != nil {
			return nil, nil, status.Errorf(codes.Internal, "decode stored %s: %v", k.Kind, err)
		}
		if lm, ok := live["metadata"].(map[string]any); ok && lm["managedFields"] != nil {
			b, _ := json.Marshal(lm["managedFields"])
			if err := json.Unmarshal(b, &entries); err != nil {
				return nil, nil, status.Errorf(codes.Internal, "stored managedFields: %v", err)
			}
		}
	}
	return live, entries, nil
}
