package authorization

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path"
	"reflect"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/api/rbac"
	"github.com/kobune/kobune/api/scheme"
	"github.com/kobune/kobune/api/selector"
	"github.com/kobune/kobune/apiserver/authorizer"
	"github.com/kobune/kobune/apiserver/registry"
	"github.com/kobune/kobune/apiserver/request"
	"github.com/kobune/kobune/apiserver/storage"
	"github.com/kobune/kobune/proto/apipb"
)

// apiserverUser is who the API server's own writes come from (bootstrap
// objects, namespace cleanup), as kube-apiserver's loopback client.
var apiserverUser = request.UserInfo{Name: "system:apiserver", Groups: []string{request.SystemPrivilegedGroup, request.AllAuthenticated}}

// AttributesOf is what a call asks: verb, resource, subresource, namespace
// and name (for the authorizer and the audit log), and the object it
// carries.
func AttributesOf(method string, req any) (a request.Attributes, obj []byte) {
	name := request.MetadataName
	// A list or watch of one object (the field selector metadata.name=X)
	// names it, as in Kubernetes: the node authorizer lets an agent watch
	// one Secret it needs, never all of them.
	byField := func(fs string) string {
		if fs == "" {
			return ""
		}
		sel, err := selector.ParseFields(fs)
		if err != nil {
			return ""
		}
		n, _ := sel.RequiresExactMatch("metadata.name")
		return n
	}
	switch q := req.(type) {
	case *apipb.CreateRequest:
		a = request.Attributes{Verb: "create", Resource: q.Resource, Namespace: q.Namespace, Name: name(q.Object)}
		obj = q.Object
		if res, sub, ok := strings.Cut(q.Resource, "/"); ok { // serviceaccounts/token
			a.Resource, a.Subresource = res, sub
			if a.Namespace == "" {
				a.Namespace = "default"
			}
		}
	case *apipb.GetRequest:
		a = request.Attributes{Verb: "get", Resource: q.Resource, Namespace: q.Namespace, Name: q.Name, Subresource: q.Subresource}
	case *apipb.ListRequest:
		a = request.Attributes{Verb: "list", Resource: q.Resource, Namespace: q.Namespace, Name: byField(q.FieldSelector)}
	case *apipb.UpdateRequest:
		a = request.Attributes{Verb: "update", Resource: q.Resource, Namespace: q.Namespace, Name: name(q.Object)}
		obj = q.Object
		if method == "UpdateStatus" {
			a.Subresource = "status"
		}
		if res, sub, ok := strings.Cut(q.Resource, "/"); ok { // namespaces/finalize
			a.Resource, a.Subresource = res, sub
		}
	case *apipb.PatchRequest:
		a = request.Attributes{Verb: "patch", Resource: q.Resource, Namespace: q.Namespace, Name: q.Name, Subresource: q.Subresource}
		obj = q.Patch
	case *apipb.DeleteRequest:
		a = request.Attributes{Verb: "delete", Resource: q.Resource, Namespace: q.Namespace, Name: q.Name}
	case *apipb.WatchRequest:
		a = request.Attributes{Verb: "watch", Resource: q.Resource, Namespace: q.Namespace, Name: byField(q.FieldSelector)}
	case *apipb.BindRequest:
		a = request.Attributes{Verb: "create", Resource: "pods", Namespace: q.Namespace, Name: q.Name, Subresource: "binding"}
	case *apipb.PodLogsRequest:
		a = request.Attributes{Verb: "get", Resource: "pods", Namespace: q.Namespace, Name: q.Name, Subresource: "log"}
	case *apipb.PodExecInput:
		a = request.Attributes{Verb: "create", Resource: "pods", Namespace: q.Namespace, Name: q.Name, Subresource: "exec"}
	case *apipb.PodAttachRequest:
		a = request.Attributes{Verb: "create", Resource: "pods", Namespace: q.Namespace, Name: q.Name, Subresource: "attach"}
	case *apipb.PodPortForwardData:
		a = request.Attributes{Verb: "create", Resource: "pods", Namespace: q.Namespace, Name: q.Name, Subresource: "portforward"}
	case *apipb.DiscoveryRequest:
		// What /apis tells over REST: system:discovery lets everyone read it.
		a = request.Attributes{Verb: "get", Path: "/apis"}
	case *apipb.ServicePathRequest:
		// Read from the node's ruleset through the API server: Kubernetes'
		// nodes/proxy, which only cluster-admin has by default.
		a = request.Attributes{Verb: "get", Resource: "nodes", Name: q.Node, Subresource: "proxy"}
	case *apipb.ProxyRequest:
		// pods/proxy and services/proxy, with the verb of the request's
		// method as Kubernetes' request info reads it.
		_, name, _, _ := request.SplitSchemeNamePort(q.Name)
		a = request.Attributes{Verb: proxyVerb(q.Method), Resource: q.Resource, Namespace: q.Namespace, Name: name, Subresource: "proxy"}
	case *apipb.NodeStatsRequest:
		// A node's raw usage: nodes/proxy, as /api/v1/nodes/N/proxy/stats/summary.
		a = request.Attributes{Verb: "get", Resource: "nodes", Name: q.Node, Subresource: "proxy"}
	case *apipb.MetricsRequest:
		verb := "list"
		if q.Name != "" {
			verb = "get"
		}
		ns := q.Namespace
		if q.Resource == "nodes" {
			ns = ""
		}
		// Not a stored kind: its group is set here, and the lookup below
		// must not take it for the core pods or nodes.
		return request.Attributes{Verb: verb, APIGroup: "metrics.k8s.io", APIVersion: "v1beta1", Resource: q.Resource, Namespace: ns, Name: q.Name}, nil
	default:
		a = request.Attributes{Verb: "get", Path: "/" + strings.ToLower(method)} // Version: /version
	}
	if k, ok := scheme.ByResource(a.Resource); ok {
		if !k.Namespaced {
			a.Namespace = ""
		} else if a.Namespace == "" && a.Name != "" && a.Verb != "list" && a.Verb != "watch" {
			a.Namespace = "default" // as the handlers default it
		}
		if g, v, found := strings.Cut(k.APIVersion, "/"); found {
			a.APIGroup, a.APIVersion = g, v
		} else {
			a.APIVersion = k.APIVersion
		}
	} else if plural, group, ok := strings.Cut(a.Resource, "."); ok && group != "" {
		// A custom kind's resource ("widgets.example.com"): RBAC rules
		// name its group and plural, as for any kind.
		a.Resource, a.APIGroup = plural, group
	} else if r, ok := registry.Reviews[a.Resource]; ok {
		a.APIGroup, a.APIVersion = r.Group, "v1"
		if !r.Namespaced {
			a.Namespace = ""
		}
	}
	return a, obj
}

