package registry

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/api/scheme"
	"github.com/kobune/kobune/api/validation"
	"github.com/kobune/kobune/apiserver/admission"
	"github.com/kobune/kobune/apiserver/apierrors"
	"github.com/kobune/kobune/apiserver/servicealloc"
	"github.com/kobune/kobune/apiserver/storage"
	"github.com/kobune/kobune/client"
	"github.com/kobune/kobune/proto/apipb"
)

// Update implements the Update RPC: spec and metadata change, status stays.
func (s *Registry) Update(ctx context.Context, req *apipb.UpdateRequest) (*apipb.ObjectResponse, error) {
	if req.Resource == client.NamespaceFinalizeSubresource {
		return s.finalizeNamespace(ctx, req)
	}
	if sub, ok := partResources[req.Resource]; ok {
		resource, _, _ := strings.Cut(req.Resource, "/")
		r := &apipb.UpdateRequest{Resource: resource, Namespace: req.Namespace, Object: req.Object,
			FieldValidation: req.FieldValidation, DryRun: req.DryRun, FieldManager: req.FieldManager}
		return s.updateRequest(withPart(ctx, sub), r, false)
	}
	return s.updateRequest(ctx, req, false)
}

// UpdateStatus implements the UpdateStatus RPC: status changes, the rest stays.
func (s *Registry) UpdateStatus(ctx context.Context, req *apipb.UpdateRequest) (*apipb.ObjectResponse, error) {
	return s.updateRequest(ctx, req, true)
}

func (s *Registry) updateRequest(ctx context.Context, req *apipb.UpdateRequest, statusOnly bool) (*apipb.ObjectResponse, error) {
	k, o, warnings, err := decodeRequest(ctx, s.cfg.Kinds, req.Resource, req.Namespace, req.Object, req.FieldValidation)
	if err != nil {
		return nil, err
	}
	if statusOnly {
		if !k.HasStatus {
			return nil, status.Errorf(codes.InvalidArgument, "%s has no status subresource", k.Kind)
		}
	}
	ctx, admitted := admission.WithWarnings(withFieldManager(ctx, req.FieldManager, false))
	b, err := s.update(ctx, k, o, statusOnly, req.DryRun)
	if err != nil {
		return nil, err
	}
	return &apipb.ObjectResponse{Object: b, Warnings: append(warnings, *admitted...)}, nil
}

// update applies a client's object to the stored one. With an expected
// resourceVersion it is a compare-and-swap; without one it retries on
// conflict (an unconditional update, as Kubernetes allows).
func (s *Registry) update(ctx context.Context, k *scheme.Kind, in meta.Object, statusOnly, dryRun bool) ([]byte, error) {
	if dryRun {
		ctx = admission.WithDryRun(ctx)
	}
	m := in.GetObjectMeta()
	var expected int64
	if m.ResourceVersion != "" {
		rv, err := strconv.ParseInt(m.ResourceVersion, 10, 64)
		if err != nil || rv <= 0 {
			return nil, apierrors.Invalid("metadata.resourceVersion: Invalid value: %q: must be a positive integer", m.ResourceVersion)
		}
		expected = rv
	}
	key := objectKey(k, in)
	fresh := false
	for attempt := 0; ; attempt++ {
		actx, charges := admission.WithQuotaCharges(ctx, fresh)
		kv, err := s.store.Get(ctx, key)
		if err != nil {
			return nil, apierrors.FromStorage(err, k, m.Name)
		}
		if expected != 0 && kv.Revision != expected {
			return nil, apierrors.FromStorage(storage.ErrConflict, k, m.Name)
		}
		old, err := DecodeStored(k, kv.Value, kv.Revision)
		if err != nil {
			return nil, status.Errorf(codes.Internal, "decode stored %s: %v", k.Kind, err)
		}
		out, err := updateOnce(actx, s.store, s.admission, k, in, old, kv, statusOnly, dryRun, charges)
		if errors.Is(err, storage.ErrConflict) && expected == 0 {
			in = copyObject(k, in)
			continue // someone else wrote in between; try on the new state
		}
		if errors.Is(err, storage.ErrMoved) && attempt < maxQuotaRetries {
			// A quota it charges moved since it was judged: judge again, on
			// the store.
			in, fresh = copyObject(k, in), true
			continue
		}
		var claimed *storage.ClaimedError
		if errors.As(err, &claimed) {
			return nil, servicealloc.ClaimedError(in, claimed)
		}
		if err != nil {
			return nil, apierrors.FromStorage(err, k, m.Name)
		}
		return out, nil
	}
}

func copyObject(k *scheme.Kind, o meta.Object) meta.Object {
	b, _ := encodeForStorage(o)
	c, _ := k.Decode(b)
	c.GetObjectMeta().ResourceVersion = ""
	return c
}

