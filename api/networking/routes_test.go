package networking_test

import (
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/api/networking"
)

func ingressFrom(t *testing.T, doc string, created time.Time) *networking.Ingress {
	t.Helper()
	in := &networking.Ingress{}
	if err := yaml.UnmarshalStrict([]byte(doc), in); err != nil {
		t.Fatal(err)
	}
	if err := networking.ValidateIngress(in).ToError(); err != nil {
		t.Fatal(err)
	}
	in.CreationTimestamp = meta.Time{Time: created}
	return in
}

// Kubernetes' host and path rules: exact hosts, wildcards on one label,
// rules without a host; Exact, Prefix by path element and
// ImplementationSpecific (a string prefix in Kobune); the longest path
// wins and Exact wins a tie; a host with rules does not fall through to
// the rules without a host; the default backend catches the rest; a
// conflict goes to the older Ingress.
func TestIngressRoutes(t *testing.T) {
	now := time.Now()
	shop := ingressFrom(t, `metadata: {namespace: shop, name: shop}
spec:
  defaultBackend: {service: {name: fallback, port: {number: 80}}}
  rules:
  - host: shop.example.com
    http:
      paths:
      - {path: /, pathType: Prefix, backend: {service: {name: web, port: {number: 80}}}}
      - {path: /api, pathType: Prefix, backend: {service: {name: api, port: {name: http}}}}
      - {path: /api/v1/login, pathType: Exact, backend: {service: {name: login, port: {number: 8080}}}}
      - {path: /static, pathType: ImplementationSpecific, backend: {service: {name: static, port: {number: 80}}}}
  - host: "*.example.com"
    http:
      paths:
      - {path: /, pathType: Prefix, backend: {service: {name: wild, port: {number: 80}}}}
  - http:
      paths:
      - {path: /anyhost, pathType: Exact, backend: {service: {name: anyhost, port: {number: 80}}}}
`, now)
	newer := ingressFrom(t, `metadata: {namespace: other, name: late}
spec:
  defaultBackend: {service: {name: late-default, port: {number: 80}}}
  rules:
  - host: shop.example.com
    http:
      paths:
      - {path: /api, pathType: Prefix, backend: {service: {name: hijack, port: {number: 80}}}}
      - {path: /api/v2, pathType: Prefix, backend: {service: {name: v2, port: {number: 80}}}}
`, now.Add(time.Minute))
	tab := networking.BuildRoutes([]*networking.Ingress{newer, shop})
	for _, tc := range []struct {
		host, path, want string
	}{
		{"shop.example.com", "/", "shop/web:80"},
		{"SHOP.example.com", "/cart", "shop/web:80"},
		{"shop.example.com", "/api", "shop/api:http"},
		{"shop.example.com", "/api/", "shop/api:http"},
		{"shop.example.com", "/api/items", "shop/api:http"},
		{"shop.example.com", "/apix", "shop/web:80"},             // Prefix matches whole elements
		{"shop.example.com", "/api/v1/login", "shop/login:8080"}, // the longest
		{"shop.example.com", "/api/v1/login/x", "shop/api:http"}, // Exact only exactly
		{"shop.example.com", "/api/v2/x", "other/v2:80"},         // longer, from the newer Ingress
		{"shop.example.com", "/staticfiles", "shop/static:80"},   // ImplementationSpecific: string prefix
		{"blog.example.com", "/", "shop/wild:80"},
		{"a.blog.example.com", "/", "shop/fallback:80"}, // a wildcard covers one label only
		{"example.com", "/anyhost", "shop/anyhost:80"},
		{"shop.example.com", "/anyhost", "shop/web:80"}, // the host's rules, not the host-less ones
		{"nothing.test", "/x", "shop/fallback:80"},      // the older Ingress's default backend
	} {
		b, ok := tab.Match(tc.host, tc.path)
		if got := b.String(); !ok || got != tc.want {
			t.Errorf("%s%s → %s (%v), want %s", tc.host, tc.path, got, ok, tc.want)
		}
	}
	if _, ok := networking.BuildRoutes([]*networking.Ingress{newer}).Match("x", "/"); !ok {
		t.Errorf("a default backend alone catches everything")
	}
	only := ingressFrom(t, "metadata: {namespace: a, name: b}\nspec: {rules: [{host: a.test, http: {paths: [{path: /, pathType: Exact, backend: {service: {name: s, port: {number: 1}}}}]}}]}", now)
	if b, ok := networking.BuildRoutes([]*networking.Ingress{only}).Match("a.test", "/x"); ok {
		t.Errorf("no rule and no default backend: got %s", b)
	}
}
