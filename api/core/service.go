package core

import "github.com/kobune/kobune/api/meta"

// Service is a stable virtual IP and name in front of a set of pods.
type Service struct {
	meta.TypeMeta   `json:",inline"`
	meta.ObjectMeta `json:"metadata"`
	Spec            ServiceSpec   `json:"spec"`
	Status          ServiceStatus `json:"status,omitzero"`
}

// ServiceSpec is the desired state of a service. The API server allocates
// clusterIP (and clusterIPs, their single-stack list) from
// --service-cluster-ip-range and node ports from --service-node-port-range.
type ServiceSpec struct {
	Type                     string                 `json:"type,omitempty"`
	Selector                 map[string]string      `json:"selector,omitempty"`
	Ports                    []ServicePort          `json:"ports,omitempty"`
	ClusterIP                string                 `json:"clusterIP,omitempty"`
	ClusterIPs               []string               `json:"clusterIPs,omitempty"`
	IPFamilies               []string               `json:"ipFamilies,omitempty"`
	IPFamilyPolicy           *string                `json:"ipFamilyPolicy,omitempty"`
	ExternalName             string                 `json:"externalName,omitempty"`
	SessionAffinity          string                 `json:"sessionAffinity,omitempty"`
	SessionAffinityConfig    *SessionAffinityConfig `json:"sessionAffinityConfig,omitempty"`
	ExternalTrafficPolicy    string                 `json:"externalTrafficPolicy,omitempty"`
	InternalTrafficPolicy    *string                `json:"internalTrafficPolicy,omitempty"`
	PublishNotReadyAddresses bool                   `json:"publishNotReadyAddresses,omitempty"`
	ExternalIPs              []string               `json:"externalIPs,omitempty" kobune:"unsupported"`
	LoadBalancerIP           string                 `json:"loadBalancerIP,omitempty" kobune:"unsupported"`
	LoadBalancerSourceRanges []string               `json:"loadBalancerSourceRanges,omitempty" kobune:"unsupported"`
	HealthCheckNodePort      int32                  `json:"healthCheckNodePort,omitempty" kobune:"unsupported"`
	// LoadBalancerClass names the load balancer controller that is to
	// serve a LoadBalancer Service (MetalLB's, a cloud's); Kobune runs
	// none of its own, so any class is left to its controller. Immutable.
	LoadBalancerClass *string `json:"loadBalancerClass,omitempty"`
	// AllocateLoadBalancerNodePorts (default true) gives a LoadBalancer
	// Service node ports, as a NodePort Service has; false: none, for
	// load balancers that reach the pods directly.
	AllocateLoadBalancerNodePorts *bool `json:"allocateLoadBalancerNodePorts,omitempty"`
}

// HasNodePorts reports whether the Service is reachable on every node's
// node ports: a NodePort Service, and a LoadBalancer one unless
// allocateLoadBalancerNodePorts is false.
func (s *ServiceSpec) HasNodePorts() bool {
	return s.Type == ServiceTypeNodePort || (s.Type == ServiceTypeLoadBalancer && (s.AllocateLoadBalancerNodePorts == nil || *s.AllocateLoadBalancerNodePorts))
}

// ReachableFromOutside reports whether the Service's type takes traffic
// from outside the cluster (NodePort, LoadBalancer): what
// externalTrafficPolicy is about.
func (s *ServiceSpec) ReachableFromOutside() bool {
	return s.Type == ServiceTypeNodePort || s.Type == ServiceTypeLoadBalancer
}

// SessionAffinityConfig holds ClientIP affinity's timeout.
type SessionAffinityConfig struct {
	ClientIP *ClientIPConfig `json:"clientIP,omitempty"`
}

// ClientIPConfig is how long a client sticks to its endpoint.
type ClientIPConfig struct {
	TimeoutSeconds *int32 `json:"timeoutSeconds,omitempty"`
}

// Service types, affinities, IP families and traffic policies.
const (
	ServiceTypeClusterIP    = "ClusterIP"
	ServiceTypeNodePort     = "NodePort"
	ServiceTypeExternalName = "ExternalName"
	ServiceTypeLoadBalancer = "LoadBalancer"
	ClusterIPNone           = "None"

	ServiceAffinityNone     = "None"
	ServiceAffinityClientIP = "ClientIP"
	// DefaultClientIPServiceAffinitySeconds is ClientIP affinity's default timeout (3 hours).
	DefaultClientIPServiceAffinitySeconds int32 = 10800

	IPv4Protocol    = "IPv4"
	IPFamilySingle  = "SingleStack"
	IPFamilyPrefer  = "PreferDualStack"
	IPFamilyRequire = "RequireDualStack"
	TrafficCluster  = "Cluster"
	TrafficLocal    = "Local"
)

// ServicePort maps a service port to a target port on the pods.
type ServicePort struct {
	Name       string           `json:"name,omitempty"`
	Protocol   Protocol         `json:"protocol,omitempty"`
	Port       int32            `json:"port"`
	TargetPort meta.IntOrString `json:"targetPort,omitzero"`
	NodePort   int32            `json:"nodePort,omitempty"`
}