// New builds the chain --authorization-mode names. The default
// is Node,RBAC with client certificates (--client-ca-file) and AlwaysAllow
// without (nobody could be told apart).
func New(cfg Config) (*Authorization, error) {
	s := &Authorization{store: cfg.Store, logf: cfg.Logf}
	mode := cfg.Mode
	if mode == "" {
		mode = "AlwaysAllow"
		if cfg.ClientCertificates {
			mode = "Node,RBAC"
		}
	}
	modes, err := authorizer.ParseModes(mode)
	if err != nil {
		return nil, err
	}
	chain := authorizer.Union{authorizer.Privileged{}}
	for _, m := range modes {
		switch m {
		case "AlwaysAllow":
			s.authz = authorizer.AlwaysAllow{}
			return s, nil
		case "Node":
			s.node = authorizer.NewNode()
			s.node.Fallback = s.nodeFallback
			chain = append(chain, s.node)
		case "RBAC":
			s.rbac = authorizer.NewRBAC()
			chain = append(chain, s.rbac)
		}
	}
	s.authz = chain
	s.synced = make(chan struct{})
	return s, nil
}

// Authorize decides a call, waiting (a bounded moment) for the caches of
// roles and pods to be filled at start, so that the first calls after a
// restart are not refused.
func (s *Authorization) Authorize(ctx context.Context, method string, req any) error {
	a, _ := AttributesOf(method, req)
	return s.AuthorizeAttributes(ctx, &a)
}

