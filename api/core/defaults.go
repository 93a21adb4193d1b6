package core

import (
	"strings"

	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/api/resource"
)

// DefaultSchedulerName is the scheduler a pod gets when it names none.
const DefaultSchedulerName = "default-scheduler"

// SchedulingDecisionAnnotation holds kobune-scheduler's record of how it
// chose the pod's node (each node's verdict and score); Kobune's own, set
// with the bind.
const SchedulingDecisionAnnotation = "scheduler.kobune.io/decision"

// DefaultTerminationGracePeriodSeconds is the grace period a pod gets when it names none.
const DefaultTerminationGracePeriodSeconds = 30

// SetDefaultsPodSpec fills the fields Kubernetes defaults in a pod spec.
func SetDefaultsPodSpec(s *PodSpec) {
	if s.DNSPolicy == "" {
		s.DNSPolicy = DNSClusterFirst
	}
	if s.EnableServiceLinks == nil {
		yes := true
		s.EnableServiceLinks = &yes
	}
	if s.RestartPolicy == "" {
		s.RestartPolicy = RestartPolicyAlways
	}
	if s.TerminationGracePeriodSeconds == nil {
		g := int64(DefaultTerminationGracePeriodSeconds)
		s.TerminationGracePeriodSeconds = &g
	}
	if s.HostNetwork {
		// As Kubernetes: a hostNetwork pod's ports are the node's ports, so
		// the scheduler's NodePorts filter keeps two of them apart.
		for _, cs := range [][]Container{s.InitContainers, s.Containers} {
			for i := range cs {
				for j := range cs[i].Ports {
					if p := &cs[i].Ports[j]; p.HostPort == 0 {
						p.HostPort = p.ContainerPort
					}
				}
			}
		}
	}
	if s.SchedulerName == "" {
		s.SchedulerName = DefaultSchedulerName
	}
	for i := range s.InitContainers {
		setDefaultsContainer(&s.InitContainers[i])
	}
	for i := range s.Containers {
		setDefaultsContainer(&s.Containers[i])
	}
	for i := range s.EphemeralContainers {
		setDefaultsContainer(&s.EphemeralContainers[i].Container)
	}
}

func setDefaultsContainer(c *Container) {
	if c.TerminationMessagePath == "" {
		c.TerminationMessagePath = DefaultTerminationMessagePath
	}
	if c.TerminationMessagePolicy == "" {
		c.TerminationMessagePolicy = TerminationMessageReadFile
	}
	if c.ImagePullPolicy == "" {
		c.ImagePullPolicy = PullIfNotPresent
		if imageTag(c.Image) == "latest" {
			c.ImagePullPolicy = PullAlways
		}
	}
	for i := range c.Ports {
		if c.Ports[i].Protocol == "" {
			c.Ports[i].Protocol = ProtocolTCP
		}
	}
	// Requests default to limits, as in Kubernetes.
	for name, limit := range c.Resources.Limits {
		if _, ok := c.Resources.Requests[name]; !ok {
			if c.Resources.Requests == nil {
				c.Resources.Requests = resource.List{}
			}
			c.Resources.Requests[name] = limit.Copy()
		}
	}
	for _, p := range []*Probe{c.LivenessProbe, c.ReadinessProbe, c.StartupProbe} {
		setDefaultsProbe(p)
	}
}

func setDefaultsProbe(p *Probe) {
	if p == nil {
		return
	}
	if p.TimeoutSeconds == 0 {
		p.TimeoutSeconds = 1
	}
	if p.PeriodSeconds == 0 {
		p.PeriodSeconds = 10
	}
	if p.SuccessThreshold == 0 {
		p.SuccessThreshold = 1
	}
	if p.FailureThreshold == 0 {
		p.FailureThreshold = 3
	}
	if h := p.HTTPGet; h != nil {
		if h.Path == "" {
			h.Path = "/"
		}
		if h.Scheme == "" {
			h.Scheme = "HTTP"
		}
	}
}

