package core

import (
	"fmt"
	"net"
	"path"
	"slices"
	"strings"

	"github.com/kobune/kobune/api/resource"
	"github.com/kobune/kobune/api/selector"
	v "github.com/kobune/kobune/api/validation"
)

var (
	restartPolicies            = []string{string(RestartPolicyAlways), string(RestartPolicyOnFailure), string(RestartPolicyNever)}
	pullPolicies               = []string{string(PullAlways), string(PullIfNotPresent), string(PullNever)}
	terminationMessagePolicies = []string{string(TerminationMessageReadFile), string(TerminationMessageFallbackToLogsOnError)}
	protocols                  = []string{string(ProtocolTCP), string(ProtocolUDP), string(ProtocolSCTP)}
	dnsPolicies                = []string{"ClusterFirst", "ClusterFirstWithHostNet", "Default", "None"}
	taintEffects               = []string{string(TaintNoSchedule), string(TaintPreferNoSchedule), string(TaintNoExecute)}
	nodeSelectorOps            = []string{"In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"}
	supportedFieldRef          = map[string]bool{
		"metadata.name": true, "metadata.namespace": true, "metadata.uid": true,
		"spec.nodeName": true, "spec.serviceAccountName": true,
		"status.hostIP": true, "status.hostIPs": true, "status.podIP": true, "status.podIPs": true,
	}
	supportedResources = map[resource.Name]bool{resource.CPU: true, resource.Memory: true, resource.EphemeralStorage: true}
)

// ValidatePod checks a pod.
func ValidatePod(p *Pod) v.ErrorList {
	errs := v.ValidateObjectMeta(&p.ObjectMeta, true, v.IsDNS1123Subdomain, v.NewPath("metadata"))
	errs = append(errs, ValidatePodSpec(&p.Spec, v.NewPath("spec"))...)
	if p.Spec.NodeName != "" && len(p.Spec.SchedulingGates) > 0 {
		errs = append(errs, v.NewForbidden(v.NewPath("spec", "nodeName"), "cannot be set until all schedulingGates have been cleared"))
	}
	return errs
}

// ValidatePodCreate adds the rules of a new pod: ephemeral containers come
// only later, through the pods/ephemeralcontainers subresource.
func ValidatePodCreate(p *Pod) v.ErrorList {
	if len(p.Spec.EphemeralContainers) > 0 {
		return v.ErrorList{v.NewForbidden(v.NewPath("spec", "ephemeralContainers"), "cannot be set on create")}
	}
	return nil
}

// validateEphemeralContainers checks ephemeral containers as Kubernetes
// does: a container's rules, a name no other container of the pod has, no
// ports, probes, lifecycle hooks, resources or restart policy, and a
// target that is one of the pod's containers.
func validateEphemeralContainers(s *PodSpec, p *Path, names map[string]bool, vols map[string]*Volume) v.ErrorList {
	var errs v.ErrorList
	cs := make([]Container, len(s.EphemeralContainers))
	for i := range s.EphemeralContainers {
		cs[i] = s.EphemeralContainers[i].Container
	}
	errs = append(errs, validateContainers(s, cs, p, names, vols, false)...)
	for i, ec := range s.EphemeralContainers {
		ep := p.Index(i)
		for _, f := range []struct {
			name string
			set  bool
		}{{"ports", len(ec.Ports) > 0}, {"livenessProbe", ec.LivenessProbe != nil}, {"readinessProbe", ec.ReadinessProbe != nil},
			{"startupProbe", ec.StartupProbe != nil}, {"lifecycle", ec.Lifecycle != nil}, {"restartPolicy", ec.RestartPolicy != nil},
			{"resources", len(ec.Resources.Requests) > 0 || len(ec.Resources.Limits) > 0}, {"resizePolicy", len(ec.ResizePolicy) > 0}} {
			if f.set {
				errs = append(errs, v.NewForbidden(ep.Child(f.name), "cannot be set for an Ephemeral Container"))
			}
		}
		if t := ec.TargetContainerName; t != "" && !slices.ContainsFunc(append(slices.Clone(s.InitContainers), s.Containers...), func(c Container) bool { return c.Name == t }) {
			errs = append(errs, v.NewInvalid(ep.Child("targetContainerName"), t, "must be the name of one of the pod's containers"))
		}
	}
	return errs
}

// ValidatePodEphemeralContainersUpdate: a write of the ephemeral
// containers subresource may only add ephemeral containers; one added
// before is neither changed nor removed.
func ValidatePodEphemeralContainersUpdate(newPod, oldPod *Pod) v.ErrorList {
	var errs v.ErrorList
	p := v.NewPath("spec", "ephemeralContainers")
	now := map[string]EphemeralContainer{}
	for _, ec := range newPod.Spec.EphemeralContainers {
		now[ec.Name] = ec
	}
	for _, old := range oldPod.Spec.EphemeralContainers {
		ec, ok := now[old.Name]
		switch {
		case !ok:
			errs = append(errs, v.NewForbidden(p, fmt.Sprintf("existing ephemeral containers %q may not be removed", old.Name)))
		case !jsonEqual(ec, old):
			errs = append(errs, v.NewForbidden(p, fmt.Sprintf("existing ephemeral containers %q may not be changed", old.Name)))
		}
	}
	return errs
}