// ServiceStatus is what is observed of a Service.
type ServiceStatus struct {
	// LoadBalancer is where a load balancer outside the cluster says the
	// Service is reachable: written by its controller (Kobune provisions
	// no load balancer, as Kubernetes without a cloud provider; until a
	// controller such as MetalLB writes it, `get services` shows the
	// EXTERNAL-IP <pending>). The node proxy serves the Service on its
	// cluster IP and node ports, not on these addresses (kube-proxy also
	// routes them inside the cluster: docs/differences.md).
	LoadBalancer LoadBalancerStatus `json:"loadBalancer,omitzero"`
	// Conditions are the Service's conditions, written by its controllers.
	Conditions []meta.Condition `json:"conditions,omitempty"`
}

// LoadBalancerStatus lists the addresses of a load balancer (Services',
// and Ingresses' status).
type LoadBalancerStatus struct {
	Ingress []LoadBalancerIngress `json:"ingress,omitempty"`
}

// LoadBalancerIngress is one address of a load balancer.
type LoadBalancerIngress struct {
	IP       string `json:"ip,omitempty"`
	Hostname string `json:"hostname,omitempty"`
}

// Endpoints lists the ready and not-ready addresses behind a service.
type Endpoints struct {
	meta.TypeMeta   `json:",inline"`
	meta.ObjectMeta `json:"metadata"`
	Subsets         []EndpointSubset `json:"subsets,omitempty"`
}

// EndpointSubset is a set of addresses sharing a set of ports.
type EndpointSubset struct {
	Addresses         []EndpointAddress `json:"addresses,omitempty"`
	NotReadyAddresses []EndpointAddress `json:"notReadyAddresses,omitempty"`
	Ports             []EndpointPort    `json:"ports,omitempty"`
}

// EndpointAddress is one pod address.
type EndpointAddress struct {
	IP        string           `json:"ip"`
	Hostname  string           `json:"hostname,omitempty"`
	NodeName  *string          `json:"nodeName,omitempty"`
	TargetRef *ObjectReference `json:"targetRef,omitempty"`
}

// EndpointPort is one port of an endpoint subset.
type EndpointPort struct {
	Name     string   `json:"name,omitempty"`
	Port     int32    `json:"port"`
	Protocol Protocol `json:"protocol,omitempty"`
}

// ObjectReference points at another object (events, endpoints).
type ObjectReference struct {
	Kind            string `json:"kind,omitempty"`
	Namespace       string `json:"namespace,omitempty"`
	Name            string `json:"name,omitempty"`
	UID             string `json:"uid,omitempty"`
	APIVersion      string `json:"apiVersion,omitempty"`
	ResourceVersion string `json:"resourceVersion,omitempty"`
	FieldPath       string `json:"fieldPath,omitempty"`
}

// ConfigMap holds configuration as string (and binary) data.
type ConfigMap struct {
	meta.TypeMeta   `json:",inline"`
	meta.ObjectMeta `json:"metadata"`
	Immutable       *bool             `json:"immutable,omitempty"`
	Data            map[string]string `json:"data,omitempty"`
	BinaryData      map[string][]byte `json:"binaryData,omitempty"`
}

// Secret holds sensitive data, base64-encoded in JSON as in Kubernetes.
type Secret struct {
	meta.TypeMeta   `json:",inline"`
	meta.ObjectMeta `json:"metadata"`
	Immutable       *bool             `json:"immutable,omitempty"`
	Type            string            `json:"type,omitempty"`
	Data            map[string][]byte `json:"data,omitempty"`
	StringData      map[string]string `json:"stringData,omitempty"`
}

// Event records something that happened to an object.
type Event struct {
	meta.TypeMeta       `json:",inline"`
	meta.ObjectMeta     `json:"metadata"`
	InvolvedObject      ObjectReference  `json:"involvedObject"`
	Reason              string           `json:"reason,omitempty"`
	Message             string           `json:"message,omitempty"`
	Source              EventSource      `json:"source,omitzero"`
	FirstTimestamp      meta.Time        `json:"firstTimestamp,omitzero"`
	LastTimestamp       meta.Time        `json:"lastTimestamp,omitzero"`
	Count               int32            `json:"count,omitempty"`
	Type                string           `json:"type,omitempty"`
	EventTime           meta.MicroTime   `json:"eventTime,omitzero"`
	ReportingController string           `json:"reportingComponent,omitempty"`
	ReportingInstance   string           `json:"reportingInstance,omitempty"`
	Action              string           `json:"action,omitempty"`
	Series              *EventSeries     `json:"series,omitempty"`
	Related             *ObjectReference `json:"related,omitempty"`
}

// EventSeries is how often an event recurred, for events recorded as a
// series (events.k8s.io/v1's way of counting).
type EventSeries struct {
	Count            int32          `json:"count,omitempty"`
	LastObservedTime meta.MicroTime `json:"lastObservedTime,omitzero"`
}

// EventSource names the component that reported an event.
type EventSource struct {
	Component string `json:"component,omitempty"`
	Host      string `json:"host,omitempty"`
}

// Event types.
const (
	EventTypeNormal  = "Normal"
	EventTypeWarning = "Warning"
)