// AuthorizeAttributes is Authorize for attributes a front end read from a
// URL alone (the REST front end asks it before it reads an anonymous
// write's body).
func (s *Authorization) AuthorizeAttributes(ctx context.Context, a *request.Attributes) error {
	if err := s.Wait(ctx); err != nil {
		return err
	}
	u := request.UserFrom(ctx)
	d, reason := s.authz.Authorize(u, a)
	if d == authorizer.Allow {
		return nil
	}
	what := a.Resource
	if a.APIGroup != "" {
		what += "." + a.APIGroup
	}
	if a.Name != "" {
		what += fmt.Sprintf(" %q", a.Name)
	}
	if a.Path != "" {
		what = a.Path
	}
	msg := fmt.Sprintf("%s is forbidden: %s", what, authorizer.Describe(u, a))
	if reason != "" {
		msg += ": " + reason
	}
	if strings.HasPrefix(u.Name, "system:") {
		// A component refused is a missing rule in its role, or an attack:
		// worth a line either way.
		s.logf("kobune-apiserver: RBAC DENY %s", msg)
	}
	return status.Error(codes.PermissionDenied, msg)
}

// Wait waits (a bounded moment) for the authorizer's caches.
func (s *Authorization) Wait(ctx context.Context) error {
	if s.synced == nil {
		return nil
	}
	select {
	case <-s.synced:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(30 * time.Second):
		return status.Error(codes.Unavailable, "the authorizer has not loaded the roles and bindings yet (is etcd healthy?); try again")
	}
}

// nodeFallback answers a graph miss from storage: a pod bound to node in
// the request's namespace names the object (or, for a PersistentVolume,
// a claim such a pod names is bound to it). The graph follows a watch, so
// a pod bound a moment ago may not be in it yet.
func (s *Authorization) nodeFallback(node string, a *request.Attributes) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	pk, _ := scheme.ByResource("pods")
	namesIt := func(ns, kind, name string) bool {
		kvs, _, err := s.store.List(ctx, storage.ListPrefix("pods", ns))
		if err != nil {
			return false
		}
		for _, kv := range kvs {
			o, err := registry.DecodeStored(pk, kv.Value, kv.Revision)
			if err != nil {
				continue
			}
			if p := o.(*core.Pod); p.Spec.NodeName == node && authorizer.PodNames(p, kind, name) {
				return true
			}
		}
		return false
	}
	switch a.Resource {
	case "secrets":
		return namesIt(a.Namespace, "Secret", a.Name)
	case "configmaps":
		return namesIt(a.Namespace, "ConfigMap", a.Name)
	case "persistentvolumeclaims":
		return namesIt(a.Namespace, "PersistentVolumeClaim", a.Name)
	case "serviceaccounts":
		return namesIt(a.Namespace, "ServiceAccount", a.Name)
	case "persistentvolumes":
		pv, err := registry.GetStored[*core.PersistentVolume](ctx, s.store, "persistentvolumes", "", a.Name)
		if err != nil {
			return false
		}
		ref := pv.Spec.ClaimRef
		return ref != nil && namesIt(ref.Namespace, "PersistentVolumeClaim", ref.Name)
	}
	return false
}

// Run keeps the RBAC objects and the node graph current until ctx ends;
// Wait returns once every cache has listed.
func (s *Authorization) Run(ctx context.Context) {
	if s.synced == nil {
		return
	}
	feeds := append(s.rbacFeeds(ctx), s.nodeFeeds(ctx)...)
	var wg sync.WaitGroup
	defer wg.Wait()
	remaining := make(chan struct{}, len(feeds))
	for _, f := range feeds {
		wg.Add(1)
		go func() {
			defer wg.Done()
			first := true
			f(func() {
				if first {
					first = false
					remaining <- struct{}{}
				}
			})
		}()
	}
	for range feeds {
		select {
		case <-remaining:
		case <-ctx.Done():
			return
		}
	}
	close(s.synced)
}

// A feed follows one resource into a cache and calls ready once it has
// listed.
type feed func(ready func())

