package registry

import (
	"context"
	"errors"
	"slices"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/flowcontrol"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/api/scheme"
	"github.com/kobune/kobune/apiserver/admission"
	"github.com/kobune/kobune/apiserver/apierrors"
	"github.com/kobune/kobune/apiserver/storage"
	"github.com/kobune/kobune/proto/apipb"
)

// Finalizers the API server adds for the propagation policies; the garbage
// collector (kobune-controller) removes them once it has handled the
// dependents, as in Kubernetes.
const (
	FinalizerOrphan     = "orphan"
	FinalizerForeground = "foregroundDeletion"
)

type deleteOptions struct {
	uid, resourceVersion string
	grace                *int64
	propagation          string
	dryRun               bool
}

// Delete implements the Delete RPC.
func (s *Registry) Delete(ctx context.Context, req *apipb.DeleteRequest) (*apipb.ObjectResponse, error) {
	k, ok := s.cfg.Kinds.ByResource(req.Resource)
	if !ok {
		return nil, apierrors.Invalid("unknown resource %q (see kobectl api-resources)", req.Resource)
	}
	opts, err := readDeleteOptions(req)
	if err != nil {
		return nil, err
	}
	if err := undeletable(k, req.Name); err != nil {
		return nil, err
	}
	ns := req.Namespace
	if !k.Namespaced {
		ns = ""
	} else if ns == "" {
		ns = "default"
	}
	b, err := s.delete(ctx, k, ns, req.Name, opts)
	if err != nil {
		return nil, err
	}
	return &apipb.ObjectResponse{Object: b}, nil
}

// CheckDeleteOptions refuses options no delete takes, so that a
// collection delete refuses them before it deletes anything.
func CheckDeleteOptions(req *apipb.DeleteRequest) error {
	_, err := readDeleteOptions(req)
	return err
}

// readDeleteOptions reads and checks a delete's options.
func readDeleteOptions(req *apipb.DeleteRequest) (deleteOptions, error) {
	opts := deleteOptions{propagation: req.PropagationPolicy, grace: req.GracePeriodSeconds, dryRun: req.DryRun}
	if p := req.Preconditions; p != nil {
		opts.uid, opts.resourceVersion = p.Uid, p.ResourceVersion
	}
	switch opts.propagation {
	case "":
		opts.propagation = "Background"
	case "Background", "Foreground", "Orphan":
	default:
		return opts, apierrors.Invalid("propagationPolicy: Unsupported value: %q: supported values: Background, Foreground, Orphan", opts.propagation)
	}
	if opts.grace != nil && *opts.grace < 0 {
		return opts, apierrors.Invalid("gracePeriodSeconds: Invalid value: %d: must be greater than or equal to 0", *opts.grace)
	}
	return opts, nil
}

// delete removes an object, or marks it for deletion when something must
// happen first: finalizers, or a pod's graceful termination on its node.
func (s *Registry) delete(ctx context.Context, k *scheme.Kind, ns, name string, opts deleteOptions) ([]byte, error) {
	if opts.dryRun {
		ctx = admission.WithDryRun(ctx)
	}
	key := storage.Key(k.Resource, ns, name)
	for {
		kv, err := s.store.Get(ctx, key)
		if err != nil {
			return nil, apierrors.FromStorage(err, k, name)
		}
		o, err := DecodeStored(k, kv.Value, kv.Revision)
		if err != nil {
			return nil, status.Errorf(codes.Internal, "decode stored %s: %v", k.Kind, err)
		}
		m := o.GetObjectMeta()
		if opts.uid != "" && opts.uid != m.UID {
			return nil, status.Errorf(codes.Aborted, "Precondition failed: UID in precondition: %s, UID in object meta: %s", opts.uid, m.UID)
		}
		if opts.resourceVersion != "" && opts.resourceVersion != m.ResourceVersion {
			return nil, apierrors.FromStorage(storage.ErrConflict, k, name)
		}
		if err := s.admission.AdmitDelete(ctx, k, o); err != nil {
			return nil, err
		}
		if opts.dryRun {
			markDeleted(k, o, opts)
			return encodeWithRevision(o, kv.Revision)
		}
		var out meta.Object
		var rev int64
		if del := strategyFor(k).delete; del != nil {
			out, rev, err = del(s, ctx, k, o, kv.Revision)
		} else {
			out, rev, err = deleteOnce(ctx, s.store, k, o, kv, opts)
		}
		if errors.Is(err, storage.ErrConflict) && opts.resourceVersion == "" {
			continue
		}
		if err != nil {
			return nil, apierrors.FromStorage(err, k, name)
		}
		return encodeWithRevision(out, rev)
	}
}

