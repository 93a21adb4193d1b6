package core

import (
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/api/resource"
)

// Pod is a group of containers that share a network namespace and run on one node.
type Pod struct {
	meta.TypeMeta   `json:",inline"`
	meta.ObjectMeta `json:"metadata"`
	Spec            PodSpec   `json:"spec"`
	Status          PodStatus `json:"status,omitzero"`
}

// PodTemplateSpec is the pod part of ReplicaSets, Deployments and the like.
type PodTemplateSpec struct {
	meta.ObjectMeta `json:"metadata,omitzero"`
	Spec            PodSpec `json:"spec"`
}

// RestartPolicy is Always, OnFailure or Never.
type RestartPolicy string

// Restart policies.
const (
	RestartPolicyAlways    RestartPolicy = "Always"
	RestartPolicyOnFailure RestartPolicy = "OnFailure"
	RestartPolicyNever     RestartPolicy = "Never"
)

// PodSpec is the desired state of a pod.
type PodSpec struct {
	InitContainers                []Container   `json:"initContainers,omitempty"`
	Containers                    []Container   `json:"containers"`
	RestartPolicy                 RestartPolicy `json:"restartPolicy,omitempty"`
	TerminationGracePeriodSeconds *int64        `json:"terminationGracePeriodSeconds,omitempty"`
	ActiveDeadlineSeconds         *int64        `json:"activeDeadlineSeconds,omitempty"`
	// DNSPolicy says what the pod's /etc/resolv.conf names: the cluster
	// DNS (ClusterFirst, the default; ClusterFirstWithHostNet for a
	// hostNetwork pod), the node's (Default), or only DNSConfig (None).
	DNSPolicy    string            `json:"dnsPolicy,omitempty"`
	DNSConfig    *PodDNSConfig     `json:"dnsConfig,omitempty"`
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`
	// ServiceAccountName is who the pod's processes are to the API
	// ("default" when empty: ServiceAccount admission).
	ServiceAccountName string `json:"serviceAccountName,omitempty"`
	// AutomountServiceAccountToken: false keeps the ServiceAccount's
	// token out of the pod (the ServiceAccount's own setting otherwise).
	AutomountServiceAccountToken *bool `json:"automountServiceAccountToken,omitempty"`
	// EnableServiceLinks: the pod's containers get the Services of its
	// namespace as environment variables (<NAME>_SERVICE_HOST ...; true by
	// default). The kubernetes Service's are always set.
	EnableServiceLinks        *bool                      `json:"enableServiceLinks,omitempty"`
	NodeName                  string                     `json:"nodeName,omitempty"`
	HostNetwork               bool                       `json:"hostNetwork,omitempty"`
	Hostname                  string                     `json:"hostname,omitempty"`
	Subdomain                 string                     `json:"subdomain,omitempty"`
	Affinity                  *Affinity                  `json:"affinity,omitempty"`
	SchedulerName             string                     `json:"schedulerName,omitempty"`
	Tolerations               []Toleration               `json:"tolerations,omitempty"`
	PriorityClassName         string                     `json:"priorityClassName,omitempty"`
	Priority                  *int32                     `json:"priority,omitempty"`
	PreemptionPolicy          *string                    `json:"preemptionPolicy,omitempty"`
	TopologySpreadConstraints []TopologySpreadConstraint `json:"topologySpreadConstraints,omitempty"`
	// HostAliases are extra lines of the pod's /etc/hosts.
	HostAliases []HostAlias `json:"hostAliases,omitempty"`
	// Volumes are what the containers' volumeMounts mount.
	Volumes []Volume `json:"volumes,omitempty"`
	// SecurityContext is what the containers run as (security.go).
	SecurityContext *PodSecurityContext `json:"securityContext,omitempty"`
	// HostPID and HostIPC put the containers in the node's PID and IPC
	// namespaces.
	HostPID bool `json:"hostPID,omitempty"`
	HostIPC bool `json:"hostIPC,omitempty"`
	// SchedulingGates hold the pod back from the scheduler while any is
	// left: set at creation, they may only be taken away (whoever added a
	// gate removes it when its condition is met). A gated pod is Pending
	// with the condition PodScheduled=False, reason SchedulingGated.
	SchedulingGates []PodSchedulingGate `json:"schedulingGates,omitempty"`
	// EphemeralContainers are added to a running pod through the
	// pods/NAME/ephemeralcontainers subresource (kubectl debug): each runs
	// once, in the pod's namespaces, and is never restarted; none may be
	// set at creation, and once added one is neither changed nor removed.
	EphemeralContainers []EphemeralContainer `json:"ephemeralContainers,omitempty"`
	// RuntimeClassName names the RuntimeClass the pod runs with: its
	// handler must be one the node has (Kobune's agents have runc, the
	// containerd default), and admission copies its overhead into
	// Overhead and merges its scheduling into the pod's.
	RuntimeClassName *string `json:"runtimeClassName,omitempty"`
	// Overhead is what running the pod costs beyond its containers, set
	// by admission from the RuntimeClass: the scheduler and quotas add it
	// to the pod's requests.
	Overhead resource.List `json:"overhead,omitempty"`
}

// EphemeralContainer is a container added to a running pod for debugging:
// a container's fields (without ports, probes, lifecycle hooks, resources
// or a restart policy) and, with TargetContainerName, the process
// namespace of that container, so its processes can be seen.
type EphemeralContainer struct {
	Container           `json:",inline"`
	TargetContainerName string `json:"targetContainerName,omitempty"`
}

// PodSchedulingGate is one gate: a qualified name.
type PodSchedulingGate struct {
	Name string `json:"name"`
}

// PodReasonSchedulingGated is the PodScheduled condition's reason while a
// pod has scheduling gates.
const PodReasonSchedulingGated = "SchedulingGated"

// HostAlias maps hostnames to an IP in the pod's /etc/hosts.
type HostAlias struct {
	IP        string   `json:"ip"`
	Hostnames []string `json:"hostnames,omitempty"`
}

// Container is one container of a pod.
type Container struct {
	Name       string          `json:"name"`
	Image      string          `json:"image,omitempty"`
	Command    []string        `json:"command,omitempty"`
	Args       []string        `json:"args,omitempty"`
	WorkingDir string          `json:"workingDir,omitempty"`
	Ports      []ContainerPort `json:"ports,omitempty"`
	Env        []EnvVar        `json:"env,omitempty"`
	// EnvFrom puts every key of ConfigMaps and Secrets in the environment
	// (Env wins a name both set).
	EnvFrom        []EnvFromSource      `json:"envFrom,omitempty"`
	VolumeMounts   []VolumeMount        `json:"volumeMounts,omitempty"`
	Resources      ResourceRequirements `json:"resources,omitzero"`
	LivenessProbe  *Probe               `json:"livenessProbe,omitempty"`
	ReadinessProbe *Probe               `json:"readinessProbe,omitempty"`
	StartupProbe   *Probe               `json:"startupProbe,omitempty"`
	// Lifecycle are the postStart and preStop hooks.
	Lifecycle *Lifecycle `json:"lifecycle,omitempty"`
	// TerminationMessagePath is the file, inside the container, whose
	// content (at most 4 KiB) the agent shows as the message of the
	// container's terminated state; default /dev/termination-log.
	TerminationMessagePath string `json:"terminationMessagePath,omitempty"`
	// TerminationMessagePolicy is File (the file only, the default) or
	// FallbackToLogsOnError (the log's last lines when the file is empty
	// and the container failed).
	TerminationMessagePolicy TerminationMessagePolicy `json:"terminationMessagePolicy,omitempty"`
	ImagePullPolicy          PullPolicy               `json:"imagePullPolicy,omitempty"`
	// SecurityContext overrides the pod's for this container.
	SecurityContext *SecurityContext `json:"securityContext,omitempty"`
	// RestartPolicy "Always" makes an init container a sidecar (Kubernetes'
	// native sidecar): it starts in its turn among the init containers, the
	// next one waits only until it has started (its startup probe passed),
	// it keeps running beside the containers, is restarted whenever it
	// exits whatever the pod's restartPolicy, may have probes and hooks,
	// and is stopped after the containers. Only init containers may set it.
	RestartPolicy *ContainerRestartPolicy `json:"restartPolicy,omitempty"`
	// ResizePolicy says, per resource (cpu, memory), what an in-place
	// resize (pods/NAME/resize) does to the running container:
	// NotRequired (the default) changes its cgroup limits while it runs,
	// RestartContainer restarts it with the new ones.
	ResizePolicy []ContainerResizePolicy `json:"resizePolicy,omitempty"`
	Stdin        bool                    `json:"stdin,omitempty" kobune:"unsupported"`
	TTY          bool                    `json:"tty,omitempty" kobune:"unsupported"`
}

// ContainerResizePolicy is what resizing one resource of a running
// container does to it.
type ContainerResizePolicy struct {
	ResourceName  resource.Name               `json:"resourceName"`
	RestartPolicy ResourceResizeRestartPolicy `json:"restartPolicy"`
}

// ResourceResizeRestartPolicy is NotRequired or RestartContainer.
type ResourceResizeRestartPolicy string

// Resize restart policies.
const (
	ResizeNotRequired      ResourceResizeRestartPolicy = "NotRequired"
	ResizeRestartContainer ResourceResizeRestartPolicy = "RestartContainer"
)

// ContainerRestartPolicy is a container's own restart policy; only Always
// (on an init container: a sidecar) is supported.
type ContainerRestartPolicy string

// ContainerRestartPolicyAlways makes an init container a sidecar.
const ContainerRestartPolicyAlways ContainerRestartPolicy = "Always"

// IsSidecar reports whether c is a sidecar: an init container with
// restartPolicy Always.
func (c *Container) IsSidecar() bool {
	return c.RestartPolicy != nil && *c.RestartPolicy == ContainerRestartPolicyAlways
}

// Container is the init container or container named name, or nil.
func (s *PodSpec) Container(name string) *Container {
	for _, list := range [2][]Container{s.InitContainers, s.Containers} {
		for i := range list {
			if list[i].Name == name {
				return &list[i]
			}
		}
	}
	return nil
}

// Sidecars names the pod's sidecar containers.
func (s *PodSpec) Sidecars() map[string]bool {
	var out map[string]bool
	for i := range s.InitContainers {
		if s.InitContainers[i].IsSidecar() {
			if out == nil {
				out = map[string]bool{}
			}
			out[s.InitContainers[i].Name] = true
		}
	}
	return out
}

// PodAggregate adds up one amount (a resource request, a limit) over a
// pod's containers as Kubernetes does: the containers and every sidecar
// run together, so they are summed; an ordinary init container runs alone
// beside the sidecars started before it; the pod needs the larger of the
// two. of gives a container's amount; add and larger combine amounts
// (the zero T is nothing).
func PodAggregate[T any](spec *PodSpec, of func(*Container) T, add func(a, b T) T, larger func(a, b T) T) T {
	var sum, sidecars, inits T
	for i := range spec.Containers {
		sum = add(sum, of(&spec.Containers[i]))
	}
	for i := range spec.InitContainers {
		c := &spec.InitContainers[i]
		if c.IsSidecar() {
			sidecars = add(sidecars, of(c))
			sum = add(sum, of(c))
			inits = larger(inits, sidecars)
			continue
		}
		inits = larger(inits, add(of(c), sidecars))
	}
	return larger(sum, inits)
}

// TerminationMessagePolicy says where a terminated container's message comes from.
type TerminationMessagePolicy string

// The termination message policies, and the default path.
const (
	TerminationMessageReadFile              TerminationMessagePolicy = "File"
	TerminationMessageFallbackToLogsOnError TerminationMessagePolicy = "FallbackToLogsOnError"
	DefaultTerminationMessagePath                                    = "/dev/termination-log"
)

// PullPolicy is Always, IfNotPresent or Never.
type PullPolicy string

// Image pull policies.
const (
	PullAlways       PullPolicy = "Always"
	PullIfNotPresent PullPolicy = "IfNotPresent"
	PullNever        PullPolicy = "Never"
)

// Protocol is TCP, UDP or SCTP.
type Protocol string

// Protocols.
const (
	ProtocolTCP  Protocol = "TCP"
	ProtocolUDP  Protocol = "UDP"
	ProtocolSCTP Protocol = "SCTP"
)

// ContainerPort is a port a container listens on.
type ContainerPort struct {
	Name          string   `json:"name,omitempty"`
	HostPort      int32    `json:"hostPort,omitempty"`
	ContainerPort int32    `json:"containerPort"`
	Protocol      Protocol `json:"protocol,omitempty"`
	HostIP        string   `json:"hostIP,omitempty"`
}

// EnvVar is an environment variable: a value or a reference.
type EnvVar struct {
	Name      string        `json:"name"`
	Value     string        `json:"value,omitempty"`
	ValueFrom *EnvVarSource `json:"valueFrom,omitempty"`
}

// EnvVarSource is where an environment variable's value comes from: a
// field of the pod, a container's resources, a key of a ConfigMap or
// Secret (exactly one).
type EnvVarSource struct {
	FieldRef         *ObjectFieldSelector   `json:"fieldRef,omitempty"`
	ResourceFieldRef *ResourceFieldSelector `json:"resourceFieldRef,omitempty"`
	ConfigMapKeyRef  *ConfigMapKeySelector  `json:"configMapKeyRef,omitempty"`
	SecretKeyRef     *SecretKeySelector     `json:"secretKeyRef,omitempty"`
}

// ObjectFieldSelector names a field of the pod (metadata.name, status.podIP, spec.nodeName, ...).
type ObjectFieldSelector struct {
	APIVersion string `json:"apiVersion,omitempty"`
	FieldPath  string `json:"fieldPath"`
}

// ResourceRequirements are a container's requests and limits.
type ResourceRequirements struct {
	Limits   resource.List `json:"limits,omitempty"`
	Requests resource.List `json:"requests,omitempty"`
}

// IsZero reports whether neither requests nor limits are set.
func (r ResourceRequirements) IsZero() bool { return len(r.Limits) == 0 && len(r.Requests) == 0 }

// Probe is a liveness, readiness or startup check.
type Probe struct {
	ProbeHandler                  `json:",inline"`
	InitialDelaySeconds           int32  `json:"initialDelaySeconds,omitempty"`
	TimeoutSeconds                int32  `json:"timeoutSeconds,omitempty"`
	PeriodSeconds                 int32  `json:"periodSeconds,omitempty"`
	SuccessThreshold              int32  `json:"successThreshold,omitempty"`
	FailureThreshold              int32  `json:"failureThreshold,omitempty"`
	TerminationGracePeriodSeconds *int64 `json:"terminationGracePeriodSeconds,omitempty"`
}

// ProbeHandler is exactly one of exec, httpGet, tcpSocket and grpc.
type ProbeHandler struct {
	Exec      *ExecAction      `json:"exec,omitempty"`
	HTTPGet   *HTTPGetAction   `json:"httpGet,omitempty"`
	TCPSocket *TCPSocketAction `json:"tcpSocket,omitempty"`
	GRPC      *GRPCAction      `json:"grpc,omitempty"`
}

// GRPCAction asks the container's gRPC health service (grpc.health.v1
// Health/Check) on port for service; SERVING is healthy.
type GRPCAction struct {
	Port int32 `json:"port"`
	// Service is the name passed in the request; "" (the default) asks
	// about the server as a whole.
	Service *string `json:"service,omitempty"`
}

// Lifecycle are the hooks the agent runs for a container: postStart right
// after it started (the container counts as started only once it
// returns; a failure kills it), preStop before it is stopped, within the
// pod's grace period (deletion, or a failed liveness probe).
type Lifecycle struct {
	PostStart *LifecycleHandler `json:"postStart,omitempty"`
	PreStop   *LifecycleHandler `json:"preStop,omitempty"`
}

// LifecycleHandler is exactly one of exec, httpGet and sleep. (Kubernetes
// also keeps tcpSocket here for compatibility and never runs it; Kobune
// refuses it rather than store a hook that does nothing.)
type LifecycleHandler struct {
	Exec      *ExecAction      `json:"exec,omitempty"`
	HTTPGet   *HTTPGetAction   `json:"httpGet,omitempty"`
	TCPSocket *TCPSocketAction `json:"tcpSocket,omitempty"`
	Sleep     *SleepAction     `json:"sleep,omitempty"`
}

// SleepAction waits; as a preStop hook it keeps a pod serving while the
// nodes take its endpoint out of their Service rules.
type SleepAction struct {
	Seconds int64 `json:"seconds"`
}

// ExecAction runs a command in the container; exit 0 is success.
type ExecAction struct {
	Command []string `json:"command,omitempty"`
}

// HTTPGetAction requests a path; 200–399 is success.
type HTTPGetAction struct {
	Path        string           `json:"path,omitempty"`
	Port        meta.IntOrString `json:"port"`
	Host        string           `json:"host,omitempty"`
	Scheme      string           `json:"scheme,omitempty"`
	HTTPHeaders []HTTPHeader     `json:"httpHeaders,omitempty"`
}

// HTTPHeader is a header sent by an HTTP probe.
type HTTPHeader struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// TCPSocketAction opens a connection; success if it connects.
type TCPSocketAction struct {
	Port meta.IntOrString `json:"port"`
	Host string           `json:"host,omitempty"`
}

// PodPhase is Pending, Running, Succeeded, Failed or Unknown.
type PodPhase string

// Pod phases.
const (
	PodPending   PodPhase = "Pending"
	PodRunning   PodPhase = "Running"
	PodSucceeded PodPhase = "Succeeded"
	PodFailed    PodPhase = "Failed"
	PodUnknown   PodPhase = "Unknown"
)

// PodConditionType names a pod condition.
type PodConditionType string

// Pod conditions.
const (
	PodScheduled    PodConditionType = "PodScheduled"
	PodInitialized  PodConditionType = "Initialized"
	ContainersReady PodConditionType = "ContainersReady"
	PodReady        PodConditionType = "Ready"
	// PodResizePending: a resize the node cannot carry out yet (reason
	// Deferred: not now, with the pods it runs; Infeasible: never, the
	// node is too small).
	PodResizePending PodConditionType = "PodResizePending"
	// PodResizeInProgress: a resize the node accepted and has not
	// finished (reason Error, with why, when carrying it out failed).
	PodResizeInProgress PodConditionType = "PodResizeInProgress"
	// DisruptionTarget: the pod is about to go for a disruption, not for
	// a failure of its own (reason PreemptionByScheduler, when the
	// scheduler preempts it): a Job's podFailurePolicy can tell.
	DisruptionTarget PodConditionType = "DisruptionTarget"
)

// PodStatus is the observed state of a pod, written by the scheduler and the agent.
type PodStatus struct {
	Phase                 PodPhase          `json:"phase,omitempty"`
	Conditions            []PodCondition    `json:"conditions,omitempty"`
	Message               string            `json:"message,omitempty"`
	Reason                string            `json:"reason,omitempty"`
	NominatedNodeName     string            `json:"nominatedNodeName,omitempty"`
	HostIP                string            `json:"hostIP,omitempty"`
	PodIP                 string            `json:"podIP,omitempty"`
	PodIPs                []PodIP           `json:"podIPs,omitempty"`
	StartTime             *meta.Time        `json:"startTime,omitempty"`
	InitContainerStatuses []ContainerStatus `json:"initContainerStatuses,omitempty"`
	ContainerStatuses     []ContainerStatus `json:"containerStatuses,omitempty"`
	QOSClass              QOSClass          `json:"qosClass,omitempty"`
	// EphemeralContainerStatuses are the ephemeral containers' states.
	EphemeralContainerStatuses []ContainerStatus `json:"ephemeralContainerStatuses,omitempty"`
	// ObservedGeneration is the pod generation the agent's status
	// answers (metadata.generation grows with each spec change).
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
}

// IsZero reports whether nothing has been observed yet.
func (s PodStatus) IsZero() bool {
	return s.Phase == "" && len(s.Conditions) == 0 && s.PodIP == "" && len(s.ContainerStatuses) == 0 && s.QOSClass == "" && s.NominatedNodeName == ""
}

// PodIP is one address of a pod.
type PodIP struct {
	IP string `json:"ip"`
}

// PodCondition is one condition of a pod.
type PodCondition struct {
	Type               PodConditionType     `json:"type"`
	Status             meta.ConditionStatus `json:"status"`
	LastProbeTime      meta.Time            `json:"lastProbeTime,omitzero"`
	LastTransitionTime meta.Time            `json:"lastTransitionTime,omitzero"`
	Reason             string               `json:"reason,omitempty"`
	Message            string               `json:"message,omitempty"`
}

// QOSClass is Guaranteed, Burstable or BestEffort.
type QOSClass string

// QoS classes.
const (
	QOSGuaranteed QOSClass = "Guaranteed"
	QOSBurstable  QOSClass = "Burstable"
	QOSBestEffort QOSClass = "BestEffort"
)

// ContainerStatus is the observed state of one container.
type ContainerStatus struct {
	Name         string         `json:"name"`
	State        ContainerState `json:"state,omitzero"`
	LastState    ContainerState `json:"lastState,omitzero"` // Kubernetes: lastState (Go: LastTerminationState)
	Ready        bool           `json:"ready"`
	RestartCount int32          `json:"restartCount"`
	Image        string         `json:"image"`
	ImageID      string         `json:"imageID"`
	ContainerID  string         `json:"containerID,omitempty"`
	Started      *bool          `json:"started,omitempty"`
	// AllocatedResources are the requests the node has allocated to the
	// container (after an in-place resize: the new ones once accepted).
	AllocatedResources resource.List `json:"allocatedResources,omitempty"`
	// Resources are the requests and limits the container runs with
	// (its cgroup's), set once it has been created.
	Resources *ResourceRequirements `json:"resources,omitempty"`
}

// ContainerState is exactly one of waiting, running and terminated.
type ContainerState struct {
	Waiting    *ContainerStateWaiting    `json:"waiting,omitempty"`
	Running    *ContainerStateRunning    `json:"running,omitempty"`
	Terminated *ContainerStateTerminated `json:"terminated,omitempty"`
}

// IsZero reports whether no state is set.
func (s ContainerState) IsZero() bool {
	return s.Waiting == nil && s.Running == nil && s.Terminated == nil
}

// ContainerStateWaiting says why a container is not running yet.
type ContainerStateWaiting struct {
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
}

// ContainerStateRunning says since when a container runs.
type ContainerStateRunning struct {
	StartedAt meta.Time `json:"startedAt,omitzero"`
}

// ContainerStateTerminated says how a container ended.
type ContainerStateTerminated struct {
	ExitCode    int32     `json:"exitCode"`
	Signal      int32     `json:"signal,omitempty"`
	Reason      string    `json:"reason,omitempty"`
	Message     string    `json:"message,omitempty"`
	StartedAt   meta.Time `json:"startedAt,omitzero"`
	FinishedAt  meta.Time `json:"finishedAt,omitzero"`
	ContainerID string    `json:"containerID,omitempty"`
}

// PodDNSConfig adds to (or, with dnsPolicy None, makes) the pod's resolv.conf.
type PodDNSConfig struct {
	Nameservers []string             `json:"nameservers,omitempty"`
	Searches    []string             `json:"searches,omitempty"`
	Options     []PodDNSConfigOption `json:"options,omitempty"`
}

// PodDNSConfigOption is one resolv.conf option ("ndots", "2").
type PodDNSConfigOption struct {
	Name  string  `json:"name,omitempty"`
	Value *string `json:"value,omitempty"`
}

// DNS policies.
const (
	DNSClusterFirst            = "ClusterFirst"
	DNSClusterFirstWithHostNet = "ClusterFirstWithHostNet"
	DNSDefault                 = "Default"
	DNSNone                    = "None"
)