// validateResizePolicy: cpu and memory at most once each, NotRequired or
// RestartContainer, and never a restart in a pod that is not restarted.
func validateResizePolicy(policies []ContainerResizePolicy, podPolicy RestartPolicy, p *Path) v.ErrorList {
	var errs v.ErrorList
	seen := map[resource.Name]bool{}
	for i, rp := range policies {
		ip := p.Index(i)
		switch {
		case rp.ResourceName == "":
			errs = append(errs, v.NewRequired(ip.Child("resourceName"), ""))
		case rp.ResourceName != resource.CPU && rp.ResourceName != resource.Memory:
			errs = append(errs, v.NewNotSupported(ip.Child("resourceName"), string(rp.ResourceName), []string{"cpu", "memory"}))
		case seen[rp.ResourceName]:
			errs = append(errs, v.NewDuplicate(ip.Child("resourceName"), string(rp.ResourceName)))
		}
		seen[rp.ResourceName] = true
		switch rp.RestartPolicy {
		case ResizeNotRequired, ResizeRestartContainer:
		case "":
			errs = append(errs, v.NewRequired(ip.Child("restartPolicy"), ""))
		default:
			errs = append(errs, v.NewNotSupported(ip.Child("restartPolicy"), string(rp.RestartPolicy), []string{string(ResizeNotRequired), string(ResizeRestartContainer)}))
		}
		if podPolicy == RestartPolicyNever && rp.RestartPolicy == ResizeRestartContainer {
			errs = append(errs, v.NewInvalid(ip.Child("restartPolicy"), rp.RestartPolicy, "must be 'NotRequired' when pod `restartPolicy` is 'Never'"))
		}
	}
	return errs
}

// ValidatePodResize judges a write of the pods/NAME/resize subresource
// (newPod is the stored pod with the written containers' resources and
// resize policies, as kube-apiserver's podResizeStrategy takes them): the
// pod stays valid, its QoS class stays, a request or limit may change but
// not be removed, only cpu and memory change, and an ordinary init
// container (which has run to its end) is not resized.
func ValidatePodResize(newPod, oldPod *Pod) v.ErrorList {
	var errs v.ErrorList
	spec := v.NewPath("spec")
	if PodQOSClass(&oldPod.Spec) != PodQOSClass(&newPod.Spec) {
		errs = append(errs, v.NewInvalid(spec, PodQOSClass(&newPod.Spec), "Pod QOS Class may not change as a result of resizing"))
	}
	for _, list := range []struct {
		name     string
		new, old []Container
	}{{"initContainers", newPod.Spec.InitContainers, oldPod.Spec.InitContainers}, {"containers", newPod.Spec.Containers, oldPod.Spec.Containers}} {
		if len(list.new) != len(list.old) {
			errs = append(errs, v.NewForbidden(spec.Child(list.name), "containers may not be added or removed on resize"))
			continue
		}
		for i := range list.new {
			n, o := &list.new[i], &list.old[i]
			cp := spec.Child(list.name).Index(i)
			if n.Name != o.Name {
				errs = append(errs, v.NewForbidden(cp.Child("name"), "containers may not be renamed or reordered on resize"))
				continue
			}
			changed := !jsonEqual(n.Resources, o.Resources) || !jsonEqual(n.ResizePolicy, o.ResizePolicy)
			if list.name == "initContainers" && !o.IsSidecar() {
				if changed {
					errs = append(errs, v.NewForbidden(spec, "resources for non-sidecar init containers are immutable"))
				}
				continue
			}
			rp := cp.Child("resources")
			if removed(n.Resources.Requests, o.Resources.Requests) {
				errs = append(errs, v.NewForbidden(rp.Child("requests"), "resource requests cannot be removed"))
			}
			if removed(n.Resources.Limits, o.Resources.Limits) {
				errs = append(errs, v.NewForbidden(rp.Child("limits"), "resource limits cannot be removed"))
			}
			if !jsonEqual(otherThanCPUAndMemory(n.Resources), otherThanCPUAndMemory(o.Resources)) {
				errs = append(errs, v.NewForbidden(spec, "only cpu and memory resources are mutable"))
			}
		}
	}
	return errs
}

// removed says whether a resource of old is missing from now.
func removed(now, old resource.List) bool {
	for name := range old {
		if _, ok := now[name]; !ok {
			return true
		}
	}
	return false
}

// otherThanCPUAndMemory is r without cpu and memory.
func otherThanCPUAndMemory(r ResourceRequirements) ResourceRequirements {
	var out ResourceRequirements
	for _, pair := range []struct{ from, to *resource.List }{{&r.Requests, &out.Requests}, {&r.Limits, &out.Limits}} {
		for name, q := range *pair.from {
			if name != resource.CPU && name != resource.Memory {
				if *pair.to == nil {
					*pair.to = resource.List{}
				}
				(*pair.to)[name] = q
			}
		}
	}
	return out
}

// validateSchedulingGates: each gate a qualified name, none twice.
func validateSchedulingGates(gates []PodSchedulingGate, p *Path) v.ErrorList {
	var errs v.ErrorList
	seen := map[string]bool{}
	for i, g := range gates {
		if err := selector.ValidLabelKey(g.Name); err != nil {
			errs = append(errs, v.NewInvalid(p.Index(i).Child("name"), g.Name, err.Error()))
		}
		if seen[g.Name] {
			errs = append(errs, v.NewDuplicate(p.Index(i).Child("name"), g.Name))
		}
		seen[g.Name] = true
	}
	return errs
}

