package networking

import (
	"sort"
	"strconv"
	"strings"
)

// RouteBackend is where an Ingress route sends a request: a Service port (by number or
// by name) in the Ingress's namespace.
type RouteBackend struct {
	Namespace, Service string
	Port               ServiceBackendPort
	// Ingress is namespace/name of the Ingress the route comes from.
	Ingress string
}

// String is "namespace/service:port".
func (b RouteBackend) String() string {
	port := b.Port.Name
	if port == "" {
		port = strconv.Itoa(int(b.Port.Number))
	}
	return b.Namespace + "/" + b.Service + ":" + port
}

// route is one path of one host.
type route struct {
	host     string
	path     string
	pathType string
	backend  RouteBackend
	// order breaks ties: the older Ingress first, then its own order.
	order int
}

// Route is what a request matched: the rule's host ("" for a rule
// without one), path and path type, and its backend; Default when no rule
// matched and the default backend takes the request.
type Route struct {
	Host, Path, PathType string
	Backend              RouteBackend
	Default              bool
}

// Routes is the routing of every Ingress the controller serves: rules by
// host (exact hosts, then wildcards, then the rules without a host),
// and the default backend. It is immutable once built; the controller
// swaps in a new one on every change.
type Routes struct {
	exact     map[string][]route
	wildcards map[string][]route // "*.example.com" → routes, matched on one label
	anyHost   []route
	// Default is the default backend of the oldest Ingress that has one.
	Default *RouteBackend
	// TLS: host (exact or "*.example.com") → "namespace/secret".
	TLS map[string]string
}

// BuildRoutes makes the routing from the Ingresses an ingress controller serves. Conflicts (the same
// host, path and type in two Ingresses) go to the older Ingress, as
// ingress-nginx decides them.
func BuildRoutes(ingresses []*Ingress) *Routes {
	list := append([]*Ingress(nil), ingresses...)
	sort.SliceStable(list, func(i, j int) bool {
		a, b := list[i], list[j]
		if !a.CreationTimestamp.Equal(b.CreationTimestamp.Time) {
			return a.CreationTimestamp.Before(b.CreationTimestamp.Time)
		}
		return a.Namespace+"/"+a.Name < b.Namespace+"/"+b.Name
	})
	t := &Routes{exact: map[string][]route{}, wildcards: map[string][]route{}, TLS: map[string]string{}}
	order := 0
	for _, in := range list {
		key := in.Namespace + "/" + in.Name
		backend := func(b IngressBackend) (RouteBackend, bool) {
			if b.Service == nil {
				return RouteBackend{}, false // resource backends: unsupported (validation names them)
			}
			return RouteBackend{Namespace: in.Namespace, Service: b.Service.Name, Port: b.Service.Port, Ingress: key}, true
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
				typ := PathTypeImplementationSpecific
				if p.PathType != nil {
					typ = *p.PathType
				}
				path := p.Path
				if path == "" {
					path = "/"
				}
				rt := route{host: r.Host, path: path, pathType: typ, backend: b, order: order}
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
func (t *Routes) Match(host, path string) (RouteBackend, bool) {
	r, ok := t.MatchRoute(host, path)
	return r.Backend, ok
}

// MatchRoute is Match, with the rule that matched.
func (t *Routes) MatchRoute(host, path string) (Route, bool) {
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
	if r := best(rs, path); r != nil {
		return Route{Host: r.host, Path: r.path, PathType: r.pathType, Backend: r.backend}, true
	}
	if t.Default != nil {
		return Route{Backend: *t.Default, Default: true}, true
	}
	return Route{}, false
}

// Backends are the distinct backends of the routing.
func (t *Routes) Backends() []RouteBackend {
	seen := map[string]bool{}
	var out []RouteBackend
	add := func(b RouteBackend) {
		if !seen[b.String()] {
			seen[b.String()] = true
			out = append(out, b)
		}
	}
	for _, rs := range t.exact {
		for _, r := range rs {
			add(r.backend)
		}
	}
	for _, rs := range t.wildcards {
		for _, r := range rs {
			add(r.backend)
		}
	}
	for _, r := range t.anyHost {
		add(r.backend)
	}
	if t.Default != nil {
		add(*t.Default)
	}
	return out
}

// best is the matching route with the longest path; Exact wins a tie,
// then the older rule.
func best(rs []route, path string) *route {
	var found *route
	for i := range rs {
		r := &rs[i]
		if !pathMatches(r, path) {
			continue
		}
		if found == nil || len(r.path) > len(found.path) ||
			(len(r.path) == len(found.path) && r.pathType == PathTypeExact && found.pathType != PathTypeExact) {
			found = r
		}
	}
	return found
}

func pathMatches(r *route, path string) bool {
	switch r.pathType {
	case PathTypeExact:
		return path == r.path
	case PathTypePrefix:
		p := strings.TrimSuffix(r.path, "/")
		if p == "" {
			return true // "/" matches everything
		}
		return path == p || strings.HasPrefix(path, p+"/")
	}
	return strings.HasPrefix(path, r.path)
}