// rbacFeeds keep the RBAC authorizer's roles and bindings.
func (s *Authorization) rbacFeeds(ctx context.Context) []feed {
	if s.rbac == nil {
		return nil
	}
	var feeds []feed
	for _, res := range []string{"roles", "clusterroles", "rolebindings", "clusterrolebindings"} {
		feeds = append(feeds, func(ready func()) {
			registry.Follow(ctx, s.store, res, nil, func(objs []meta.Object) {
				all := make([]any, len(objs))
				for i, o := range objs {
					all[i] = o
				}
				s.rbac.Replace(res, all)
				ready()
			}, func(ev storage.Event, o meta.Object) {
				if o == nil {
					ns, name := keyParts(ev.Key, res)
					s.rbac.Delete(res, ns, name)
					return
				}
				s.rbac.Set(o)
			})
		})
	}
	return feeds
}

// nodeFeeds keep the node authorizer's graph: pods bound to nodes and
// the claims they name.
func (s *Authorization) nodeFeeds(ctx context.Context) []feed {
	if s.node == nil {
		return nil
	}
	// Only bound pods add edges, and a pod never leaves its node: the
	// graph skips decoding pods that name none (most of a create storm's
	// events).
	bound := func(v []byte) bool { return bytes.Contains(v, []byte(`"nodeName":`)) }
	pods := func(ready func()) {
		registry.Follow(ctx, s.store, "pods", bound, func(objs []meta.Object) {
			s.node.ResetGraph()
			for _, o := range objs {
				s.node.SetPod(o.(*core.Pod))
			}
			ready()
		}, func(ev storage.Event, o meta.Object) {
			if o == nil {
				ns, name := keyParts(ev.Key, "pods")
				s.node.DeletePod(ns, name)
				return
			}
			s.node.SetPod(o.(*core.Pod))
		})
	}
	claims := func(ready func()) {
		registry.Follow(ctx, s.store, "persistentvolumeclaims", nil, func(objs []meta.Object) {
			for _, o := range objs {
				c := o.(*core.PersistentVolumeClaim)
				s.node.SetClaim(c.Namespace, c.Name, c.Spec.VolumeName)
			}
			ready()
		}, func(ev storage.Event, o meta.Object) {
			if o == nil {
				ns, name := keyParts(ev.Key, "persistentvolumeclaims")
				s.node.SetClaim(ns, name, "")
				return
			}
			c := o.(*core.PersistentVolumeClaim)
			s.node.SetClaim(c.Namespace, c.Name, c.Spec.VolumeName)
		})
	}
	return []feed{pods, claims}
}

// keyParts is the namespace and name in an object's storage key.
func keyParts(key, resource string) (string, string) {
	k, _ := scheme.ByResource(resource)
	name := path.Base(key)
	if !k.Namespaced {
		return "", name
	}
	return path.Base(path.Dir(key)), name
}

// EnsureBootstrapPolicy creates the bootstrap roles and bindings, and puts
// back the ones that still carry rbac.authorization.kubernetes.io/autoupdate
// "true" when they differ from what this version ships (an aggregated
// role's rules are the aggregation controller's: only its aggregationRule
// is put back), as kube-apiserver does at every start.
func EnsureBootstrapPolicy(ctx context.Context, r *registry.Registry, store *storage.Store, logf func(string, ...any), describeNoSpace func() string) error {
	s := bootstrapper{registry: r, store: store, logf: logf, describeNoSpace: describeNoSpace}
	ctx = request.WithUser(ctx, apiserverUser)
	crk, _ := scheme.ByResource("clusterroles")
	for _, want := range authorizer.BootstrapClusterRoles() {
		err := s.reconcileBootstrap(ctx, crk, want, func(have meta.Object) bool {
			h := have.(*rbac.ClusterRole)
			if want.AggregationRule != nil {
				if reflect.DeepEqual(h.AggregationRule, want.AggregationRule) {
					return false
				}
				want.Rules = h.Rules
				return true
			}
			return !reflect.DeepEqual(h.Rules, want.Rules) || h.AggregationRule != nil
		})
		if err != nil {
			return fmt.Errorf("bootstrap ClusterRole %s: %w", want.Name, err)
		}
	}
	crbk, _ := scheme.ByResource("clusterrolebindings")
	for _, want := range authorizer.BootstrapClusterRoleBindings() {
		err := s.reconcileBootstrap(ctx, crbk, want, func(have meta.Object) bool {
			h := have.(*rbac.ClusterRoleBinding)
			return !reflect.DeepEqual(h.Subjects, want.Subjects) || h.RoleRef != want.RoleRef
		})
		if err != nil {
			return fmt.Errorf("bootstrap ClusterRoleBinding %s: %w", want.Name, err)
		}
	}
	rk, _ := scheme.ByResource("roles")
	for _, want := range authorizer.BootstrapRoles() {
		err := s.reconcileBootstrap(ctx, rk, want, func(have meta.Object) bool { return !reflect.DeepEqual(have.(*rbac.Role).Rules, want.Rules) })
		if err != nil {
			return fmt.Errorf("bootstrap Role %s/%s: %w", want.Namespace, want.Name, err)
		}
	}
	rbk, _ := scheme.ByResource("rolebindings")
	for _, want := range authorizer.BootstrapRoleBindings() {
		err := s.reconcileBootstrap(ctx, rbk, want, func(have meta.Object) bool {
			h := have.(*rbac.RoleBinding)
			return !reflect.DeepEqual(h.Subjects, want.Subjects) || h.RoleRef != want.RoleRef
		})
		if err != nil {
			return fmt.Errorf("bootstrap RoleBinding %s/%s: %w", want.Namespace, want.Name, err)
		}
	}
	return nil
}

