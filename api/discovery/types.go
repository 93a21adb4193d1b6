package discovery

import (
	"fmt"
	"net"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	v "github.com/kobune/kobune/api/validation"
)

// EndpointSlice is a set of endpoints of one Service sharing one set of ports.
type EndpointSlice struct {
	meta.TypeMeta   `json:",inline"`
	meta.ObjectMeta `json:"metadata"`
	AddressType     string         `json:"addressType"`
	Endpoints       []Endpoint     `json:"endpoints"`
	Ports           []EndpointPort `json:"ports"`
}

// Endpoint is one backend: a pod's address.
type Endpoint struct {
	Addresses  []string              `json:"addresses"`
	Conditions EndpointConditions    `json:"conditions,omitzero"`
	Hostname   *string               `json:"hostname,omitempty"`
	TargetRef  *core.ObjectReference `json:"targetRef,omitempty"`
	NodeName   *string               `json:"nodeName,omitempty"`
	Zone       *string               `json:"zone,omitempty"`
}

// EndpointConditions are Kubernetes' three: ready (serve new traffic),
// serving (the pod is ready, also while terminating), terminating.
type EndpointConditions struct {
	Ready       *bool `json:"ready,omitempty"`
	Serving     *bool `json:"serving,omitempty"`
	Terminating *bool `json:"terminating,omitempty"`
}

// EndpointPort is a port every endpoint of the slice serves.
type EndpointPort struct {
	Name     *string        `json:"name,omitempty"`
	Protocol *core.Protocol `json:"protocol,omitempty"`
	Port     *int32         `json:"port,omitempty"`
}

// Labels and values Kubernetes puts on slices, and limits.
const (
	LabelServiceName = "kubernetes.io/service-name"
	LabelManagedBy   = "endpointslice.kubernetes.io/managed-by"
	// ManagedByController is the managed-by value of kobune-controller's
	// slices (Kubernetes' own controller's value, so tools that look for it
	// find them).
	ManagedByController = "endpointslice-controller.k8s.io"
	AddressTypeIPv4     = "IPv4"
	// MaxEndpointsPerSlice is the controller's default (--max-endpoints-per-slice).
	MaxEndpointsPerSlice = 100
	// MaxEndpoints is the most one slice may hold (API validation).
	MaxEndpoints = 1000
)

// ValidateEndpointSlice checks a slice as Kubernetes does for IPv4 slices.
func ValidateEndpointSlice(s *EndpointSlice) v.ErrorList {
	errs := v.ValidateObjectMeta(&s.ObjectMeta, true, v.IsDNS1123Subdomain, v.NewPath("metadata"))
	types := []string{AddressTypeIPv4}
	if s.AddressType != AddressTypeIPv4 {
		errs = append(errs, v.NewNotSupported(v.NewPath("addressType"), s.AddressType, types))
	}
	if len(s.Endpoints) > MaxEndpoints {
		errs = append(errs, v.NewInvalid(v.NewPath("endpoints"), len(s.Endpoints), fmt.Sprintf("must have at most %d items", MaxEndpoints)))
	}
	for i, e := range s.Endpoints {
		ep := v.NewPath("endpoints").Index(i)
		// 1 to 100 addresses, as Kubernetes allows (the controller writes
		// one per endpoint).
		switch n := len(e.Addresses); {
		case n == 0:
			errs = append(errs, v.NewRequired(ep.Child("addresses"), "must contain at least 1 address"))
		case n > 100:
			errs = append(errs, v.NewInvalid(ep.Child("addresses"), n, "must have at most 100 items"))
		}
		for j, a := range e.Addresses {
			if ip := net.ParseIP(a); ip == nil || ip.To4() == nil {
				errs = append(errs, v.NewInvalid(ep.Child("addresses").Index(j), a, "must be a valid IPv4 address"))
			}
		}
		if e.Hostname != nil {
			if msg := v.IsDNS1123Label(*e.Hostname); msg != "" {
				errs = append(errs, v.NewInvalid(ep.Child("hostname"), *e.Hostname, msg))
			}
		}
	}
	if len(s.Ports) > 100 {
		errs = append(errs, v.NewInvalid(v.NewPath("ports"), len(s.Ports), "must have at most 100 items"))
	}
	names := map[string]bool{}
	for i, p := range s.Ports {
		pp := v.NewPath("ports").Index(i)
		if p.Name != nil {
			if *p.Name != "" {
				if msg := v.IsDNS1123Label(*p.Name); msg != "" {
					errs = append(errs, v.NewInvalid(pp.Child("name"), *p.Name, msg))
				}
			}
			if names[*p.Name] {
				errs = append(errs, v.NewDuplicate(pp.Child("name"), *p.Name))
			}
			names[*p.Name] = true
		}
		if p.Port != nil && (*p.Port < 1 || *p.Port > 65535) {
			errs = append(errs, v.NewInvalid(pp.Child("port"), *p.Port, "must be between 1 and 65535, inclusive"))
		}
		if p.Protocol != nil && *p.Protocol != core.ProtocolTCP && *p.Protocol != core.ProtocolUDP && *p.Protocol != core.ProtocolSCTP {
			errs = append(errs, v.NewNotSupported(pp.Child("protocol"), string(*p.Protocol), []string{"TCP", "UDP", "SCTP"}))
		}
	}
	return errs
}
