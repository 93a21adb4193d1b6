package ctl_test

import (
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/kobune/kobune/api/networking"
	"github.com/kobune/kobune/apiserver/testserver"
	"github.com/kobune/kobune/client"
)

// TestNetworkingKindsAreServed: NetworkPolicy, Ingress and IngressClass
// are served (kubectl's columns, short names), validated with the field
// named; both are acted on (the agents enforce NetworkPolicies,
// kobune-ingress serves Ingresses), so no write warns.
func TestNetworkingKindsAreServed(t *testing.T) {
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
	if strings.Contains(r.stderr, "NetworkPolicy") || strings.Contains(r.stderr, "Ingress") {
		t.Errorf("apply warned about kinds Kobune acts on: %q", r.stderr)
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
	// describe in kubectl's words.
	r = kobectl(t, s, "", "describe", "netpol", "db-from-web")
	for _, want := range []string{"Spec:", "PodSelector:", "app=db", "Allowing ingress traffic:", "To Port: 5432/TCP", "From:", "PodSelector: app=web",
		"Not affecting egress traffic", "Policy Types:", "Ingress"} {
		if r.code != 0 || !strings.Contains(r.stdout, want) {
			t.Errorf("describe netpol lacks %q:\n%s%s", want, r.stdout, r.stderr)
			break
		}
	}
	r = kobectl(t, s, "", "describe", "ing", "shop")
	if r.code != 0 || !regexp.MustCompile(`Ingress Class:\s+kobune`).MatchString(r.stdout) || !regexp.MustCompile(`(?m)^\s+shop\.example\.com\s*\n\s+/\s+web:80$`).MatchString(r.stdout) ||
		!strings.Contains(r.stdout, "shop-tls terminates shop.example.com") {
		t.Errorf("describe ing:\n%s%s", r.stdout, r.stderr)
	}
	// An Ingress that names no class gets the default one (DefaultIngressClass).
	plain := "apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata: {name: plain}\nspec: {defaultBackend: {service: {name: web, port: {number: 80}}}}\n"
	if r := kobectl(t, s, plain, "apply", "-f", "-"); r.code != 0 {
		t.Fatalf("apply plain: %+v", r)
	}
	if r := kobectl(t, s, "", "get", "ing", "plain", "-o", "jsonpath={.spec.ingressClassName}"); r.stdout != "kobune" {
		t.Errorf("an Ingress without a class got %q, want the default class kobune (%s)", r.stdout, r.stderr)
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

// TestExplainPathBetweenPods: explain-path pod/A --to pod/B answers from
// the live NetworkPolicies: not isolated, allowed by a named rule, or
// denied with the missing rule; --to svc/NAME judges each endpoint after
// the DNAT, on its target port; namespaces carry their name as a label.
func TestExplainPathBetweenPods(t *testing.T) {
	s := testserver.New(t)
	objects := `apiVersion: v1
kind: Namespace
metadata: {name: shop}
---
apiVersion: v1
kind: Namespace
metadata: {name: tools}
---
apiVersion: v1
kind: Pod
metadata: {name: db, namespace: shop, labels: {app: db}}
spec: {containers: [{name: db, image: kobune.local/labapp:1.0, ports: [{name: sql, containerPort: 5432}]}]}
---
apiVersion: v1
kind: Pod
metadata: {name: web, namespace: shop, labels: {app: web}}
spec: {containers: [{name: web, image: kobune.local/labapp:1.0}]}
---
apiVersion: v1
kind: Pod
metadata: {name: debug, namespace: tools, labels: {app: debug}}
spec: {containers: [{name: sh, image: kobune.local/busybox:1.35}]}
`
	if r := kobectl(t, s, objects, "apply", "-f", "-"); r.code != 0 {
		t.Fatalf("apply: %+v", r)
	}
	if r := kobectl(t, s, "", "get", "ns", "tools", "-o", "jsonpath={.metadata.labels}"); !strings.Contains(r.stdout, `"kubernetes.io/metadata.name":"tools"`) {
		t.Errorf("namespace labels: %+v", r)
	}
	explain := func(args ...string) string {
		t.Helper()
		r := kobectl(t, s, "", append([]string{"explain-path"}, args...)...)
		if r.code != 0 {
			t.Fatalf("explain-path %v: %+v", args, r)
		}
		return r.stdout
	}
	out := explain("pod/web", "--to", "pod/db", "--port", "5432", "-n", "shop")
	if !strings.Contains(out, "Ingress of shop/db: no NetworkPolicy selects it for ingress: not isolated, allowed") || !strings.Contains(out, "Verdict: allowed") {
		t.Errorf("no policy:\n%s", out)
	}
	policy := "apiVersion: networking.k8s.io/v1\nkind: NetworkPolicy\nmetadata: {name: db, namespace: shop}\nspec:\n  podSelector: {matchLabels: {app: db}}\n  ingress: [{from: [{podSelector: {matchLabels: {app: web}}}], ports: [{port: sql}]}]\n"
	if r := kobectl(t, s, policy, "apply", "-f", "-"); r.code != 0 {
		t.Fatalf("apply policy: %+v", r)
	}
	out = explain("pod/web", "--to", "pod/db", "--port", "5432", "-n", "shop")
	if !strings.Contains(out, "Ingress of shop/db: selected by shop/db; allowed by shop/db ingress[0]") || !strings.Contains(out, "Verdict: allowed") {
		t.Errorf("allowed by the policy:\n%s", out)
	}
	out = explain("pod/web", "--to", "pod/db", "--port", "80", "-n", "shop")
	if !strings.Contains(out, "no rule of theirs allows this connection: denied") || !strings.Contains(out, "Verdict: denied") ||
		!strings.Contains(out, "missing: an ingress rule in a policy of namespace shop that selects shop/db: {from: [{podSelector: {matchLabels: {app: web}}}], ports: [{port: 80, protocol: TCP}]}") {
		t.Errorf("another port:\n%s", out)
	}
	out = explain("pod/debug", "--to", "pod/db", "--to-namespace", "shop", "--port", "5432", "-n", "tools")
	if !strings.Contains(out, "pod tools/debug") || !strings.Contains(out, "Verdict: denied") ||
		!strings.Contains(out, "{from: [{namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: tools}}, podSelector: {matchLabels: {app: debug}}}], ports: [{port: 5432, protocol: TCP}]}") {
		t.Errorf("from another namespace:\n%s", out)
	}
	// Through a Service: judged after the DNAT, on the endpoint's port.
	svc := `apiVersion: v1
kind: Service
metadata: {name: db, namespace: shop}
spec: {clusterIP: 10.96.7.7, selector: {app: db}, ports: [{name: pg, port: 80, targetPort: 5432}]}
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: db-1, namespace: shop, labels: {kubernetes.io/service-name: db}}
addressType: IPv4
ports: [{name: pg, port: 5432, protocol: TCP}]
endpoints: [{addresses: [10.244.2.4], conditions: {ready: true}, targetRef: {kind: Pod, name: db, namespace: shop}}]
`
	if r := kobectl(t, s, svc, "apply", "-f", "-"); r.code != 0 {
		t.Fatalf("apply service: %+v", r)
	}
	out = explain("pod/web", "--to", "svc/db", "--port", "80", "-n", "shop")
	for _, want := range []string{"Service shop/db port 80/TCP", "DNS: db.shop.svc answers 10.96.7.7", "DNATs a new connection to 10.96.7.7:80",
		"Endpoint 1 of 1:", "pod shop/db", "port 5432/TCP", "allowed by shop/db ingress[0]", "Verdict: allowed"} {
		if !strings.Contains(out, want) {
			t.Errorf("explain-path to svc/db lacks %q:\n%s", want, out)
		}
	}
	out = explain("pod/debug", "--to", "svc/db", "--to-namespace", "shop", "--port", "pg", "-n", "tools")
	if !strings.Contains(out, "Verdict: denied") || !strings.Contains(out, "ports: [{port: 5432, protocol: TCP}]") {
		t.Errorf("explain-path to svc/db from another namespace:\n%s", out)
	}
	if r := kobectl(t, s, "", "explain-path", "pod/web", "--to", "svc/db", "--port", "81", "-n", "shop"); r.code == 0 || !strings.Contains(r.stderr, `has no TCP port "81"`) {
		t.Errorf("explain-path to a Service port that does not exist: %+v", r)
	}
	if r := kobectl(t, s, "", "explain-path", "pod/debug", "--to", "pod/db", "--port", "5432", "-n", "tools"); r.code == 0 || !strings.Contains(r.stderr, "not found") {
		t.Errorf("explain-path to a pod not in -n without --to-namespace: %+v", r)
	}
	if r := kobectl(t, s, "", "explain-path", "pod/web", "--to", "pod/db", "--port", "http", "-n", "shop"); r.code == 0 || !strings.Contains(r.stderr, "a port number") {
		t.Errorf("a named --port with --to: %+v", r)
	}
}

// TestExplainPathThroughAnIngress: explain-path ingress/NAME follows a
// request: the class and addresses, the matching rule (the controller's
// own matching), the TLS Secret, the Service's ready endpoints, and
// whether the NetworkPolicies let the controller — on a node's host
// network — reach each one; a 404 and a 503 are named as such.
func TestExplainPathThroughAnIngress(t *testing.T) {
	s := testserver.New(t)
	objects := `apiVersion: v1
kind: Node
metadata: {name: node-1}
status: {addresses: [{type: InternalIP, address: 192.0.2.10}]}
---
apiVersion: v1
kind: Node
metadata: {name: node-2}
status: {addresses: [{type: InternalIP, address: 192.0.2.11}]}
---
apiVersion: v1
kind: Namespace
metadata: {name: shop}
---
apiVersion: v1
kind: Pod
metadata: {name: web-1, namespace: shop, labels: {app: web}}
spec: {nodeName: node-2, containers: [{name: web, image: kobune.local/labapp:1.0}]}
---
apiVersion: v1
kind: Service
metadata: {name: web, namespace: shop}
spec: {clusterIP: 10.96.7.8, selector: {app: web}, ports: [{name: http, port: 80, targetPort: 8080}]}
---
apiVersion: v1
kind: Service
metadata: {name: empty, namespace: shop}
spec: {clusterIP: 10.96.7.9, selector: {app: none}, ports: [{port: 80}]}
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: web-1, namespace: shop, labels: {kubernetes.io/service-name: web}}
addressType: IPv4
ports: [{name: http, port: 8080, protocol: TCP}]
endpoints: [{addresses: [10.244.2.4], nodeName: node-2, conditions: {ready: true}, targetRef: {kind: Pod, name: web-1, namespace: shop}}]
---
apiVersion: networking.k8s.io/v1
kind: IngressClass
metadata: {name: kobune}
spec: {controller: kobune.io/ingress-controller}
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: shop, namespace: shop}
spec:
  ingressClassName: kobune
  tls: [{hosts: [shop.example.com], secretName: shop-tls}]
  rules:
  - host: shop.example.com
    http:
      paths:
      - {path: /, pathType: Prefix, backend: {service: {name: web, port: {name: http}}}}
      - {path: /soon, pathType: Prefix, backend: {service: {name: empty, port: {number: 80}}}}
`
	if r := kobectl(t, s, objects, "apply", "-f", "-"); r.code != 0 {
		t.Fatalf("apply: %+v", r)
	}
	// The controller's status: served on both nodes.
	in, err := client.For[*networking.Ingress](s.Client).Get(context.Background(), "shop", "shop")
	if err != nil {
		t.Fatal(err)
	}
	in.Status.LoadBalancer.Ingress = []networking.IngressLoadBalancerIngress{{IP: "192.0.2.10"}, {IP: "192.0.2.11"}}
	if _, err := client.For[*networking.Ingress](s.Client).UpdateStatus(context.Background(), in); err != nil {
		t.Fatal(err)
	}
	explain := func(args ...string) string {
		t.Helper()
		r := kobectl(t, s, "", append([]string{"explain-path", "-n", "shop"}, args...)...)
		if r.code != 0 {
			t.Fatalf("explain-path %v: %+v", args, r)
		}
		return r.stdout
	}
	out := explain("ingress/shop", "--path", "/cart")
	for _, want := range []string{"Ingress shop/shop, class kobune (controller kobune.io/ingress-controller), served at 192.0.2.10, 192.0.2.11",
		"TLS: shop.example.com is served with the certificate of Secret shop/shop-tls", "request: https://shop.example.com/cart",
		"rule: host shop.example.com, path / (Prefix) → Service shop/web:http", "endpoint 1: pod shop/web-1", "port 8080",
		"from the controller on node-2: the node's own connection to its pod: NetworkPolicy does not judge it",
		"from the controller on node-1 (192.0.2.10): shop/web-1 is not isolated for ingress: allowed", "Verdict: served by shop/web:http"} {
		if !strings.Contains(out, want) {
			t.Errorf("explain-path ingress/shop lacks %q:\n%s", want, out)
		}
	}
	// A policy that admits pods only: the controller on node-1 is refused.
	policy := "apiVersion: networking.k8s.io/v1\nkind: NetworkPolicy\nmetadata: {name: pods-only, namespace: shop}\nspec: {podSelector: {}, ingress: [{from: [{podSelector: {}}]}]}\n"
	if r := kobectl(t, s, policy, "apply", "-f", "-"); r.code != 0 {
		t.Fatalf("apply policy: %+v", r)
	}
	out = explain("--from", "ingress/shop", "--path", "/cart")
	if !strings.Contains(out, "from the controller on node-1 (192.0.2.10): denied: shop/web-1 selected by shop/pods-only") ||
		!strings.Contains(out, "{from: [{ipBlock: {cidr: 192.0.2.10/32}}]}") || !strings.Contains(out, "the controller on node-1 may reach 0 of 1 endpoints") || !strings.Contains(out, "Verdict: requests that reach a controller which may reach no endpoint fail") {
		t.Errorf("a pods-only policy:\n%s", out)
	}
	if out = explain("ingress/shop", "--path", "/soon"); !strings.Contains(out, "Service shop/empty:80 has no ready endpoint: the controller answers 503") {
		t.Errorf("a backend without endpoints:\n%s", out)
	}
	if out = explain("ingress/shop", "--host", "other.example.com"); !strings.Contains(out, "no rule matches and there is no default backend: the controller answers 404") {
		t.Errorf("another host:\n%s", out)
	}
}
