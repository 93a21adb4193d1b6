package ingress

import (
	"sort"
	"strconv"
	"strings"

	"github.com/kobune/kobune/api/networking"
)

// Backend is where a route sends a request: a Service port (by number or
// by name) in the Ingress's namespace.
type Backend struct {
	Namespace, Service string
	Port               networking.ServiceBackendPort
	// Ingress is namespace/name of the Ingress the route comes from.
	Ingress string
}

// String is "namespace/service:port".
func (b Backend) String() string {
	port := b.Port.Name
	if port == "" {
		port = strconv.Itoa(int(b.Port.Number))
	}
	return b.Namespace + "/" + b.Service + ":" + port
}

// route is one path of one host.
type route struct {
	path     string
	pathType string
	backend  Backend
	// order breaks ties: the older Ingress first, then its own order.
	order int
}

// Table is the routing of every Ingress the controller serves: rules by
// host (exact hosts, then wildcards, then the rules without a host),
// and the default backend. It is immutable once built; the controller
// swaps in a new one on every change.
type Table struct {
	exact     map[string][]route
	wildcards map[string][]route // "*.example.com" → routes, matched on one label
	anyHost   []route
	// Default is the default backend of the oldest Ingress that has one.
	Default *Backend
	// TLS: host (exact or "*.example.com") → "namespace/secret".
	TLS map[string]string
}

// Build makes the table from the Ingresses to serve. Conflicts (the same
// host, path and type in two Ingresses) go to the older Ingress, as
// ingress-nginx decides them.
func Build(ingresses []*networking.Ingress) *Table {
	list := append([]*networking.Ingress(nil), ingresses...)
	sort.SliceStable(list, func(i, j int) bool {
		a, b := list[i], list[j]
		if !a.CreationTimestamp.Equal(b.CreationTimestamp.Time) {
			return a.CreationTimestamp.Before(b.CreationTimestamp.Time)
		}
		return a.Namespace+"/"+a.Name < b.Namespace+"/"+b.Name
	})
	t := &Table{exact: map[string][]route{}, wildcards: map[string][]route{}, TLS: map[string]string{}}
	order := 0
	for _, in := range list {
		key := in.Namespace + "/" + in.Name
		backend := func(b networking.IngressBackend) (Backend, bool) {
			if b.Service == nil {
				return Backend{}, false // resource backends: unsupported (validation names them)
			}
			return Backend{Namespace: in.Namespace, Service: b.Service.Name, Port: b.Service.Port, Ingress: key}, true
		}
		if in.Spec.DefaultBackend != nil && t.Default == nil {
			if b, ok := backend(*in.Spec.DefaultBackend); ok {
				t.Default = &b
			}
		}
		for _, tls := range in.Spec.TLS {
			for _, h := range tls.Hosts {
				if _, taken := t.TLS[h]; !taken && tls.SecretName != "" {
					t.TLS[h] = in.Namespace + "/" + tls.SecretName
				}
			}
		}
		for _, r := range in.Spec.Rules {
			if r.HTTP == nil {
				continue
			}
			for _, p := range r.HTTP.Paths {
				b, ok := backend(p.Backend)
				if !ok {
					continue
				}
				typ := networking.PathTypeImplementationSpecific
				if p.PathType != nil {
					typ = *p.PathType
				}
				path := p.Path
				if path == "" {
					path = "/"
				}
				rt := route{path: path, pathType: typ, backend: b, order: order}
				order++
				switch {
				case r.Host == "":
					t.anyHost = append(t.anyHost, rt)
				case strings.HasPrefix(r.Host, "*."):
					t.wildcards[r.Host] = append(t.wildcards[r.Host], rt)
				default:
					t.exact[r.Host] = append(t.exact[r.Host], rt)
				}
			}
		}
	}
	return t
}

// Match finds the backend for a request's host (without port) and path:
// the rules of the exact host, else of the wildcard host that matches its
// first label, else the rules without a host; among them the longest
// matching path (Exact before Prefix at the same length); when none
// matches, the default backend (as ingress-nginx: a host with rules does
// not fall through to the rules without a host). Kubernetes' path
// semantics: Exact matches the path exactly; Prefix matches whole path
// elements ("/foo" matches "/foo" and "/foo/bar", not "/foobar");
// ImplementationSpecific is, in Kobune, a plain string prefix.
func (t *Table) Match(host, path string) (Backend, bool) {
	host = strings.ToLower(host)
	rs, ok := t.exact[host]
	if !ok {
		if i := strings.IndexByte(host, '.'); i > 0 {
			rs, ok = t.wildcards["*"+host[i:]]
		}
	}
	if !ok {
		rs = t.anyHost
	}
	if b, ok := best(rs, path); ok {
		return b, true
	}
	if t.Default != nil {
		return *t.Default, true
	}
	return Backend{}, false
}

// best is the matching route with the longest path; Exact wins a tie,
// then the older rule.
func best(rs []route, path string) (Backend, bool) {
	var found *route
	for i := range rs {
		r := &rs[i]
		if !matches(r, path) {
			continue
		}
		if found == nil || len(r.path) > len(found.path) ||
			(len(r.path) == len(found.path) && r.pathType == networking.PathTypeExact && found.pathType != networking.PathTypeExact) {
			found = r
		}
	}
	if found == nil {
		return Backend{}, false
	}
	return found.backend, true
}

func matches(r *route, path string) bool {
	switch r.pathType {
	case networking.PathTypeExact:
		return path == r.path
	case networking.PathTypePrefix:
		p := strings.TrimSuffix(r.path, "/")
		if p == "" {
			return true // "/" matches everything
		}
		return path == p || strings.HasPrefix(path, p+"/")
	}
	return strings.HasPrefix(path, r.path)
}