// ValidatePodSpec checks a pod spec (also the template of workload kinds).
func ValidatePodSpec(s *PodSpec, p *Path) v.ErrorList {
	var errs v.ErrorList
	if len(s.Containers) == 0 {
		errs = append(errs, v.NewRequired(p.Child("containers"), "a pod needs at least one container"))
	}
	names := map[string]bool{}
	vols, verrs := validateVolumes(s, p)
	errs = append(errs, verrs...)
	errs = append(errs, validateContainers(s, s.InitContainers, p.Child("initContainers"), names, vols, true)...)
	errs = append(errs, validateContainers(s, s.Containers, p.Child("containers"), names, vols, false)...)
	errs = append(errs, validateEphemeralContainers(s, p.Child("ephemeralContainers"), names, vols)...)
	grace := int64(DefaultTerminationGracePeriodSeconds)
	if s.TerminationGracePeriodSeconds != nil {
		grace = *s.TerminationGracePeriodSeconds
	}
	for i := range s.Containers {
		errs = append(errs, validateLifecycle(s.Containers[i].Lifecycle, p.Child("containers").Index(i).Child("lifecycle"), grace)...)
	}
	for i := range s.InitContainers {
		if s.InitContainers[i].IsSidecar() {
			errs = append(errs, validateLifecycle(s.InitContainers[i].Lifecycle, p.Child("initContainers").Index(i).Child("lifecycle"), grace)...)
		}
	}
	errs = append(errs, validateHostPorts(s, p)...)
	errs = append(errs, validatePodTotals(s, p)...)
	errs = append(errs, validatePodSecurityContext(s.SecurityContext, p.Child("securityContext"))...)
	errs = append(errs, validateSysctls(s, p.Child("securityContext", "sysctls"))...)
	if !in(string(s.RestartPolicy), restartPolicies) {
		errs = append(errs, v.NewNotSupported(p.Child("restartPolicy"), string(s.RestartPolicy), restartPolicies))
	}
	if s.DNSPolicy != "" && !in(s.DNSPolicy, dnsPolicies) {
		errs = append(errs, v.NewNotSupported(p.Child("dnsPolicy"), s.DNSPolicy, dnsPolicies))
	}
	errs = append(errs, validateDNSConfig(s, p)...)
	errs = append(errs, validateSchedulingGates(s.SchedulingGates, p.Child("schedulingGates"))...)
	if s.RuntimeClassName != nil {
		if msg := v.IsDNS1123Subdomain(*s.RuntimeClassName); msg != "" {
			errs = append(errs, v.NewInvalid(p.Child("runtimeClassName"), *s.RuntimeClassName, msg))
		}
	}
	for _, name := range s.Overhead.Names() {
		if q := s.Overhead[name]; q.Sign() < 0 {
			errs = append(errs, v.NewInvalid(p.Child("overhead").Key(string(name)), q.String(), "must be greater than or equal to 0"))
		}
	}
	for i, a := range s.HostAliases {
		ap := p.Child("hostAliases").Index(i)
		if net.ParseIP(a.IP) == nil {
			errs = append(errs, v.NewInvalid(ap.Child("ip"), a.IP, "must be a valid IP address"))
		}
		if len(a.Hostnames) == 0 {
			errs = append(errs, v.NewRequired(ap.Child("hostnames"), ""))
		}
		for j, h := range a.Hostnames {
			if msg := v.IsDNS1123Subdomain(h); msg != "" {
				errs = append(errs, v.NewInvalid(ap.Child("hostnames").Index(j), h, msg))
			}
		}
	}
	if s.TerminationGracePeriodSeconds != nil {
		errs = append(errs, v.ValidateNonnegative(*s.TerminationGracePeriodSeconds, p.Child("terminationGracePeriodSeconds"))...)
	}
	if s.ActiveDeadlineSeconds != nil && *s.ActiveDeadlineSeconds <= 0 {
		errs = append(errs, v.NewInvalid(p.Child("activeDeadlineSeconds"), *s.ActiveDeadlineSeconds, "must be greater than 0"))
	}
	errs = append(errs, v.ValidateLabels(s.NodeSelector, p.Child("nodeSelector"))...)
	if s.NodeName != "" {
		if msg := v.IsDNS1123Subdomain(s.NodeName); msg != "" {
			errs = append(errs, v.NewInvalid(p.Child("nodeName"), s.NodeName, msg))
		}
	}
	if s.PriorityClassName != "" {
		if msg := v.IsDNS1123Subdomain(s.PriorityClassName); msg != "" {
			errs = append(errs, v.NewInvalid(p.Child("priorityClassName"), s.PriorityClassName, msg))
		}
	}
	for i := range s.Tolerations {
		errs = append(errs, validateToleration(&s.Tolerations[i], p.Child("tolerations").Index(i))...)
	}
	errs = append(errs, validateAffinity(s.Affinity, p.Child("affinity"))...)
	for i, c := range s.TopologySpreadConstraints {
		cp := p.Child("topologySpreadConstraints").Index(i)
		if c.MaxSkew <= 0 {
			errs = append(errs, v.NewInvalid(cp.Child("maxSkew"), c.MaxSkew, "must be greater than 0"))
		}
		if c.TopologyKey == "" {
			errs = append(errs, v.NewRequired(cp.Child("topologyKey"), ""))
		}
		if c.WhenUnsatisfiable != "DoNotSchedule" && c.WhenUnsatisfiable != "ScheduleAnyway" {
			errs = append(errs, v.NewNotSupported(cp.Child("whenUnsatisfiable"), c.WhenUnsatisfiable, []string{"DoNotSchedule", "ScheduleAnyway"}))
		}
		errs = append(errs, v.ValidateLabelSelector(c.LabelSelector, cp.Child("labelSelector"))...)
	}
	return errs
}