func updateOnce(ctx context.Context, store *storage.Store, chain *admission.Chain, k *scheme.Kind, in, old meta.Object, kv storage.KV, statusOnly, dryRun bool, charges *admission.QuotaCharges) ([]byte, error) {
	sub := partOf(ctx)
	var newObj meta.Object
	var err error
	if sub != "" {
		newObj, err = mergePart(k, sub, in, old)
	} else {
		newObj, err = mergeUpdate(k, in, old, statusOnly)
	}
	if err != nil {
		return nil, err
	}
	if sub != "" {
		if err := chain.AdmitSubresource(ctx, &admission.Attributes{Operation: admission.Update, Kind: k, Object: newObj, OldObject: old, Subresource: sub}); err != nil {
			return nil, err
		}
		if !bytes.Equal(specOf(newObj), specOf(old)) {
			newObj.GetObjectMeta().Generation = old.GetObjectMeta().Generation + 1
		}
	} else if statusOnly {
		if err := chain.AdmitStatus(ctx, &admission.Attributes{Operation: admission.Update, Kind: k, Object: newObj, OldObject: old}); err != nil {
			return nil, err
		}
	} else {
		if err := chain.Admit(ctx, &admission.Attributes{Operation: admission.Update, Kind: k, Object: newObj, OldObject: old}); err != nil {
			return nil, err
		}
		if !bytes.Equal(specOf(newObj), specOf(old)) {
			newObj.GetObjectMeta().Generation = old.GetObjectMeta().Generation + 1
		}
	}
	if err := trackFields(ctx, k, old, newObj, statusOnly); err != nil {
		return nil, err
	}
	b, err := encodeForStorage(newObj)
	if err != nil {
		return nil, status.Errorf(codes.Internal, "encode %s: %v", k.Kind, err)
	}
	if len(b) > MaxObjectBytes {
		return nil, TooLarge(len(b))
	}
	if dryRun || (bytes.Equal(b, kv.Value) && !kv.Stale) {
		// Nothing changed: no write, no new revision (as in Kubernetes). A
		// value under an old encryption key is written again, so that
		// rewriting every object rotates the key.
		return encodeWithRevision(newObj, kv.Revision)
	}
	nm := newObj.GetObjectMeta()
	if nm.DeletionTimestamp != nil && len(nm.Finalizers) == 0 && !strategyFor(k).awaitingTermination(newObj) {
		// The last finalizer is gone: the deletion that was waiting completes.
		rev, err := store.Delete(ctx, kv.Key, kv.Revision)
		if err != nil {
			return nil, err
		}
		return encodeWithRevision(newObj, rev)
	}
	also, err := alsoWrites(charges)
	if err != nil {
		return nil, status.Errorf(codes.Internal, "encode quota charges: %v", err)
	}
	rev, err := store.Update(ctx, kv.Key, b, kv.Revision, also...)
	if err != nil {
		return nil, err
	}
	return withRevision(b, rev), nil
}

// mergeUpdate builds the object to store from the client's object and the
// stored one: the server keeps what it owns (uid, creationTimestamp,
// generation, deletion fields), and status or spec stays as stored
// depending on which subresource is written.
func mergeUpdate(k *scheme.Kind, in, old meta.Object, statusOnly bool) (meta.Object, error) {
	im, om := in.GetObjectMeta(), old.GetObjectMeta()
	if im.UID != "" && im.UID != om.UID {
		return nil, status.Errorf(codes.Aborted, "Precondition failed: UID in precondition: %s, UID in object meta: %s", im.UID, om.UID)
	}
	if statusOnly {
		out := copyObject(k, old)
		copyStatus(out, in)
		m := out.GetObjectMeta()
		m.ResourceVersion = om.ResourceVersion
		if im.ManagedFields != nil {
			m.ManagedFields = im.ManagedFields // as on the main resource: the writer's own record (an apply's) wins
		}
		// Labels and annotations come with a status write when the kind's
		// strategy says so (namespaces), or when the writer names the
		// resourceVersion it read (a patch of the status, a client's
		// fresh copy: kube-apiserver's status strategies keep metadata
		// changes, and a stale copy is a conflict then); an unconditional
		// write (a controller's) keeps the stored ones, so that it never
		// takes back a label. A Deployment's status keeps its labels, as
		// in Kubernetes.
		if fresh := im.ResourceVersion != "" && im.ResourceVersion == om.ResourceVersion; strategyFor(k).statusLabels || fresh {
			m.Labels, m.Annotations = im.Labels, im.Annotations
			if k.Kind == "Deployment" && k.Custom == nil {
				m.Labels = om.Labels
			}
			if k.Default != nil {
				k.Default(out) // labels the kind always carries (a namespace's name)
			}
			mp := validation.NewPath("metadata")
			errs := append(validation.ValidateLabels(m.Labels, mp.Child("labels")), validation.ValidateAnnotations(m.Annotations, mp.Child("annotations"))...)
			if len(errs) > 0 {
				return nil, admission.InvalidError(fmt.Sprintf("%s %q is invalid: %v", k.Kind, m.Name, errs.ToError()), errs)
			}
		}
		return out, nil
	}
	out := in
	m := out.GetObjectMeta()
	m.UID = om.UID
	m.CreationTimestamp = om.CreationTimestamp
	m.Generation = om.Generation
	m.DeletionTimestamp = om.DeletionTimestamp
	m.DeletionGracePeriodSeconds = om.DeletionGracePeriodSeconds
	if m.DeletionTimestamp != nil {
		for _, f := range m.Finalizers {
			if !om.HasFinalizer(f) {
				return nil, status.Errorf(codes.InvalidArgument, "metadata.finalizers: Forbidden: no new finalizers can be added if the object is being deleted, found new finalizer %q", f)
			}
		}
	}
	if k.HasStatus {
		copyStatus(out, old)
	}
	if prepare := strategyFor(k).prepareUpdate; prepare != nil {
		prepare(out, old)
	}
	if m.GenerateName == "" {
		m.GenerateName = om.GenerateName
	}
	if m.ManagedFields == nil {
		m.ManagedFields = om.ManagedFields // the server's record: kept unless the writer sends its own
	}
	return out, nil
}
