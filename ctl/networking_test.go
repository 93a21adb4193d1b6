package ctl_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/kobune/kobune/apiserver/testserver"
)

// TestNetworkingKindsAreStoredAndSayTheyAreNotActedOn: NetworkPolicy,
// Ingress and IngressClass are served (kubectl's columns, short names),
// validated with the field named, and every apply says they are not acted
// on yet — not stored and silently ignored.
func TestNetworkingKindsAreStoredAndSayTheyAreNotActedOn(t *testing.T) {
	s := testserver.New(t)
	manifest := `apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: db-from-web}
spec:
  podSelector: {matchLabels: {app: db}}
  ingress:
  - from: [{podSelector: {matchLabels: {app: web}}}]
    ports: [{port: 5432}]
---
apiVersion: networking.k8s.io/v1
kind: IngressClass
metadata: {name: kobune, annotations: {ingressclass.kubernetes.io/is-default-class: "true"}}
spec: {controller: kobune.io/ingress-controller}
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: shop}
spec:
  ingressClassName: kobune
  tls: [{hosts: [shop.example.com], secretName: shop-tls}]
  rules:
  - host: shop.example.com
    http:
      paths:
      - {path: /, pathType: Prefix, backend: {service: {name: web, port: {number: 80}}}}
`
	r := kobectl(t, s, manifest, "apply", "-f", "-")
	if r.code != 0 || !strings.Contains(r.stdout, "networkpolicy.networking.k8s.io/db-from-web created") ||
		!strings.Contains(r.stdout, "ingress.networking.k8s.io/shop created") || !strings.Contains(r.stdout, "ingressclass.networking.k8s.io/kobune created") {
		t.Fatalf("apply: %+v", r)
	}
	if strings.Count(r.stderr, "NetworkPolicy: not enforced yet") != 1 || strings.Count(r.stderr, "kind Ingress: no ingress controller yet") != 1 {
		t.Errorf("apply did not say what is not acted on: %q", r.stderr)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"get", "netpol"}, `(?m)^NAME\s+POD-SELECTOR\s+AGE\ndb-from-web\s+app=db\s+`},
		{[]string{"get", "ing"}, `(?m)^NAME\s+CLASS\s+HOSTS\s+ADDRESS\s+PORTS\s+AGE\nshop\s+kobune\s+shop\.example\.com\s+80, 443\s+`},
		{[]string{"get", "ingressclasses"}, `(?m)^NAME\s+CONTROLLER\s+PARAMETERS\s+AGE\nkobune\s+kobune\.io/ingress-controller\s+<none>\s+`},
	} {
		r := kobectl(t, s, "", tc.args...)
		if r.code != 0 || !regexp.MustCompile(tc.want).MatchString(r.stdout) {
			t.Errorf("kobectl %v: %d\n%s%s", tc.args, r.code, r.stdout, r.stderr)
		}
	}
	// Bad input names the field and stores nothing.
	for _, tc := range []struct{ doc, want string }{
		{"apiVersion: networking.k8s.io/v1\nkind: NetworkPolicy\nmetadata: {name: bad}\nspec:\n  podSelector: {}\n  ingress: [{ports: [{port: 90, endPort: 80}]}]\n",
			"spec.ingress[0].ports[0].endPort: Invalid value: 80: must be greater than or equal to `port`"},
		{"apiVersion: networking.k8s.io/v1\nkind: NetworkPolicy\nmetadata: {name: bad}\nspec:\n  podSelector: {}\n  egress: [{to: [{ipBlock: {cidr: 10.0.0.0/16, except: [10.9.0.0/24]}}]}]\n",
			"must be a strict subset of `cidr`"},
		{"apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata: {name: bad}\nspec:\n  rules: [{http: {paths: [{path: /, backend: {service: {name: web, port: {number: 80}}}}]}}]\n",
			"spec.rules[0].http.paths[0].pathType: Required value"},
		{"apiVersion: networking.k8s.io/v1\nkind: NetworkPolicy\nmetadata: {name: bad}\nspec:\n  podSelecter: {}\n",
			"podSelecter"},
	} {
		r := kobectl(t, s, tc.doc, "apply", "-f", "-")
		if r.code == 0 || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("apply of a bad object: %d %q, want an error naming %q", r.code, r.stderr, tc.want)
		}
	}
	for _, kind := range []string{"netpol", "ing"} {
		if r := kobectl(t, s, "", "get", kind, "bad"); r.code == 0 || !strings.Contains(r.stderr, "not found") {
			t.Errorf("a refused %s was stored: %+v", kind, r)
		}
	}
}