// Path is the field path type, re-exported for the kinds that embed pod specs.
type Path = v.Path

func validateContainers(s *PodSpec, cs []Container, p *Path, names map[string]bool, vols map[string]*Volume, init bool) v.ErrorList {
	var errs v.ErrorList
	for i := range cs {
		c := &cs[i]
		cp := p.Index(i)
		if c.Name == "" {
			errs = append(errs, v.NewRequired(cp.Child("name"), ""))
		} else if msg := v.IsDNS1123Label(c.Name); msg != "" {
			errs = append(errs, v.NewInvalid(cp.Child("name"), c.Name, msg))
		} else if names[c.Name] {
			errs = append(errs, v.NewDuplicate(cp.Child("name"), c.Name))
		}
		names[c.Name] = true
		if c.Image == "" {
			errs = append(errs, v.NewRequired(cp.Child("image"), ""))
		}
		if c.SecurityContext != nil {
			errs = append(errs, validateSecurityContext(c.SecurityContext, cp.Child("securityContext"))...)
		}
		if c.ImagePullPolicy != "" && !in(string(c.ImagePullPolicy), pullPolicies) {
			errs = append(errs, v.NewNotSupported(cp.Child("imagePullPolicy"), string(c.ImagePullPolicy), pullPolicies))
		}
		if c.TerminationMessagePolicy != "" && !in(string(c.TerminationMessagePolicy), terminationMessagePolicies) {
			errs = append(errs, v.NewNotSupported(cp.Child("terminationMessagePolicy"), string(c.TerminationMessagePolicy), terminationMessagePolicies))
		}
		if tp := c.TerminationMessagePath; tp != "" && (!path.IsAbs(tp) || slices.Contains(strings.Split(tp, "/"), "..")) {
			errs = append(errs, v.NewInvalid(cp.Child("terminationMessagePath"), tp, "must be an absolute path without '..'"))
		}
		errs = append(errs, validatePorts(c.Ports, cp.Child("ports"))...)
		errs = append(errs, validateEnv(s, c.Env, cp.Child("env"))...)
		errs = append(errs, validateEnvFrom(c.EnvFrom, cp.Child("envFrom"))...)
		errs = append(errs, validateMounts(c.VolumeMounts, vols, cp.Child("volumeMounts"))...)
		errs = append(errs, validateResources(&c.Resources, cp.Child("resources"))...)
		errs = append(errs, validateResizePolicy(c.ResizePolicy, s.RestartPolicy, cp.Child("resizePolicy"))...)
		errs = append(errs, validateProbe(c.LivenessProbe, cp.Child("livenessProbe"), true)...)
		errs = append(errs, validateProbe(c.ReadinessProbe, cp.Child("readinessProbe"), false)...)
		errs = append(errs, validateProbe(c.StartupProbe, cp.Child("startupProbe"), true)...)
		switch {
		case c.RestartPolicy != nil && !init:
			errs = append(errs, v.NewForbidden(cp.Child("restartPolicy"), "may not be set for non-init containers"))
		case c.RestartPolicy != nil && *c.RestartPolicy != ContainerRestartPolicyAlways:
			errs = append(errs, v.NewNotSupported(cp.Child("restartPolicy"), string(*c.RestartPolicy), []string{string(ContainerRestartPolicyAlways)}))
		}
		// A sidecar may have probes and hooks; an ordinary init container,
		// which runs to its end, may not.
		if init && !c.IsSidecar() {
			for i, pr := range []*Probe{c.LivenessProbe, c.ReadinessProbe, c.StartupProbe} {
				if pr != nil {
					errs = append(errs, v.NewForbidden(cp.Child([]string{"livenessProbe", "readinessProbe", "startupProbe"}[i]), "may not be set for init containers without restartPolicy=Always"))
				}
			}
			if c.Lifecycle != nil {
				errs = append(errs, v.NewForbidden(cp.Child("lifecycle"), "may not be set for init containers without restartPolicy=Always"))
			}
		}
	}
	return errs
}

func validatePorts(ports []ContainerPort, p *Path) v.ErrorList {
	var errs v.ErrorList
	names := map[string]bool{}
	for i, port := range ports {
		pp := p.Index(i)
		if port.ContainerPort < 1 || port.ContainerPort > 65535 {
			errs = append(errs, v.NewInvalid(pp.Child("containerPort"), port.ContainerPort, "must be between 1 and 65535, inclusive"))
		}
		if port.HostPort < 0 || port.HostPort > 65535 {
			errs = append(errs, v.NewInvalid(pp.Child("hostPort"), port.HostPort, "must be between 1 and 65535, inclusive"))
		}
		if port.Name != "" {
			if msg := v.IsPortName(port.Name); msg != "" {
				errs = append(errs, v.NewInvalid(pp.Child("name"), port.Name, msg))
			} else if names[port.Name] {
				errs = append(errs, v.NewDuplicate(pp.Child("name"), port.Name))
			}
			names[port.Name] = true
		}
		if port.Protocol != "" && !in(string(port.Protocol), protocols) {
			errs = append(errs, v.NewNotSupported(pp.Child("protocol"), string(port.Protocol), protocols))
		}
		if port.HostIP != "" && net.ParseIP(port.HostIP) == nil {
			errs = append(errs, v.NewInvalid(pp.Child("hostIP"), port.HostIP, "must be an IP address"))
		}
	}
	return errs
}