// bootstrapper writes the bootstrap policy.
type bootstrapper struct {
	registry        *registry.Registry
	store           *storage.Store
	logf            func(string, ...any)
	describeNoSpace func() string
}

func (s bootstrapper) reconcileBootstrap(ctx context.Context, k *scheme.Kind, want meta.Object, differs func(have meta.Object) bool) error {
	m := want.GetObjectMeta()
	kv, err := s.store.Get(ctx, storage.Key(k.Resource, m.Namespace, m.Name))
	if errors.Is(err, storage.ErrNotFound) {
		return s.registry.Ensure(ctx, k, want)
	}
	if err != nil {
		return err
	}
	have, err := registry.DecodeStored(k, kv.Value, kv.Revision)
	if err != nil {
		return err
	}
	hm := have.GetObjectMeta()
	if hm.Annotations[rbac.AutoUpdateAnnotation] != "true" || !differs(have) {
		return nil
	}
	m.ResourceVersion, m.UID, m.CreationTimestamp = hm.ResourceVersion, hm.UID, hm.CreationTimestamp
	_, err = s.registry.UpdateObject(ctx, k, want)
	if storage.IsNoSpace(err) {
		s.logf("kobune-apiserver: cannot update %s %s: %s", k.Kind, m.Name, s.describeNoSpace())
		return nil
	}
	return err
}

// AuthorizePath authorizes a non-resource request (RBAC's nonResourceURLs).
func (s *Authorization) AuthorizePath(ctx context.Context, path string) error {
	if err := s.Wait(ctx); err != nil {
		return err
	}
	u := request.UserFrom(ctx)
	a := request.Attributes{Verb: "get", Path: path}
	if d, _ := s.authz.Authorize(u, &a); d != authorizer.Allow {
		return status.Errorf(codes.PermissionDenied, "forbidden: %s", authorizer.Describe(u, &a))
	}
	return nil
}

// Allowed asks the authorizer whether u may do a, once its caches are
// filled (impersonation's check).
func (s *Authorization) Allowed(ctx context.Context, u request.UserInfo, a *request.Attributes) (bool, error) {
	if err := s.Wait(ctx); err != nil {
		return false, err
	}
	d, _ := s.authz.Authorize(u, a)
	return d == authorizer.Allow, nil
}

// RBAC is the RBAC authorizer, nil unless that mode is on.
func (s *Authorization) RBAC() *authorizer.RBAC { return s.rbac }

// NodeMode reports whether the node authorizer is on (and so
// NodeRestriction admission).
func (s *Authorization) NodeMode() bool { return s.node != nil }

// proxyVerb is the verb of a proxied request's HTTP method.
func proxyVerb(method string) string {
	switch method {
	case "GET", "HEAD":
		return "get"
	case "POST":
		return "create"
	case "PUT":
		return "update"
	}
	return strings.ToLower(method) // patch, delete, options
}
