package networking

import (
	"strings"

	"github.com/kobune/kobune/api/meta"
	v "github.com/kobune/kobune/api/validation"
)

// Ingress routes HTTP(S) requests by host and path to Services; an
// ingress controller of the class it names serves it.
type Ingress struct {
	meta.TypeMeta   `json:",inline"`
	meta.ObjectMeta `json:"metadata"`
	Spec            IngressSpec   `json:"spec"`
	Status          IngressStatus `json:"status,omitzero"`
}

// IngressSpec is the routes.
type IngressSpec struct {
	IngressClassName *string         `json:"ingressClassName,omitempty"`
	DefaultBackend   *IngressBackend `json:"defaultBackend,omitempty"`
	TLS              []IngressTLS    `json:"tls,omitempty"`
	Rules            []IngressRule   `json:"rules,omitempty"`
}

// IngressTLS terminates TLS for the hosts with the certificate of a
// kubernetes.io/tls Secret.
type IngressTLS struct {
	Hosts      []string `json:"hosts,omitempty"`
	SecretName string   `json:"secretName,omitempty"`
}

// IngressRule is the paths of one host (every host, if empty).
type IngressRule struct {
	Host string                `json:"host,omitempty"`
	HTTP *HTTPIngressRuleValue `json:"http,omitempty"`
}

// HTTPIngressRuleValue is a list of paths.
type HTTPIngressRuleValue struct {
	Paths []HTTPIngressPath `json:"paths"`
}

// HTTPIngressPath sends requests whose path matches to a backend.
type HTTPIngressPath struct {
	Path     string         `json:"path,omitempty"`
	PathType *string        `json:"pathType"`
	Backend  IngressBackend `json:"backend"`
}

// IngressBackend is a Service port (or a resource, which Kobune does not
// support).
type IngressBackend struct {
	Service  *IngressServiceBackend `json:"service,omitempty"`
	Resource *TypedLocalReference   `json:"resource,omitempty" kobune:"unsupported"`
}

// TypedLocalReference names an object of the Ingress's namespace.
type TypedLocalReference struct {
	APIGroup *string `json:"apiGroup,omitempty"`
	Kind     string  `json:"kind"`
	Name     string  `json:"name"`
}

// IngressServiceBackend is a Service and one of its ports.
type IngressServiceBackend struct {
	Name string             `json:"name"`
	Port ServiceBackendPort `json:"port,omitzero"`
}

// ServiceBackendPort is a Service port by name or number.
type ServiceBackendPort struct {
	Name   string `json:"name,omitempty"`
	Number int32  `json:"number,omitempty"`
}

// IngressStatus is where the Ingress is reachable.
type IngressStatus struct {
	LoadBalancer IngressLoadBalancerStatus `json:"loadBalancer,omitzero"`
}

// IngressLoadBalancerStatus lists the addresses.
type IngressLoadBalancerStatus struct {
	Ingress []IngressLoadBalancerIngress `json:"ingress,omitempty"`
}

// IngressLoadBalancerIngress is one address.
type IngressLoadBalancerIngress struct {
	IP       string `json:"ip,omitempty"`
	Hostname string `json:"hostname,omitempty"`
}

// Path types.
const (
	PathTypeExact                  = "Exact"
	PathTypePrefix                 = "Prefix"
	PathTypeImplementationSpecific = "ImplementationSpecific"
)

// IngressClass names the controller that serves the Ingresses of the
// class; the annotation DefaultClassAnnotation "true" makes it the class
// of Ingresses that name none.
type IngressClass struct {
	meta.TypeMeta   `json:",inline"`
	meta.ObjectMeta `json:"metadata"`
	Spec            IngressClassSpec `json:"spec"`
}

// IngressClassSpec names the controller.
type IngressClassSpec struct {
	Controller string                           `json:"controller,omitempty"`
	Parameters *IngressClassParametersReference `json:"parameters,omitempty" kobune:"unsupported"`
}

// IngressClassParametersReference names an object with the controller's
// parameters for the class.
type IngressClassParametersReference struct {
	APIGroup  *string `json:"apiGroup,omitempty"`
	Kind      string  `json:"kind"`
	Name      string  `json:"name"`
	Scope     *string `json:"scope,omitempty"`
	Namespace *string `json:"namespace,omitempty"`
}

// DefaultClassAnnotation marks the default IngressClass.
const DefaultClassAnnotation = "ingressclass.kubernetes.io/is-default-class"