func validateHostPorts(s *PodSpec, p *Path) v.ErrorList {
	var errs v.ErrorList
	seen := map[string]bool{}
	for i, c := range s.Containers {
		for j, port := range c.Ports {
			if port.HostPort == 0 {
				continue
			}
			if s.HostNetwork && port.HostPort != port.ContainerPort {
				errs = append(errs, v.NewInvalid(p.Child("containers").Index(i).Child("ports").Index(j).Child("hostPort"), port.HostPort,
					"must match `containerPort` when `hostNetwork` is true"))
			}
			key := fmt.Sprintf("%s/%d", port.Protocol, port.HostPort)
			if seen[key] {
				errs = append(errs, v.NewDuplicate(p.Child("containers").Index(i).Child("ports").Index(j).Child("hostPort"), key))
			}
			seen[key] = true
		}
	}
	return errs
}

func validateEnv(s *PodSpec, env []EnvVar, p *Path) v.ErrorList {
	var errs v.ErrorList
	for i, e := range env {
		ep := p.Index(i)
		if e.Name == "" {
			errs = append(errs, v.NewRequired(ep.Child("name"), ""))
		} else if msg := v.IsEnvVarName(e.Name); msg != "" {
			errs = append(errs, v.NewInvalid(ep.Child("name"), e.Name, msg))
		}
		if e.ValueFrom == nil {
			continue
		}
		if e.Value != "" {
			errs = append(errs, v.NewInvalid(ep.Child("valueFrom"), "", "may not be specified when `value` is not empty"))
		}
		src := e.ValueFrom
		n := 0
		for _, set := range []bool{src.FieldRef != nil, src.ResourceFieldRef != nil, src.ConfigMapKeyRef != nil, src.SecretKeyRef != nil} {
			if set {
				n++
			}
		}
		if n != 1 {
			errs = append(errs, v.NewInvalid(ep.Child("valueFrom"), "", "must specify exactly one of fieldRef, resourceFieldRef, configMapKeyRef and secretKeyRef"))
			continue
		}
		if src.FieldRef == nil {
			errs = append(errs, validateEnvSource(src, s, ep.Child("valueFrom"))...)
			continue
		}
		fp := e.ValueFrom.FieldRef.FieldPath
		if !supportedFieldRef[fp] && !isLabelOrAnnotationRef(fp) {
			errs = append(errs, v.NewNotSupported(ep.Child("valueFrom", "fieldRef", "fieldPath"), fp,
				[]string{"metadata.name", "metadata.namespace", "metadata.uid", "metadata.labels['<KEY>']", "metadata.annotations['<KEY>']", "spec.nodeName", "spec.serviceAccountName", "status.hostIP", "status.hostIPs", "status.podIP", "status.podIPs"}))
		}
	}
	return errs
}

func isLabelOrAnnotationRef(fp string) bool {
	for _, prefix := range []string{"metadata.labels['", "metadata.annotations['"} {
		if len(fp) > len(prefix)+2 && fp[:len(prefix)] == prefix && fp[len(fp)-2:] == "']" {
			return true
		}
	}
	return false
}

const tooLarge = "must be at most 9223372036854775807m (about 9.2e15, or 8Pi in bytes): larger values do not fit in 64 bits"

// validatePodTotals checks that the containers' requests and limits also
// add up to a value that fits: the scheduler sums them per pod and node.
func validatePodTotals(s *PodSpec, p *Path) v.ErrorList {
	var errs v.ErrorList
	for _, kind := range []string{"requests", "limits"} {
		sum := resource.List{}
		for _, c := range s.Containers {
			list := c.Resources.Requests
			if kind == "limits" {
				list = c.Resources.Limits
			}
			for name, q := range list {
				sum[name] = sum[name].Add(q)
			}
		}
		for _, name := range sum.Names() {
			if q := sum[name]; q.TooLarge() {
				errs = append(errs, v.NewInvalid(p.Child("containers"), q.String(), fmt.Sprintf("the containers' %s of %s add up to more than 9223372036854775807m, which does not fit in 64 bits", kind, name)))
			}
		}
	}
	return errs
}

