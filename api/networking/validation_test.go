package networking

import (
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// TestNetworkPolicyValidation: each bad policy is refused with the field
// and Kubernetes' message; good ones pass and are defaulted.
func TestNetworkPolicyValidation(t *testing.T) {
	for _, tc := range []struct{ name, spec, want string }{
		{"allow all from the namespace", "podSelector: {}\ningress: [{from: [{podSelector: {}}]}]", ""},
		{"named port and a range", "podSelector: {matchLabels: {app: db}}\ningress: [{ports: [{port: http}, {port: 8000, endPort: 8080, protocol: UDP}]}]", ""},
		{"ipBlock with except", "podSelector: {}\negress: [{to: [{ipBlock: {cidr: 10.0.0.0/8, except: [10.1.0.0/16]}}]}]", ""},
		{"selectors combined", "podSelector: {}\ningress: [{from: [{podSelector: {matchLabels: {a: b}}, namespaceSelector: {matchLabels: {team: x}}}]}]", ""},
		{"empty peer", "podSelector: {}\ningress: [{from: [{}]}]", "spec.ingress[0].from[0]: Required value: must specify a peer"},
		{"ipBlock and a selector", "podSelector: {}\ningress: [{from: [{ipBlock: {cidr: 10.0.0.0/8}, podSelector: {}}]}]", "may not specify both ipBlock and another peer"},
		{"bad cidr", "podSelector: {}\negress: [{to: [{ipBlock: {cidr: 10.0.0.0}}]}]", "spec.egress[0].to[0].ipBlock.cidr: Invalid value"},
		{"except outside the cidr", "podSelector: {}\negress: [{to: [{ipBlock: {cidr: 10.0.0.0/16, except: [10.2.0.0/24]}}]}]", "spec.egress[0].to[0].ipBlock.except[0]: Invalid value: \"10.2.0.0/24\": must be a strict subset of `cidr`"},
		{"except equal to the cidr", "podSelector: {}\negress: [{to: [{ipBlock: {cidr: 10.0.0.0/16, except: [10.0.0.0/16]}}]}]", "must be a strict subset of `cidr`"},
		{"protocol", "podSelector: {}\ningress: [{ports: [{protocol: ICMP}]}]", `spec.ingress[0].ports[0].protocol: Unsupported value: "ICMP"`},
		{"port zero", "podSelector: {}\ningress: [{ports: [{port: 0}]}]", "spec.ingress[0].ports[0].port: Invalid value: 0: must be between 1 and 65535, inclusive"},
		{"endPort below port", "podSelector: {}\ningress: [{ports: [{port: 90, endPort: 80}]}]", "must be greater than or equal to `port`"},
		{"endPort with a named port", "podSelector: {}\ningress: [{ports: [{port: http, endPort: 80}]}]", "may not be specified when `port` is non-numeric"},
		{"endPort without port", "podSelector: {}\ningress: [{ports: [{endPort: 80}]}]", "spec.ingress[0].ports[0].port: Required value"},
		{"bad port name", "podSelector: {}\ningress: [{ports: [{port: Not_A_Name}]}]", "spec.ingress[0].ports[0].port: Invalid value"},
		{"policy type", "podSelector: {}\npolicyTypes: [Sideways]", `spec.policyTypes[0]: Unsupported value: "Sideways"`},
		{"bad selector", "podSelector: {matchLabels: {'a b': c}}", "spec.podSelector.matchLabels"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			np := &NetworkPolicy{}
			np.Name, np.Namespace = "p", "default"
			if err := yaml.UnmarshalStrict([]byte(tc.spec), &np.Spec); err != nil {
				t.Fatal(err)
			}
			SetDefaultsNetworkPolicy(np)
			err := ValidateNetworkPolicy(np).ToError()
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

func TestNetworkPolicyDefaults(t *testing.T) {
	np := &NetworkPolicy{}
	if err := yaml.UnmarshalStrict([]byte("podSelector: {}\ningress: [{ports: [{port: 80}]}]\negress: [{}]"), &np.Spec); err != nil {
		t.Fatal(err)
	}
	SetDefaultsNetworkPolicy(np)
	if got := strings.Join(np.Spec.PolicyTypes, ","); got != "Ingress,Egress" {
		t.Errorf("policyTypes %q, want Ingress,Egress (egress rules present)", got)
	}
	if p := np.Spec.Ingress[0].Ports[0].Protocol; p == nil || *p != "TCP" {
		t.Errorf("protocol %v, want TCP", p)
	}
	only := &NetworkPolicy{}
	SetDefaultsNetworkPolicy(only)
	if got := strings.Join(only.Spec.PolicyTypes, ","); got != "Ingress" {
		t.Errorf("policyTypes %q, want Ingress", got)
	}
}

func TestIngressValidation(t *testing.T) {
	for _, tc := range []struct{ name, spec, want string }{
		{"host and paths", "rules: [{host: shop.example.com, http: {paths: [{path: /, pathType: Prefix, backend: {service: {name: web, port: {number: 80}}}}]}}]", ""},
		{"default backend by port name", "defaultBackend: {service: {name: web, port: {name: http}}}", ""},
		{"wildcard host and tls", "tls: [{hosts: ['*.example.com'], secretName: cert}]\nrules: [{host: '*.example.com', http: {paths: [{path: /api, pathType: Exact, backend: {service: {name: api, port: {number: 8080}}}}]}}]", ""},
		{"nothing to route", "ingressClassName: kobune", "either `defaultBackend` or `rules` must be specified"},
		{"path type missing", "rules: [{http: {paths: [{path: /, backend: {service: {name: web, port: {number: 80}}}}]}}]", "spec.rules[0].http.paths[0].pathType: Required value"},
		{"path type unknown", "rules: [{http: {paths: [{path: /, pathType: Regex, backend: {service: {name: web, port: {number: 80}}}}]}}]", `Unsupported value: "Regex"`},
		{"relative path", "rules: [{http: {paths: [{path: api, pathType: Prefix, backend: {service: {name: web, port: {number: 80}}}}]}}]", "must be an absolute path"},
		{"port name and number", "defaultBackend: {service: {name: web, port: {name: http, number: 80}}}", "cannot set both port name & port number"},
		{"no port", "defaultBackend: {service: {name: web}}", "spec.defaultBackend.service.port.number: Invalid value"},
		{"bad host", "rules: [{host: 'a*b.example.com', http: {paths: [{path: /, pathType: Prefix, backend: {service: {name: web, port: {number: 80}}}}]}}]", "spec.rules[0].host"},
		{"no backend", "rules: [{http: {paths: [{path: /, pathType: Prefix, backend: {}}]}}]", "resource or service backend is required"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := &Ingress{}
			in.Name, in.Namespace = "web", "default"
			if err := yaml.UnmarshalStrict([]byte(tc.spec), &in.Spec); err != nil {
				t.Fatal(err)
			}
			err := ValidateIngress(in).ToError()
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

func TestIngressClassValidation(t *testing.T) {
	for controller, want := range map[string]string{
		"kobune.io/ingress-controller": "",
		"":                             "spec.controller: Required value",
		"no-slash":                     "must be a domain-prefixed path",
		"Bad_Domain/x":                 "must be a domain-prefixed path",
	} {
		c := &IngressClass{Spec: IngressClassSpec{Controller: controller}}
		c.Name = "kobune"
		err := ValidateIngressClass(c).ToError()
		if (want == "") != (err == nil) || want != "" && !strings.Contains(err.Error(), want) {
			t.Errorf("controller %q: %v, want %q", controller, err, want)
		}
	}
	o := &IngressClass{Spec: IngressClassSpec{Controller: "a.io/x"}}
	if err := ValidateIngressClassUpdate(&IngressClass{Spec: IngressClassSpec{Controller: "a.io/y"}}, o).ToError(); err == nil || !strings.Contains(err.Error(), "field is immutable") {
		t.Errorf("controller change: %v", err)
	}
}