// markDeleted changes o as a delete with opts does — the propagation
// policy's finalizer, the deletion timestamp and grace period — and says
// whether it changed, and whether o goes now (nothing left to wait for) or
// stays, marked, until its finalizers or its node are done.
func markDeleted(k *scheme.Kind, o meta.Object, opts deleteOptions) (changed, goesNow bool) {
	m := o.GetObjectMeta()
	st := strategyFor(k)
	grace := int64(0) // most objects go at once, as in Kubernetes
	if st.gracePeriod != nil {
		grace = st.gracePeriod(o, opts.grace)
	}
	switch opts.propagation {
	case "Orphan":
		changed = addFinalizer(m, FinalizerOrphan) || changed
	case "Foreground":
		changed = addFinalizer(m, FinalizerForeground) || changed
	}
	if m.DeletionTimestamp == nil || (grace < deref(m.DeletionGracePeriodSeconds)) {
		// First deletion request, or a shorter grace period than before.
		at := meta.NewTime(time.Now().Add(time.Duration(grace) * time.Second))
		m.DeletionTimestamp = &at
		m.DeletionGracePeriodSeconds = &grace
		changed = true
		if _, isPod := o.(*core.Pod); isPod && k.Custom == nil {
			m.Generation++ // a pod's graceful deletion is a change of its spec's (Kubernetes 1.35)
		}
	}
	if ns, ok := o.(*core.Namespace); ok {
		ns.Status.Phase = core.NamespaceTerminating // its contents go first
		return changed, false
	}
	return changed, len(m.Finalizers) == 0 && !st.awaitingTermination(o)
}

func deleteOnce(ctx context.Context, store *storage.Store, k *scheme.Kind, o meta.Object, kv storage.KV, opts deleteOptions) (meta.Object, int64, error) {
	changed, goesNow := markDeleted(k, o, opts)
	if goesNow {
		rev, err := store.Delete(ctx, kv.Key, kv.Revision)
		return o, rev, err
	}
	if !changed {
		return o, kv.Revision, nil
	}
	b, err := encodeForStorage(o)
	if err != nil {
		return nil, 0, err
	}
	rev, err := store.Update(ctx, kv.Key, b, kv.Revision)
	return o, rev, err
}

func addFinalizer(m *meta.ObjectMeta, f string) bool {
	if m.HasFinalizer(f) {
		return false
	}
	m.Finalizers = append(m.Finalizers, f)
	return true
}

func deref(p *int64) int64 {
	if p == nil {
		return 1<<62 - 1
	}
	return *p
}

// undeletable refuses to delete what the cluster cannot run without, as
// Kubernetes does: the system namespaces (NamespaceLifecycle) and the
// system-* PriorityClasses (the Priority admission plugin); and the
// mandatory FlowSchemas and priority levels exempt and catch-all, which
// Kubernetes re-creates after a delete and Kobune keeps (a request no
// schema matches would otherwise run unlimited; docs/differences.md).
func undeletable(k *scheme.Kind, name string) error {
	switch {
	case k.Resource == "namespaces" && slices.Contains(SystemNamespaces, name):
		return status.Errorf(codes.PermissionDenied, "namespaces %q is forbidden: this namespace may not be deleted", name)
	case k.Resource == "priorityclasses" && strings.HasPrefix(name, "system-"):
		return status.Errorf(codes.PermissionDenied, "priorityclasses.scheduling.k8s.io %q is forbidden: the system priority class %s cannot be deleted", name, name)
	case (k.Resource == "flowschemas" || k.Resource == "prioritylevelconfigurations") && (name == flowcontrol.NameExempt || name == flowcontrol.NameCatchAll):
		return status.Errorf(codes.PermissionDenied, "%s.flowcontrol.apiserver.k8s.io %q is forbidden: the mandatory API Priority and Fairness object %s cannot be deleted; edit it instead", k.Resource, name, name)
	}
	return nil
}
