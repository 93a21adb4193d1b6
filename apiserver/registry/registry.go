package registry

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/flowcontrol"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/api/scheduling"
	"github.com/kobune/kobune/api/scheme"
	"github.com/kobune/kobune/apiserver/admission"
	"github.com/kobune/kobune/apiserver/apierrors"
	"github.com/kobune/kobune/apiserver/storage"
	"github.com/kobune/kobune/proto/apipb"
)

// MaxObjectBytes is the largest object the API stores (etcd's own default
// request limit, which Kubernetes also inherits).
const MaxObjectBytes = 1536 * 1024

// CreateFunc creates an object that is not stored: a review answered on
// the spot, a token issued (kube-apiserver's TokenREST and
// SubjectAccessReviewREST).
type CreateFunc func(ctx context.Context, req *apipb.CreateRequest) (*apipb.ObjectResponse, error)

// Config is what the registry is built from.
type Config struct {
	Store *storage.Store
	// Admission runs on every create, update and delete (the chain's order:
	// apiserver/admissionchain.go).
	Admission *admission.Chain
	// Namespaces and Quotas are the caches the admission chain reads too
	// (NewNamespaceCache, NewQuotaCache); Run keeps them current.
	Namespaces *NamespaceCache
	Quotas     *QuotaCache
	// Creators answer creates of resources that are not stored, by resource.
	Creators map[string]CreateFunc
	// Kinds are the kinds served: the built-in ones and those
	// CustomResourceDefinitions add (nil: the built-in ones).
	Kinds *scheme.Kinds
	// Authorize is asked when an apply turns out to create the object:
	// the caller needs create's right as well as patch's.
	Authorize func(ctx context.Context, verb string, req any) error
	// BookmarkInterval is how often watches that allow bookmarks get one.
	BookmarkInterval time.Duration
	// EtcdVersion is reported by the Version verb.
	EtcdVersion string
	// DescribeNoSpace says what a full etcd means, when a write of the
	// server's own objects fails on it.
	DescribeNoSpace func() string
	Logf            func(format string, args ...any)
}

// Registry is the API's verbs over storage: every create, read, update,
// delete, watch, patch and apply, for every kind, goes through it, and the
// per-kind differences are strategies (strategy.go). It mirrors
// kube-apiserver's generic registry (k8s.io/apiserver/pkg/registry/generic)
// with the kinds' strategies (pkg/registry/<group>/<kind>/strategy.go).
type Registry struct {
	cfg        Config
	store      *storage.Store
	admission  *admission.Chain
	namespaces *NamespaceCache
	quotas     *QuotaCache
	// nsCleanup empties and removes deleted namespaces.
	nsCleanup *namespaceCleanup
}

// New returns a registry; Run keeps its caches current and empties
// deleted namespaces.
func New(cfg Config) *Registry {
	r := &Registry{cfg: cfg, store: cfg.Store, admission: cfg.Admission, namespaces: cfg.Namespaces, quotas: cfg.Quotas}
	r.nsCleanup = &namespaceCleanup{r: r, wake: make(chan struct{}, 1)}
	return r
}

// Run follows namespaces and quotas and empties terminating namespaces
// until ctx ends.
func (s *Registry) Run(ctx context.Context) {
	var wg sync.WaitGroup
	wg.Add(3)
	go func() { defer wg.Done(); s.namespaces.run(ctx) }()
	go func() { defer wg.Done(); s.quotas.run(ctx) }()
	go func() { defer wg.Done(); s.nsCleanup.run(ctx) }()
	wg.Wait()
}

// SystemNamespaces are the namespaces the server creates and never
// deletes: kube-node-lease is where agents keep their heartbeat Leases.
var SystemNamespaces = []string{"default", "kube-system", "kube-public", "kube-node-lease"}

// EnsureSystemObjects creates the system namespaces, the two system
// PriorityClasses and the FlowSchemas and PriorityLevelConfigurations
// Kubernetes has built in. Only what is missing is
// written: on a full database (etcd's NOSPACE alarm) the server must still
// start and serve reads.
func EnsureSystemObjects(ctx context.Context, s *Registry) error {
	k, _ := scheme.ByResource("namespaces")
	for _, name := range SystemNamespaces {
		ns := &core.Namespace{ObjectMeta: meta.ObjectMeta{Name: name}}
		ns.TypeMeta = meta.TypeMeta{APIVersion: "v1", Kind: "Namespace"}
		if err := s.Ensure(ctx, k, ns); err != nil {
			return fmt.Errorf("create namespace %s: %w", name, err)
		}
	}
	pk, _ := scheme.ByResource("priorityclasses")
	for name, value := range map[string]int32{"system-cluster-critical": 2_000_000_000, "system-node-critical": 2_000_001_000} {
		pc := &scheduling.PriorityClass{ObjectMeta: meta.ObjectMeta{Name: name}, Value: value,
			Description: "Used for system critical pods that must not be moved from their current node."}
		if err := s.Ensure(ctx, pk, pc); err != nil {
			return fmt.Errorf("create priority class %s: %w", name, err)
		}
	}
	// API Priority and Fairness' mandatory and suggested configuration:
	// created when missing (a deleted one comes back at the next start),
	// never rewritten, so that an operator's edit stays.
	levels, schemas := flowcontrol.Bootstrap()
	lk, _ := scheme.ByResource("prioritylevelconfigurations")
	for _, pl := range levels {
		if err := s.Ensure(ctx, lk, pl); err != nil {
			return fmt.Errorf("create priority level %s: %w", pl.Name, err)
		}
	}
	fk, _ := scheme.ByResource("flowschemas")
	for _, fs := range schemas {
		if err := s.Ensure(ctx, fk, fs); err != nil {
			return fmt.Errorf("create flow schema %s: %w", fs.Name, err)
		}
	}
	return nil
}