func validateResources(r *ResourceRequirements, p *Path) v.ErrorList {
	var errs v.ErrorList
	for _, kind := range []struct {
		name string
		list resource.List
	}{{"limits", r.Limits}, {"requests", r.Requests}} {
		for _, name := range kind.list.Names() {
			q := kind.list[name]
			extended := IsExtendedResourceName(name)
			if !supportedResources[name] && !extended {
				errs = append(errs, v.NewNotSupported(p.Child(kind.name).Key(string(name)), string(name),
					[]string{"cpu", "memory", "ephemeral-storage", "an extended resource <domain>/<name> outside kubernetes.io"}))
			}
			if extended && q.MilliValue()%1000 != 0 {
				errs = append(errs, v.NewInvalid(p.Child(kind.name).Key(string(name)), q.String(), "must be an integer"))
			}
			if q.Sign() < 0 {
				errs = append(errs, v.NewInvalid(p.Child(kind.name).Key(string(name)), q.String(), "must be greater than or equal to 0"))
			}
			if q.TooLarge() {
				errs = append(errs, v.NewInvalid(p.Child(kind.name).Key(string(name)), q.String(), tooLarge))
			}
		}
	}
	for _, name := range r.Requests.Names() {
		req := r.Requests[name]
		limit, ok := r.Limits[name]
		switch {
		case IsExtendedResourceName(name) && !ok: // as Kubernetes: extended resources are not overcommitted
			errs = append(errs, v.NewRequired(p.Child("limits").Key(string(name)), "Limit must be set for non overcommitable resources"))
		case IsExtendedResourceName(name) && req.Cmp(limit) != 0:
			errs = append(errs, v.NewInvalid(p.Child("requests").Key(string(name)), req.String(),
				fmt.Sprintf("must be equal to %s limit of %s", name, limit.String())))
		case ok && req.Cmp(limit) > 0:
			errs = append(errs, v.NewInvalid(p.Child("requests").Key(string(name)), req.String(),
				fmt.Sprintf("must be less than or equal to %s limit of %s", name, limit.String())))
		}
	}
	return errs
}

func validateProbe(pr *Probe, p *Path, mustSucceedOnce bool) v.ErrorList {
	if pr == nil {
		return nil
	}
	var errs v.ErrorList
	handlers := 0
	if pr.Exec != nil {
		handlers++
		if len(pr.Exec.Command) == 0 {
			errs = append(errs, v.NewRequired(p.Child("exec", "command"), ""))
		}
	}
	if pr.HTTPGet != nil {
		handlers++
		errs = append(errs, validateProbePort(pr.HTTPGet.Port.IsString, pr.HTTPGet.Port.IntVal, pr.HTTPGet.Port.StrVal, p.Child("httpGet", "port"))...)
		if s := pr.HTTPGet.Scheme; s != "" && s != "HTTP" && s != "HTTPS" {
			errs = append(errs, v.NewNotSupported(p.Child("httpGet", "scheme"), s, []string{"HTTP", "HTTPS"}))
		}
	}
	if pr.TCPSocket != nil {
		handlers++
		errs = append(errs, validateProbePort(pr.TCPSocket.Port.IsString, pr.TCPSocket.Port.IntVal, pr.TCPSocket.Port.StrVal, p.Child("tcpSocket", "port"))...)
	}
	if pr.GRPC != nil {
		handlers++
		if port := pr.GRPC.Port; port < 1 || port > 65535 {
			errs = append(errs, v.NewInvalid(p.Child("grpc", "port"), port, "must be between 1 and 65535, inclusive"))
		}
	}
	switch {
	case handlers == 0:
		errs = append(errs, v.NewRequired(p, "must specify a handler type"))
	case handlers > 1:
		errs = append(errs, v.NewForbidden(p, "may not specify more than 1 handler type"))
	}
	for _, f := range [...]struct {
		name string
		val  int32
	}{{"initialDelaySeconds", pr.InitialDelaySeconds}, {"timeoutSeconds", pr.TimeoutSeconds},
		{"periodSeconds", pr.PeriodSeconds}, {"successThreshold", pr.SuccessThreshold}, {"failureThreshold", pr.FailureThreshold}} {
		if f.val < 0 {
			errs = append(errs, v.ValidateNonnegative(int64(f.val), p.Child(f.name))...)
		}
	}
	if mustSucceedOnce && pr.SuccessThreshold > 1 {
		errs = append(errs, v.NewInvalid(p.Child("successThreshold"), pr.SuccessThreshold, "must be 1"))
	}
	return errs
}

func validateLifecycle(l *Lifecycle, p *Path, grace int64) v.ErrorList {
	if l == nil {
		return nil
	}
	var errs v.ErrorList
	for _, h := range [...]struct {
		name string
		h    *LifecycleHandler
	}{{"postStart", l.PostStart}, {"preStop", l.PreStop}} {
		if h.h == nil {
			continue
		}
		hp := p.Child(h.name)
		handlers := 0
		if h.h.Exec != nil {
			handlers++
			if len(h.h.Exec.Command) == 0 {
				errs = append(errs, v.NewRequired(hp.Child("exec", "command"), ""))
			}
		}
		if h.h.HTTPGet != nil {
			handlers++
			errs = append(errs, validateProbePort(h.h.HTTPGet.Port.IsString, h.h.HTTPGet.Port.IntVal, h.h.HTTPGet.Port.StrVal, hp.Child("httpGet", "port"))...)
			if s := h.h.HTTPGet.Scheme; s != "" && s != "HTTP" && s != "HTTPS" {
				errs = append(errs, v.NewNotSupported(hp.Child("httpGet", "scheme"), s, []string{"HTTP", "HTTPS"}))
			}
		}
		if h.h.TCPSocket != nil {
			errs = append(errs, v.NewNotSupported(hp.Child("tcpSocket"), "tcpSocket", []string{"exec", "httpGet", "sleep"}))
			continue
		}
		if h.h.Sleep != nil {
			handlers++
			if n := h.h.Sleep.Seconds; n < 0 || n > grace {
				errs = append(errs, v.NewInvalid(hp.Child("sleep", "seconds"), n, fmt.Sprintf("must be between 0 and terminationGracePeriodSeconds (%d), inclusive", grace)))
			}
		}
		if handlers != 1 {
			errs = append(errs, v.NewInvalid(hp, handlers, "must specify exactly one of exec, httpGet and sleep"))
		}
	}
	return errs
}