// ValidateIngress checks an Ingress with Kubernetes' rules.
func ValidateIngress(in *Ingress) v.ErrorList {
	errs := v.ValidateObjectMeta(&in.ObjectMeta, true, v.IsDNS1123Subdomain, v.NewPath("metadata"))
	sp := v.NewPath("spec")
	if in.Spec.DefaultBackend == nil && len(in.Spec.Rules) == 0 {
		errs = append(errs, v.NewInvalid(sp.Child("rules"), in.Spec.Rules, "either `defaultBackend` or `rules` must be specified"))
	}
	if b := in.Spec.DefaultBackend; b != nil {
		errs = append(errs, validateBackend(b, sp.Child("defaultBackend"))...)
	}
	if c := in.Spec.IngressClassName; c != nil {
		if why := v.IsDNS1123Subdomain(*c); why != "" {
			errs = append(errs, v.NewInvalid(sp.Child("ingressClassName"), *c, why))
		}
	}
	for i, t := range in.Spec.TLS {
		for j, h := range t.Hosts {
			if why := isWildcardOrDNSName(h); why != "" {
				errs = append(errs, v.NewInvalid(sp.Child("tls").Index(i).Child("hosts").Index(j), h, why))
			}
		}
	}
	for i, r := range in.Spec.Rules {
		rp := sp.Child("rules").Index(i)
		if r.Host != "" {
			if why := isWildcardOrDNSName(r.Host); why != "" {
				errs = append(errs, v.NewInvalid(rp.Child("host"), r.Host, why))
			}
		}
		if r.HTTP == nil {
			continue
		}
		if len(r.HTTP.Paths) == 0 {
			errs = append(errs, v.NewRequired(rp.Child("http", "paths"), ""))
		}
		for j, path := range r.HTTP.Paths {
			pp := rp.Child("http", "paths").Index(j)
			switch {
			case path.PathType == nil:
				errs = append(errs, v.NewRequired(pp.Child("pathType"), "pathType must be specified"))
			case *path.PathType == PathTypeExact || *path.PathType == PathTypePrefix:
				if !strings.HasPrefix(path.Path, "/") {
					errs = append(errs, v.NewInvalid(pp.Child("path"), path.Path, "must be an absolute path"))
				}
			case *path.PathType == PathTypeImplementationSpecific:
				if path.Path != "" && !strings.HasPrefix(path.Path, "/") {
					errs = append(errs, v.NewInvalid(pp.Child("path"), path.Path, "must be an absolute path"))
				}
			default:
				errs = append(errs, v.NewNotSupported(pp.Child("pathType"), *path.PathType, []string{PathTypeExact, PathTypeImplementationSpecific, PathTypePrefix}))
			}
			errs = append(errs, validateBackend(&path.Backend, pp.Child("backend"))...)
		}
	}
	return errs
}

func validateBackend(b *IngressBackend, p *v.Path) v.ErrorList {
	switch {
	case b.Service != nil && b.Resource != nil:
		return v.ErrorList{v.NewInvalid(p, "", "cannot set both resource and service backends")}
	case b.Resource != nil:
		return nil // named unsupported by the field audit
	case b.Service == nil:
		return v.ErrorList{v.NewInvalid(p, "", "resource or service backend is required")}
	}
	var errs v.ErrorList
	s := b.Service
	if why := v.IsDNS1123Label(s.Name); why != "" {
		errs = append(errs, v.NewInvalid(p.Child("service", "name"), s.Name, why))
	}
	pp := p.Child("service", "port")
	switch {
	case s.Port.Name != "" && s.Port.Number != 0:
		errs = append(errs, v.NewInvalid(pp, "", "cannot set both port name & port number"))
	case s.Port.Name != "":
		if why := v.IsPortName(s.Port.Name); why != "" {
			errs = append(errs, v.NewInvalid(pp.Child("name"), s.Port.Name, why))
		}
	case s.Port.Number < 1 || s.Port.Number > 65535:
		errs = append(errs, v.NewInvalid(pp.Child("number"), s.Port.Number, "must be between 1 and 65535, inclusive"))
	}
	return errs
}

// isWildcardOrDNSName returns why h is neither a DNS name nor a wildcard
// one ("*.example.com"), or "".
func isWildcardOrDNSName(h string) string {
	if rest, ok := strings.CutPrefix(h, "*."); ok {
		h = rest
	}
	if strings.Contains(h, "*") {
		return "a wildcard DNS-1123 subdomain must start with '*.', followed by a valid DNS subdomain"
	}
	return v.IsDNS1123Subdomain(h)
}

// ValidateIngressClass checks an IngressClass: a controller name that is
// a domain-prefixed path, such as example.com/ingress-controller.
func ValidateIngressClass(c *IngressClass) v.ErrorList {
	errs := v.ValidateObjectMeta(&c.ObjectMeta, false, v.IsDNS1123Subdomain, v.NewPath("metadata"))
	p := v.NewPath("spec", "controller")
	domain, path, ok := strings.Cut(c.Spec.Controller, "/")
	switch {
	case c.Spec.Controller == "":
		errs = append(errs, v.NewRequired(p, ""))
	case !ok || path == "" || v.IsDNS1123Subdomain(domain) != "":
		errs = append(errs, v.NewInvalid(p, c.Spec.Controller, "must be a domain-prefixed path (such as \"acme.io/foo\")"))
	case len(c.Spec.Controller) > 250:
		errs = append(errs, v.NewTooLong(p, c.Spec.Controller, 250))
	}
	return errs
}

// ValidateIngressClassUpdate refuses a change of controller, which is
// immutable.
func ValidateIngressClassUpdate(n, o *IngressClass) v.ErrorList {
	if n.Spec.Controller != o.Spec.Controller {
		return v.ErrorList{v.NewInvalid(v.NewPath("spec", "controller"), n.Spec.Controller, "field is immutable")}
	}
	return nil
}