// Ensure creates o unless it exists; a full database is logged, not fatal.
func (s *Registry) Ensure(ctx context.Context, k *scheme.Kind, o meta.Object) error {
	m := o.GetObjectMeta()
	if _, err := s.store.Get(ctx, storage.Key(k.Resource, m.Namespace, m.Name)); err == nil {
		return nil
	}
	_, err := s.create(ctx, k, o)
	switch {
	case err == nil, IsAlreadyExists(err):
		return nil
	case storage.IsNoSpace(err):
		s.cfg.Logf("kobune-apiserver: cannot create %s %s: %s", k.Kind, m.Name, s.cfg.DescribeNoSpace())
		return nil
	}
	return err
}

// ListStored reads every stored object of a cluster-scoped resource.
func ListStored[T meta.Object](ctx context.Context, store *storage.Store, resource string) ([]T, error) {
	return ListStoredIn[T](ctx, store, resource, "")
}

// ListStoredIn reads every stored object of a resource in a namespace
// ("": all, or a cluster-scoped resource), each with its resourceVersion.
func ListStoredIn[T meta.Object](ctx context.Context, store *storage.Store, resource, namespace string) ([]T, error) {
	kvs, _, err := store.List(ctx, storage.ListPrefix(resource, namespace))
	if err != nil {
		return nil, err
	}
	k, _ := scheme.ByResource(resource)
	out := make([]T, 0, len(kvs))
	for _, kv := range kvs {
		o, err := DecodeStored(k, kv.Value, kv.Revision)
		if err != nil {
			return nil, err
		}
		out = append(out, o.(T))
	}
	return out, nil
}

// CreateObject admits and stores an object of the server's own (the
// kubernetes Service, the bootstrap RBAC policy): the same path as a
// client's create, without a request.
func (s *Registry) CreateObject(ctx context.Context, k *scheme.Kind, o meta.Object) ([]byte, error) {
	return s.create(ctx, k, o)
}

// UpdateObject admits and stores a new version of an object of the
// server's own; its resourceVersion is the precondition.
func (s *Registry) UpdateObject(ctx context.Context, k *scheme.Kind, o meta.Object) ([]byte, error) {
	return s.update(ctx, k, o, false, false)
}

// UpdateObjectStatus writes the status of an object of the server's own
// making or following (a CustomResourceDefinition's conditions); its
// resourceVersion is the precondition.
func (s *Registry) UpdateObjectStatus(ctx context.Context, k *scheme.Kind, o meta.Object) ([]byte, error) {
	return s.update(ctx, k, o, true, false)
}

// CreateOrReplace creates o, or replaces the stored one with it.
func (s *Registry) CreateOrReplace(ctx context.Context, k *scheme.Kind, o meta.Object) error {
	_, err := s.create(ctx, k, o)
	if !IsAlreadyExists(err) {
		return err
	}
	m := o.GetObjectMeta()
	live, err := s.store.Get(ctx, storage.Key(k.Resource, m.Namespace, m.Name))
	if err != nil {
		return err
	}
	have, err := DecodeStored(k, live.Value, live.Revision)
	if err != nil {
		return err
	}
	// The failed create gave o a new UID: the update keeps the stored
	// object's identity (a UID that differs is refused as a precondition).
	hm := have.GetObjectMeta()
	m.ResourceVersion, m.UID, m.CreationTimestamp = strconv.FormatInt(live.Revision, 10), hm.UID, hm.CreationTimestamp
	_, err = s.update(ctx, k, o, false, false)
	return err
}

// GetStored reads one object of resource from storage.
func GetStored[T meta.Object](ctx context.Context, store *storage.Store, resource, ns, name string) (T, error) {
	var zero T
	k, _ := scheme.ByResource(resource)
	kv, err := store.Get(ctx, storage.Key(resource, ns, name))
	if err != nil {
		return zero, apierrors.FromStorage(err, k, name)
	}
	o, err := DecodeStored(k, kv.Value, kv.Revision)
	if err != nil {
		return zero, err
	}
	return o.(T), nil
}