func validateProbePort(isString bool, n int32, name string, p *Path) v.ErrorList {
	if isString {
		if msg := v.IsPortName(name); msg != "" {
			return v.ErrorList{v.NewInvalid(p, name, msg)}
		}
		return nil
	}
	if n < 1 || n > 65535 {
		return v.ErrorList{v.NewInvalid(p, n, "must be between 1 and 65535, inclusive")}
	}
	return nil
}

func validateToleration(t *Toleration, p *Path) v.ErrorList {
	var errs v.ErrorList
	switch t.Operator {
	case TolerationOpExists:
		if t.Value != "" {
			errs = append(errs, v.NewInvalid(p.Child("value"), t.Value, "value must be empty when `operator` is 'Exists'"))
		}
	case "", TolerationOpEqual:
		if t.Key == "" {
			errs = append(errs, v.NewInvalid(p.Child("operator"), string(t.Operator), "operator must be Exists when `key` is empty"))
		}
	default:
		errs = append(errs, v.NewNotSupported(p.Child("operator"), string(t.Operator), []string{"Equal", "Exists"}))
	}
	if t.Effect != "" && !in(string(t.Effect), taintEffects) {
		errs = append(errs, v.NewNotSupported(p.Child("effect"), string(t.Effect), taintEffects))
	}
	if t.TolerationSeconds != nil && t.Effect != TaintNoExecute {
		errs = append(errs, v.NewInvalid(p.Child("effect"), string(t.Effect), "effect must be 'NoExecute' when `tolerationSeconds` is set"))
	}
	return errs
}

func validateAffinity(a *Affinity, p *Path) v.ErrorList {
	if a == nil {
		return nil
	}
	var errs v.ErrorList
	if na := a.NodeAffinity; na != nil {
		if req := na.RequiredDuringSchedulingIgnoredDuringExecution; req != nil {
			rp := p.Child("nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution")
			if len(req.NodeSelectorTerms) == 0 {
				errs = append(errs, v.NewRequired(rp.Child("nodeSelectorTerms"), "must have at least one node selector term"))
			}
			for i := range req.NodeSelectorTerms {
				errs = append(errs, validateNodeSelectorTerm(&req.NodeSelectorTerms[i], rp.Child("nodeSelectorTerms").Index(i))...)
			}
		}
		for i, pref := range na.PreferredDuringSchedulingIgnoredDuringExecution {
			pp := p.Child("nodeAffinity", "preferredDuringSchedulingIgnoredDuringExecution").Index(i)
			if pref.Weight < 1 || pref.Weight > 100 {
				errs = append(errs, v.NewInvalid(pp.Child("weight"), pref.Weight, "must be in the range 1-100"))
			}
			errs = append(errs, validateNodeSelectorTerm(&pref.Preference, pp.Child("preference"))...)
		}
	}
	if pa := a.PodAffinity; pa != nil {
		errs = append(errs, validatePodAffinityTerms(pa.RequiredDuringSchedulingIgnoredDuringExecution, pa.PreferredDuringSchedulingIgnoredDuringExecution, p.Child("podAffinity"))...)
	}
	if pa := a.PodAntiAffinity; pa != nil {
		errs = append(errs, validatePodAffinityTerms(pa.RequiredDuringSchedulingIgnoredDuringExecution, pa.PreferredDuringSchedulingIgnoredDuringExecution, p.Child("podAntiAffinity"))...)
	}
	return errs
}

func validateNodeSelectorTerm(t *NodeSelectorTerm, p *Path) v.ErrorList {
	var errs v.ErrorList
	for i, r := range t.MatchExpressions {
		rp := p.Child("matchExpressions").Index(i)
		if !in(r.Operator, nodeSelectorOps) {
			errs = append(errs, v.NewNotSupported(rp.Child("operator"), r.Operator, nodeSelectorOps))
			continue
		}
		switch r.Operator {
		case "In", "NotIn":
			if len(r.Values) == 0 {
				errs = append(errs, v.NewRequired(rp.Child("values"), "must be specified when `operator` is 'In' or 'NotIn'"))
			}
		case "Exists", "DoesNotExist":
			if len(r.Values) > 0 {
				errs = append(errs, v.NewForbidden(rp.Child("values"), "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"))
			}
		case "Gt", "Lt":
			if len(r.Values) != 1 {
				errs = append(errs, v.NewRequired(rp.Child("values"), "must be specified single value when `operator` is 'Lt' or 'Gt'"))
			}
		}
	}
	return errs
}