// imageTag returns the tag of an image reference, "latest" when it has none
// (and no digest).
func imageTag(image string) string {
	if strings.Contains(image, "@") {
		return ""
	}
	last := image[strings.LastIndex(image, "/")+1:]
	if _, tag, ok := strings.Cut(last, ":"); ok {
		return tag
	}
	return "latest"
}

// SetDefaultsPod fills pod defaults.
func SetDefaultsPod(p *Pod) { SetDefaultsPodSpec(&p.Spec) }

// SetDefaultsService fills service defaults as Kubernetes does: type
// ClusterIP, sessionAffinity None (ClientIP with a 3-hour timeout),
// protocol TCP, targetPort equal to port, internalTrafficPolicy Cluster,
// externalTrafficPolicy Cluster for NodePorts; IPv4 single stack for
// services with a cluster IP (the API server fills clusterIPs).
func SetDefaultsService(s *Service) {
	sp := &s.Spec
	if sp.Type == "" {
		sp.Type = ServiceTypeClusterIP
	}
	if sp.SessionAffinity == "" {
		sp.SessionAffinity = ServiceAffinityNone
	}
	if sp.SessionAffinity == ServiceAffinityClientIP {
		if sp.SessionAffinityConfig == nil {
			sp.SessionAffinityConfig = &SessionAffinityConfig{}
		}
		if sp.SessionAffinityConfig.ClientIP == nil {
			sp.SessionAffinityConfig.ClientIP = &ClientIPConfig{}
		}
		if sp.SessionAffinityConfig.ClientIP.TimeoutSeconds == nil {
			t := DefaultClientIPServiceAffinitySeconds
			sp.SessionAffinityConfig.ClientIP.TimeoutSeconds = &t
		}
	}
	if sp.Type != ServiceTypeExternalName {
		if sp.InternalTrafficPolicy == nil {
			p := TrafficCluster
			sp.InternalTrafficPolicy = &p
		}
		if len(sp.IPFamilies) == 0 {
			sp.IPFamilies = []string{IPv4Protocol}
		}
		if sp.IPFamilyPolicy == nil {
			p := IPFamilySingle
			sp.IPFamilyPolicy = &p
		}
		if sp.ClusterIP == "" && len(sp.ClusterIPs) > 0 {
			sp.ClusterIP = sp.ClusterIPs[0]
		}
	}
	if sp.ReachableFromOutside() && sp.ExternalTrafficPolicy == "" {
		sp.ExternalTrafficPolicy = TrafficCluster
	}
	if sp.Type == ServiceTypeLoadBalancer && sp.AllocateLoadBalancerNodePorts == nil {
		yes := true
		sp.AllocateLoadBalancerNodePorts = &yes
	}
	for i := range s.Spec.Ports {
		p := &s.Spec.Ports[i]
		if p.Protocol == "" {
			p.Protocol = ProtocolTCP
		}
		if !p.TargetPort.IsString && p.TargetPort.IntVal == 0 {
			p.TargetPort = meta.FromInt(p.Port)
		}
	}
}

// SetDefaultsSecret gives a secret the Opaque type and folds stringData
// into data, as the Kubernetes API server does.
func SetDefaultsSecret(s *Secret) {
	if s.Type == "" {
		s.Type = "Opaque"
	}
	for k, v := range s.StringData {
		if s.Data == nil {
			s.Data = map[string][]byte{}
		}
		s.Data[k] = []byte(v)
	}
	s.StringData = nil
}

// LabelMetadataName is the label every namespace carries with its own
// name.
const LabelMetadataName = "kubernetes.io/metadata.name"

// SetDefaultsNamespace sets the phase, the "kubernetes" finalizer and the
// kubernetes.io/metadata.name label.
func SetDefaultsNamespace(n *Namespace) {
	if n.Name != "" { // as Kubernetes: the name as a label, for namespaceSelectors (written on every write)
		if n.Labels[LabelMetadataName] != n.Name {
			labels := make(map[string]string, len(n.Labels)+1)
			for k, v := range n.Labels {
				labels[k] = v
			}
			labels[LabelMetadataName] = n.Name
			n.Labels = labels
		}
	}
	if n.Status.Phase == "" {
		n.Status.Phase = NamespaceActive
	}
}