func validatePodAffinityTerms(req []PodAffinityTerm, pref []WeightedPodAffinityTerm, p *Path) v.ErrorList {
	var errs v.ErrorList
	check := func(t PodAffinityTerm, tp *Path) {
		if t.TopologyKey == "" {
			errs = append(errs, v.NewRequired(tp.Child("topologyKey"), "can not be empty"))
		}
		errs = append(errs, v.ValidateLabelSelector(t.LabelSelector, tp.Child("labelSelector"))...)
	}
	for i, t := range req {
		check(t, p.Child("requiredDuringSchedulingIgnoredDuringExecution").Index(i))
	}
	for i, w := range pref {
		wp := p.Child("preferredDuringSchedulingIgnoredDuringExecution").Index(i)
		if w.Weight < 1 || w.Weight > 100 {
			errs = append(errs, v.NewInvalid(wp.Child("weight"), w.Weight, "must be in the range 1-100"))
		}
		check(w.PodAffinityTerm, wp.Child("podAffinityTerm"))
	}
	return errs
}

// ValidatePodUpdate (run after ValidatePod) allows only the changes Kubernetes allows on a running
// pod: container images, activeDeadlineSeconds, added tolerations and
// removed scheduling gates. nodeName is set once, by binding.
func ValidatePodUpdate(newPod, oldPod *Pod) v.ErrorList {
	var errs v.ErrorList
	a, b := mutableStripped(newPod.Spec), mutableStripped(oldPod.Spec)
	if !jsonEqual(a, b) {
		errs = append(errs, v.NewForbidden(v.NewPath("spec"), "pod updates may not change fields other than `spec.containers[*].image`, `spec.initContainers[*].image`, `spec.activeDeadlineSeconds`, `spec.tolerations` (only additions to existing tolerations) or `spec.schedulingGates` (only deletions)"))
	}
	// activeDeadlineSeconds may be set or shortened, not lengthened or
	// unset (the kubelet kills the pod when it passes).
	if o, n := oldPod.Spec.ActiveDeadlineSeconds, newPod.Spec.ActiveDeadlineSeconds; o != nil {
		p := v.NewPath("spec", "activeDeadlineSeconds")
		switch {
		case n == nil:
			errs = append(errs, v.NewInvalid(p, "null", "must not update from a positive integer to nil value"))
		case *n > *o:
			errs = append(errs, v.NewInvalid(p, *n, "must be less than or equal to previous value"))
		}
	}
	old := map[string]bool{}
	for _, g := range oldPod.Spec.SchedulingGates {
		old[g.Name] = true
	}
	for i, g := range newPod.Spec.SchedulingGates {
		if !old[g.Name] {
			errs = append(errs, v.NewForbidden(v.NewPath("spec", "schedulingGates").Index(i), fmt.Sprintf("only deletion is allowed, but found new scheduling gate '%s'", g.Name)))
		}
	}
	return errs
}

func mutableStripped(s PodSpec) PodSpec {
	s.Containers = append([]Container(nil), s.Containers...)
	s.InitContainers = append([]Container(nil), s.InitContainers...)
	for i := range s.Containers {
		s.Containers[i].Image = ""
	}
	for i := range s.InitContainers {
		s.InitContainers[i].Image = ""
	}
	s.ActiveDeadlineSeconds = nil
	s.Tolerations = nil
	s.SchedulingGates = nil
	return s
}

func jsonEqual(a, b any) bool { return v.JSONEqual(a, b) }

func in(s string, list []string) bool {
	for _, l := range list {
		if l == s {
			return true
		}
	}
	return false
}

// validateDNSConfig checks dnsConfig as Kubernetes does: at most 3
// nameservers (IP addresses), 32 search domains, and with dnsPolicy None
// at least one nameserver.
func validateDNSConfig(s *PodSpec, p *v.Path) v.ErrorList {
	var errs v.ErrorList
	c := s.DNSConfig
	if s.DNSPolicy == DNSNone && (c == nil || len(c.Nameservers) == 0) {
		errs = append(errs, v.NewRequired(p.Child("dnsConfig", "nameservers"), "must provide at least one DNS nameserver when dnsPolicy is None"))
	}
	if c == nil {
		return errs
	}
	if len(c.Nameservers) > 3 {
		errs = append(errs, v.NewInvalid(p.Child("dnsConfig", "nameservers"), c.Nameservers, "must not have more than 3 nameservers"))
	}
	for i, ns := range c.Nameservers {
		if net.ParseIP(ns) == nil {
			errs = append(errs, v.NewInvalid(p.Child("dnsConfig", "nameservers").Index(i), ns, "must be a valid IP address"))
		}
	}
	if len(c.Searches) > 32 {
		errs = append(errs, v.NewInvalid(p.Child("dnsConfig", "searches"), c.Searches, "must not have more than 32 search paths"))
	}
	for i, d := range c.Searches {
		if msg := v.IsDNS1123Subdomain(strings.TrimSuffix(d, ".")); msg != "" {
			errs = append(errs, v.NewInvalid(p.Child("dnsConfig", "searches").Index(i), d, msg))
		}
	}
	for i, o := range c.Options {
		if o.Name == "" {
			errs = append(errs, v.NewRequired(p.Child("dnsConfig", "options").Index(i).Child("name"), ""))
		}
	}
	return errs
}

// ValidateTolerations checks tolerations as a pod's are checked (a
// RuntimeClass's scheduling carries them too).
func ValidateTolerations(ts []Toleration, p *Path) v.ErrorList {
	var errs v.ErrorList
	for i := range ts {
		errs = append(errs, validateToleration(&ts[i], p.Index(i))...)
	}
	return errs
}
