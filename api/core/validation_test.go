package core

import (
	"strings"
	"testing"
	"time"

	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/api/resource"
)

func validPod() *Pod {
	p := &Pod{
		ObjectMeta: meta.ObjectMeta{Name: "web", Namespace: "default"},
		Spec:       PodSpec{Containers: []Container{{Name: "app", Image: "kobune.local/labapp:1.0"}}},
	}
	SetDefaultsPod(p)
	return p
}

func TestValidatePod(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*Pod)
		want   string // "" means valid
	}{
		{"valid", func(*Pod) {}, ""},
		{"no containers", func(p *Pod) { p.Spec.Containers = nil }, "spec.containers: Required value"},
		{"duplicate across init and app containers", func(p *Pod) {
			p.Spec.InitContainers = []Container{{Name: "app", Image: "i"}}
		}, `spec.containers[0].name: Duplicate value: "app"`},
		{"missing image", func(p *Pod) { p.Spec.Containers[0].Image = "" }, "spec.containers[0].image: Required value"},
		{"port too big", func(p *Pod) { p.Spec.Containers[0].Ports = []ContainerPort{{ContainerPort: 70000}} }, "containerPort: Invalid value: 70000"},
		{"memory request above limit", func(p *Pod) {
			p.Spec.Containers[0].Resources = ResourceRequirements{
				Requests: resource.List{resource.Memory: resource.MustParse("1Gi")},
				Limits:   resource.List{resource.Memory: resource.MustParse("512Mi")},
			}
		}, `requests[memory]: Invalid value: "1Gi": must be less than or equal to memory limit of 512Mi`},
		{"bad restart policy", func(p *Pod) { p.Spec.RestartPolicy = "Sometimes" }, `spec.restartPolicy: Unsupported value: "Sometimes"`},
		{"extended resource", func(p *Pod) {
			p.Spec.Containers[0].Resources.Limits = resource.List{"example.com/dongle": resource.MustParse("2")}
			SetDefaultsPod(p)
		}, ""},
		{"extended resource without a domain", func(p *Pod) {
			p.Spec.Containers[0].Resources.Limits = resource.List{"dongle": resource.MustParse("2")}
		}, `spec.containers[0].resources.limits[dongle]: Unsupported value: "dongle"`},
		{"extended resource in kubernetes.io", func(p *Pod) {
			p.Spec.Containers[0].Resources.Limits = resource.List{"kubernetes.io/dongle": resource.MustParse("2")}
		}, `spec.containers[0].resources.limits[kubernetes.io/dongle]: Unsupported value`},
		{"extended resource in parts", func(p *Pod) {
			p.Spec.Containers[0].Resources.Limits = resource.List{"example.com/dongle": resource.MustParse("500m")}
			SetDefaultsPod(p)
		}, `spec.containers[0].resources.limits[example.com/dongle]: Invalid value: "500m": must be an integer`},
		{"extended resource requested without a limit", func(p *Pod) {
			p.Spec.Containers[0].Resources.Requests = resource.List{"example.com/dongle": resource.MustParse("1")}
		}, `spec.containers[0].resources.limits[example.com/dongle]: Required value: Limit must be set for non overcommitable resources`},
		{"extended resource request below its limit", func(p *Pod) {
			p.Spec.Containers[0].Resources.Requests = resource.List{"example.com/dongle": resource.MustParse("1")}
			p.Spec.Containers[0].Resources.Limits = resource.List{"example.com/dongle": resource.MustParse("2")}
		}, `spec.containers[0].resources.requests[example.com/dongle]: Invalid value: "1": must be equal to example.com/dongle limit of 2`},
		{"bad termination message policy", func(p *Pod) { p.Spec.Containers[0].TerminationMessagePolicy = "Logs" },
			`spec.containers[0].terminationMessagePolicy: Unsupported value: "Logs": supported values: File, FallbackToLogsOnError`},
		{"relative termination message path", func(p *Pod) { p.Spec.Containers[0].TerminationMessagePath = "log" },
			`spec.containers[0].terminationMessagePath: Invalid value: "log": must be an absolute path`},
		{"termination message path that climbs", func(p *Pod) { p.Spec.Containers[0].TerminationMessagePath = "/dev/../etc/x" },
			`spec.containers[0].terminationMessagePath: Invalid value: "/dev/../etc/x"`},
		// Issue #10 defect 8: 8Ei of memory wrapped around int64 and was scheduled.
		{"memory request beyond int64", func(p *Pod) {
			p.Spec.Containers[0].Resources.Requests = resource.List{resource.Memory: resource.MustParse("8Ei")}
		}, `spec.containers[0].resources.requests[memory]: Invalid value: "8Ei": must be at most 9223372036854775807m`},
		{"cpu limit beyond int64 millicores", func(p *Pod) {
			p.Spec.Containers[0].Resources.Limits = resource.List{resource.CPU: resource.MustParse("10P")}
		}, `spec.containers[0].resources.limits[cpu]: Invalid value: "10P": must be at most`},
		{"requests that add up beyond int64", func(p *Pod) {
			big := resource.List{resource.CPU: resource.MustParse("5P")}
			p.Spec.Containers[0].Resources.Requests = big
			p.Spec.Containers = append(p.Spec.Containers, Container{Name: "two", Image: "i", Resources: ResourceRequirements{Requests: big}})
		}, `spec.containers: Invalid value: "10P": the containers' requests of cpu add up to more than 9223372036854775807m`},
		{"probe with two handlers", func(p *Pod) {
			p.Spec.Containers[0].LivenessProbe = &Probe{ProbeHandler: ProbeHandler{
				Exec: &ExecAction{Command: []string{"true"}}, TCPSocket: &TCPSocketAction{Port: meta.FromInt(80)}}}
		}, "livenessProbe: Forbidden: may not specify more than 1 handler type"},
		{"probe without a handler", func(p *Pod) {
			p.Spec.Containers[0].ReadinessProbe = &Probe{PeriodSeconds: 1}
		}, "spec.containers[0].readinessProbe: Required value: must specify a handler type"},
		{"grpc probe port", func(p *Pod) {
			p.Spec.Containers[0].LivenessProbe = &Probe{ProbeHandler: ProbeHandler{GRPC: &GRPCAction{Port: 0}}}
		}, "spec.containers[0].livenessProbe.grpc.port: Invalid value: 0: must be between 1 and 65535, inclusive"},
		{"toleration seconds without NoExecute", func(p *Pod) {
			s := int64(5)
			p.Spec.Tolerations = []Toleration{{Key: "k", Operator: "Exists", Effect: TaintNoSchedule, TolerationSeconds: &s}}
		}, "spec.tolerations[0].effect"},
		{"node affinity operator", func(p *Pod) {
			p.Spec.Affinity = &Affinity{NodeAffinity: &NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &NodeSelector{
				NodeSelectorTerms: []NodeSelectorTerm{{MatchExpressions: []NodeSelectorRequirement{{Key: "zone", Operator: "Near"}}}}}}}
		}, `matchExpressions[0].operator: Unsupported value: "Near"`},
		{"env from unsupported field", func(p *Pod) {
			p.Spec.Containers[0].Env = []EnvVar{{Name: "X", ValueFrom: &EnvVarSource{FieldRef: &ObjectFieldSelector{FieldPath: "spec.priority"}}}}
		}, `fieldPath: Unsupported value: "spec.priority"`},
		{"host alias without a valid IP", func(p *Pod) {
			p.Spec.HostAliases = []HostAlias{{IP: "10.0.0.300", Hostnames: []string{"db.local"}}}
		}, `spec.hostAliases[0].ip: Invalid value: "10.0.0.300": must be a valid IP address`},
		{"host alias without hostnames", func(p *Pod) { p.Spec.HostAliases = []HostAlias{{IP: "10.0.0.3"}} }, "spec.hostAliases[0].hostnames: Required value"},
		{"preStop sleep", func(p *Pod) {
			p.Spec.Containers[0].Lifecycle = &Lifecycle{PreStop: &LifecycleHandler{Sleep: &SleepAction{Seconds: 5}}}
		}, ""},
		{"preStop sleep beyond the grace period", func(p *Pod) {
			g := int64(10)
			p.Spec.TerminationGracePeriodSeconds = &g
			p.Spec.Containers[0].Lifecycle = &Lifecycle{PreStop: &LifecycleHandler{Sleep: &SleepAction{Seconds: 20}}}
		}, "spec.containers[0].lifecycle.preStop.sleep.seconds: Invalid value: 20: must be between 0 and terminationGracePeriodSeconds (10)"},
		{"postStart with two handlers", func(p *Pod) {
			p.Spec.Containers[0].Lifecycle = &Lifecycle{PostStart: &LifecycleHandler{Exec: &ExecAction{Command: []string{"true"}}, Sleep: &SleepAction{Seconds: 1}}}
		}, "spec.containers[0].lifecycle.postStart: Invalid value: 2: must specify exactly one of exec, httpGet and sleep"},
		{"tcpSocket hook", func(p *Pod) {
			p.Spec.Containers[0].Lifecycle = &Lifecycle{PreStop: &LifecycleHandler{TCPSocket: &TCPSocketAction{Port: meta.FromInt(80)}}}
		}, `spec.containers[0].lifecycle.preStop.tcpSocket: Unsupported value: "tcpSocket"`},
		{"hook on an init container", func(p *Pod) {
			p.Spec.InitContainers = []Container{{Name: "init", Image: "i", Lifecycle: &Lifecycle{PostStart: &LifecycleHandler{Sleep: &SleepAction{Seconds: 1}}}}}
		}, "spec.initContainers[0].lifecycle: Forbidden: may not be set for init containers"},
		{"a sidecar with probes and a hook", func(p *Pod) {
			always := ContainerRestartPolicyAlways
			p.Spec.InitContainers = []Container{{Name: "proxy", Image: "i", RestartPolicy: &always,
				StartupProbe: &Probe{ProbeHandler: ProbeHandler{Exec: &ExecAction{Command: []string{"true"}}}},
				Lifecycle:    &Lifecycle{PreStop: &LifecycleHandler{Exec: &ExecAction{Command: []string{"true"}}}}}}
			SetDefaultsPod(p)
		}, ""},
		{"an ordinary init container with a probe", func(p *Pod) {
			p.Spec.InitContainers = []Container{{Name: "setup", Image: "i", ReadinessProbe: &Probe{ProbeHandler: ProbeHandler{Exec: &ExecAction{Command: []string{"true"}}}}}}
			SetDefaultsPod(p)
		}, "spec.initContainers[0].readinessProbe: Forbidden: may not be set for init containers without restartPolicy=Always"},
		{"a container's restartPolicy", func(p *Pod) {
			always := ContainerRestartPolicyAlways
			p.Spec.Containers[0].RestartPolicy = &always
		}, "spec.containers[0].restartPolicy: Forbidden: may not be set for non-init containers"},
		{"an init container's restartPolicy other than Always", func(p *Pod) {
			never := ContainerRestartPolicy("Never")
			p.Spec.InitContainers = []Container{{Name: "setup", Image: "i", RestartPolicy: &never}}
		}, `spec.initContainers[0].restartPolicy: Unsupported value: "Never"`},
		{"subPath and subPathExpr", func(p *Pod) {
			p.Spec.Volumes = []Volume{{Name: "a", VolumeSource: VolumeSource{EmptyDir: &EmptyDirVolumeSource{}}}}
			p.Spec.Containers[0].VolumeMounts = []VolumeMount{{Name: "a", MountPath: "/a", SubPath: "x", SubPathExpr: "$(POD)"}}
		}, "spec.containers[0].volumeMounts[0].subPathExpr: Invalid value: \"$(POD)\": subPathExpr and subPath are mutually exclusive"},
		{"an absolute subPathExpr", func(p *Pod) {
			p.Spec.Volumes = []Volume{{Name: "a", VolumeSource: VolumeSource{EmptyDir: &EmptyDirVolumeSource{}}}}
			p.Spec.Containers[0].VolumeMounts = []VolumeMount{{Name: "a", MountPath: "/a", SubPathExpr: "/$(POD)"}}
		}, "must be a relative path without '..'"},
		{"sysctls, one name with slashes", func(p *Pod) {
			p.Spec.SecurityContext = &PodSecurityContext{Sysctls: []Sysctl{{Name: "kernel.shm_rmid_forced", Value: "1"}, {Name: "net/ipv4/ip_local_port_range", Value: "1024 65000"}}}
		}, ""},
		{"invalid sysctl names (the conformance suite's)", func(p *Pod) {
			p.Spec.SecurityContext = &PodSecurityContext{Sysctls: []Sysctl{{Name: "foo-", Value: "bar"}, {Name: "kernel.shmmax", Value: "1"}, {Name: "safe-and-unsafe", Value: "1"}, {Name: "bar..", Value: "42"}}}
		}, `spec.securityContext.sysctls[0].name: Invalid value: "foo-"`},
		{"a network sysctl with hostNetwork", func(p *Pod) {
			p.Spec.HostNetwork = true
			p.Spec.SecurityContext = &PodSecurityContext{Sysctls: []Sysctl{{Name: "net.ipv4.tcp_syncookies", Value: "1"}}}
		}, "may not be specified when 'hostNetwork' is true"},
		{"scheduling gates", func(p *Pod) {
			p.Spec.SchedulingGates = []PodSchedulingGate{{Name: "example.com/quota"}, {Name: "wait"}}
		}, ""},
		{"a scheduling gate that is no qualified name", func(p *Pod) {
			p.Spec.SchedulingGates = []PodSchedulingGate{{Name: "a b"}}
		}, `spec.schedulingGates[0].name: Invalid value: "a b"`},
		{"a scheduling gate twice", func(p *Pod) {
			p.Spec.SchedulingGates = []PodSchedulingGate{{Name: "wait"}, {Name: "wait"}}
		}, `spec.schedulingGates[1].name: Duplicate value: "wait"`},
		{"a node and scheduling gates", func(p *Pod) {
			p.Spec.SchedulingGates = []PodSchedulingGate{{Name: "wait"}}
			p.Spec.NodeName = "node-1"
		}, "spec.nodeName: Forbidden: cannot be set until all schedulingGates have been cleared"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := validPod()
			tt.mutate(p)
			err := ValidatePod(p).ToError()
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("error %v, want it to contain %q", err, tt.want)
			}
		})
	}
}

func TestPodUpdateAllowsOnlyImages(t *testing.T) {
	old := validPod()
	changed := validPod()
	changed.Spec.Containers[0].Image = "kobune.local/labapp:2.0"
	if errs := ValidatePodUpdate(changed, old); len(errs) != 0 {
		t.Errorf("image change refused: %v", errs.ToError())
	}
	changed.Spec.RestartPolicy = RestartPolicyNever
	if errs := ValidatePodUpdate(changed, old); len(errs) == 0 {
		t.Error("restartPolicy change accepted")
	}
	// Scheduling gates may only go.
	gated := validPod()
	gated.Spec.SchedulingGates = []PodSchedulingGate{{Name: "a"}, {Name: "b"}}
	fewer := validPod()
	fewer.Spec.SchedulingGates = []PodSchedulingGate{{Name: "b"}}
	if errs := ValidatePodUpdate(fewer, gated); len(errs) != 0 {
		t.Errorf("a gate removed: %v", errs.ToError())
	}
	more := validPod()
	more.Spec.SchedulingGates = []PodSchedulingGate{{Name: "b"}, {Name: "c"}}
	if err := ValidatePodUpdate(more, gated).ToError(); err == nil || !strings.Contains(err.Error(), "spec.schedulingGates[1]: Forbidden: only deletion is allowed, but found new scheduling gate 'c'") {
		t.Errorf("a gate added: %v", err)
	}
}

func TestQOSClass(t *testing.T) {
	rl := func(cpu, mem string) resource.List {
		return resource.List{resource.CPU: resource.MustParse(cpu), resource.Memory: resource.MustParse(mem)}
	}
	tests := []struct {
		name string
		res  ResourceRequirements
		want QOSClass
	}{
		{"nothing set", ResourceRequirements{}, QOSBestEffort},
		{"limits only (requests default to them)", ResourceRequirements{Limits: rl("1", "1Gi")}, QOSGuaranteed},
		{"requests below limits", ResourceRequirements{Requests: rl("500m", "1Gi"), Limits: rl("1", "1Gi")}, QOSBurstable},
		{"requests only", ResourceRequirements{Requests: rl("1", "1Gi")}, QOSBurstable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &Pod{Spec: PodSpec{Containers: []Container{{Name: "a", Image: "i", Resources: tt.res}}}}
			SetDefaultsPod(p)
			if got := PodQOSClass(&p.Spec); got != tt.want {
				t.Errorf("QoS = %s, want %s", got, tt.want)
			}
		})
	}
}

// Volumes, mounts and env sources: each mistake is named by its field.
func TestValidatePodVolumes(t *testing.T) {
	cm := func(name string) VolumeSource {
		return VolumeSource{ConfigMap: &ConfigMapVolumeSource{LocalObjectReference: LocalObjectReference{Name: name}}}
	}
	mode := int32(0o1777)
	tests := []podCase{
		{"every kind", func(p *Pod) {
			dir := HostPathDirectoryOrCreate
			p.Spec.Volumes = []Volume{{Name: "a", VolumeSource: cm("c")}, {Name: "b", VolumeSource: VolumeSource{EmptyDir: &EmptyDirVolumeSource{Medium: StorageMediumMemory}}},
				{Name: "c", VolumeSource: VolumeSource{HostPath: &HostPathVolumeSource{Path: "/srv", Type: &dir}}},
				{Name: "d", VolumeSource: VolumeSource{Secret: &SecretVolumeSource{SecretName: "s"}}},
				{Name: "e", VolumeSource: VolumeSource{Projected: &ProjectedVolumeSource{Sources: []VolumeProjection{{ConfigMap: &ConfigMapProjection{LocalObjectReference: LocalObjectReference{Name: "c"}}}}}}}}
			p.Spec.Containers[0].VolumeMounts = []VolumeMount{{Name: "a", MountPath: "/etc/a"}, {Name: "b", MountPath: "/tmp", SubPath: "x/y"}}
		}, ""},
		{"two sources", func(p *Pod) {
			v := cm("c")
			v.EmptyDir = &EmptyDirVolumeSource{}
			p.Spec.Volumes = []Volume{{Name: "a", VolumeSource: v}}
		}, "spec.volumes[0]: Forbidden: may not specify more than 1 volume type"},
		{"no source", func(p *Pod) { p.Spec.Volumes = []Volume{{Name: "a"}} }, "spec.volumes[0]: Required value: must specify a volume type"},
		{"inline csi volume", func(p *Pod) {
			p.Spec.Volumes = []Volume{{Name: "a", VolumeSource: VolumeSource{CSI: &CSIVolumeSource{Driver: "csi.example.com",
				NodePublishSecretRef: &LocalObjectReference{Name: "creds"}}}}}
		}, ""},
		{"inline csi volume without a driver", func(p *Pod) {
			p.Spec.Volumes = []Volume{{Name: "a", VolumeSource: VolumeSource{CSI: &CSIVolumeSource{}}}}
		}, "spec.volumes[0].csi.driver: Required value"},
		{"inline csi volume with a bad secret name", func(p *Pod) {
			p.Spec.Volumes = []Volume{{Name: "a", VolumeSource: VolumeSource{CSI: &CSIVolumeSource{Driver: "csi.example.com",
				NodePublishSecretRef: &LocalObjectReference{Name: "Creds!"}}}}}
		}, `spec.volumes[0].csi.nodePublishSecretRef.name: Invalid value: "Creds!"`},
		{"duplicate volume", func(p *Pod) {
			p.Spec.Volumes = []Volume{{Name: "a", VolumeSource: cm("c")}, {Name: "a", VolumeSource: cm("d")}}
		}, `spec.volumes[1].name: Duplicate value: "a"`},
		{"mount of no volume", func(p *Pod) { p.Spec.Containers[0].VolumeMounts = []VolumeMount{{Name: "nope", MountPath: "/x"}} },
			`spec.containers[0].volumeMounts[0].name: Invalid value: "nope": must name a volume of the pod`},
		{"relative mount path", func(p *Pod) {
			p.Spec.Volumes = []Volume{{Name: "a", VolumeSource: cm("c")}}
			p.Spec.Containers[0].VolumeMounts = []VolumeMount{{Name: "a", MountPath: "etc"}}
		}, `volumeMounts[0].mountPath: Invalid value: "etc": must be an absolute path`},
		{"subPath out of the volume", func(p *Pod) {
			p.Spec.Volumes = []Volume{{Name: "a", VolumeSource: cm("c")}}
			p.Spec.Containers[0].VolumeMounts = []VolumeMount{{Name: "a", MountPath: "/x", SubPath: "../../etc"}}
		}, `volumeMounts[0].subPath: Invalid value: "../../etc"`},
		{"propagation", func(p *Pod) {
			b := "Bidirectional"
			p.Spec.Volumes = []Volume{{Name: "a", VolumeSource: cm("c")}}
			p.Spec.Containers[0].VolumeMounts = []VolumeMount{{Name: "a", MountPath: "/x", MountPropagation: &b}}
		}, `volumeMounts[0].mountPropagation: Unsupported value: "Bidirectional"`},
		{"item path escapes", func(p *Pod) {
			v := cm("c")
			v.ConfigMap.Items = []KeyToPath{{Key: "k", Path: "../k"}}
			p.Spec.Volumes = []Volume{{Name: "a", VolumeSource: v}}
		}, `spec.volumes[0].configMap.items[0].path: Invalid value: "../k"`},
		{"mode too big", func(p *Pod) {
			v := cm("c")
			v.ConfigMap.DefaultMode = &mode
			p.Spec.Volumes = []Volume{{Name: "a", VolumeSource: v}}
		}, "spec.volumes[0].configMap.defaultMode: Invalid value: 1023"},
		{"hostPath type", func(p *Pod) {
			t := HostPathType("Anything")
			p.Spec.Volumes = []Volume{{Name: "a", VolumeSource: VolumeSource{HostPath: &HostPathVolumeSource{Path: "/x", Type: &t}}}}
		}, `spec.volumes[0].hostPath.type: Unsupported value: "Anything"`},
		{"emptyDir medium", func(p *Pod) {
			p.Spec.Volumes = []Volume{{Name: "a", VolumeSource: VolumeSource{EmptyDir: &EmptyDirVolumeSource{Medium: "HugePages"}}}}
		}, `spec.volumes[0].emptyDir.medium: Unsupported value: "HugePages"`},
		{"downward API of the pod's IP", func(p *Pod) {
			p.Spec.Volumes = []Volume{{Name: "a", VolumeSource: VolumeSource{DownwardAPI: &DownwardAPIVolumeSource{Items: []DownwardAPIVolumeFile{
				{Path: "ip", FieldRef: &ObjectFieldSelector{FieldPath: "status.podIP"}}}}}}}
		}, `spec.volumes[0].downwardAPI.items[0].fieldRef.fieldPath: Unsupported value: "status.podIP"`},
		{"configMapKeyRef without key", func(p *Pod) {
			p.Spec.Containers[0].Env = []EnvVar{{Name: "A", ValueFrom: &EnvVarSource{ConfigMapKeyRef: &ConfigMapKeySelector{LocalObjectReference: LocalObjectReference{Name: "c"}}}}}
		}, "spec.containers[0].env[0].valueFrom.configMapKeyRef.key: Required value"},
		{"two env sources", func(p *Pod) {
			p.Spec.Containers[0].Env = []EnvVar{{Name: "A", ValueFrom: &EnvVarSource{FieldRef: &ObjectFieldSelector{FieldPath: "metadata.name"},
				SecretKeyRef: &SecretKeySelector{LocalObjectReference: LocalObjectReference{Name: "s"}, Key: "k"}}}}
		}, "spec.containers[0].env[0].valueFrom: Invalid value: \"\": must specify exactly one of"},
		{"resourceFieldRef of a resource", func(p *Pod) {
			p.Spec.Containers[0].Env = []EnvVar{{Name: "A", ValueFrom: &EnvVarSource{ResourceFieldRef: &ResourceFieldSelector{Resource: "limits.gpu"}}}}
		}, `spec.containers[0].env[0].valueFrom.resourceFieldRef.resource: Unsupported value: "limits.gpu"`},
		{"resourceFieldRef with divisor 0 (unset, as client-go sends it)", func(p *Pod) {
			zero := resource.MustParse("0")
			p.Spec.Containers[0].Env = []EnvVar{{Name: "A", ValueFrom: &EnvVarSource{ResourceFieldRef: &ResourceFieldSelector{Resource: "limits.cpu", Divisor: &zero}}}}
		}, ""},
		{"resourceFieldRef with a cpu divisor of 2", func(p *Pod) {
			two := resource.MustParse("2")
			p.Spec.Containers[0].Env = []EnvVar{{Name: "A", ValueFrom: &EnvVarSource{ResourceFieldRef: &ResourceFieldSelector{Resource: "limits.cpu", Divisor: &two}}}}
		}, `spec.containers[0].env[0].valueFrom.resourceFieldRef.divisor: Invalid value: "limits.cpu": only divisor's values 1m and 1 are supported with the cpu resource`},
		{"resourceFieldRef with a memory divisor of 3Mi", func(p *Pod) {
			d := resource.MustParse("3Mi")
			p.Spec.Containers[0].Env = []EnvVar{{Name: "A", ValueFrom: &EnvVarSource{ResourceFieldRef: &ResourceFieldSelector{Resource: "requests.memory", Divisor: &d}}}}
		}, `resourceFieldRef.divisor: Invalid value: "requests.memory": only divisor's values 1, 1k, 1M, 1G, 1T, 1P, 1E, 1Ki, 1Mi, 1Gi, 1Ti, 1Pi, 1Ei are supported with the memory resource`},
		{"resourceFieldRef with a memory divisor of 1Mi", func(p *Pod) {
			d := resource.MustParse("1Mi")
			p.Spec.Containers[0].Env = []EnvVar{{Name: "A", ValueFrom: &EnvVarSource{ResourceFieldRef: &ResourceFieldSelector{Resource: "requests.memory", Divisor: &d}}}}
		}, ""},
		{"envFrom with both", func(p *Pod) {
			p.Spec.Containers[0].EnvFrom = []EnvFromSource{{ConfigMapRef: &ConfigMapEnvSource{LocalObjectReference: LocalObjectReference{Name: "c"}},
				SecretRef: &SecretEnvSource{LocalObjectReference: LocalObjectReference{Name: "s"}}}}
		}, "spec.containers[0].envFrom[0]: Invalid value: \"\": must specify exactly one of configMapRef and secretRef"},
		{"service account token too short", func(p *Pod) {
			short := int64(60)
			p.Spec.Volumes = []Volume{{Name: "a", VolumeSource: VolumeSource{Projected: &ProjectedVolumeSource{Sources: []VolumeProjection{
				{ServiceAccountToken: &ServiceAccountTokenProjection{Path: "t", ExpirationSeconds: &short}}}}}}}
		}, "spec.volumes[0].projected.sources[0].serviceAccountToken.expirationSeconds: Invalid value: 60: may not specify a duration less than 10 minutes"},
		{"service account token path", func(p *Pod) {
			p.Spec.Volumes = []Volume{{Name: "a", VolumeSource: VolumeSource{Projected: &ProjectedVolumeSource{Sources: []VolumeProjection{
				{ServiceAccountToken: &ServiceAccountTokenProjection{Path: "../t"}}}}}}}
		}, "spec.volumes[0].projected.sources[0].serviceAccountToken.path"},
	}
	checkPodCases(t, tests)
}

func TestValidateSecurityContext(t *testing.T) {
	i64 := func(v int64) *int64 { return &v }
	yes, no := true, false
	local := "profiles/audit.json"
	tests := []podCase{
		{"a restricted pod", func(p *Pod) {
			p.Spec.SecurityContext = &PodSecurityContext{RunAsUser: i64(1000), RunAsNonRoot: &yes, FSGroup: i64(2000), SeccompProfile: &SeccompProfile{Type: SeccompRuntimeDefault}}
			p.Spec.Containers[0].SecurityContext = &SecurityContext{AllowPrivilegeEscalation: &no, Capabilities: &Capabilities{Drop: []string{"ALL"}, Add: []string{"NET_BIND_SERVICE"}}}
		}, ""},
		{"localhost profile", func(p *Pod) {
			p.Spec.SecurityContext = &PodSecurityContext{SeccompProfile: &SeccompProfile{Type: SeccompLocalhost, LocalhostProfile: &local}}
		}, ""},
		{"negative user", func(p *Pod) { p.Spec.SecurityContext = &PodSecurityContext{RunAsUser: i64(-1)} },
			"spec.securityContext.runAsUser: Invalid value: -1: must be between 0 and 2147483647"},
		{"negative group in a container", func(p *Pod) { p.Spec.Containers[0].SecurityContext = &SecurityContext{RunAsGroup: i64(-5)} },
			"spec.containers[0].securityContext.runAsGroup: Invalid value: -5"},
		{"bad supplemental group", func(p *Pod) { p.Spec.SecurityContext = &PodSecurityContext{SupplementalGroups: []int64{1, -2}} },
			"spec.securityContext.supplementalGroups[1]"},
		{"CAP_ prefix", func(p *Pod) {
			p.Spec.Containers[0].SecurityContext = &SecurityContext{Capabilities: &Capabilities{Add: []string{"CAP_NET_ADMIN"}}}
		}, `spec.containers[0].securityContext.capabilities.add[0]: Invalid value: "CAP_NET_ADMIN"`},
		{"lower case capability", func(p *Pod) {
			p.Spec.Containers[0].SecurityContext = &SecurityContext{Capabilities: &Capabilities{Drop: []string{"net_raw"}}}
		}, "capabilities.drop[0]"},
		{"privileged without escalation", func(p *Pod) {
			p.Spec.Containers[0].SecurityContext = &SecurityContext{Privileged: &yes, AllowPrivilegeEscalation: &no}
		}, "cannot set allowPrivilegeEscalation to false and privileged to true"},
		{"SYS_ADMIN without escalation", func(p *Pod) {
			p.Spec.Containers[0].SecurityContext = &SecurityContext{AllowPrivilegeEscalation: &no, Capabilities: &Capabilities{Add: []string{"SYS_ADMIN"}}}
		}, "capabilities.Add CAP_SYS_ADMIN"},
		{"non-root as root", func(p *Pod) { p.Spec.SecurityContext = &PodSecurityContext{RunAsUser: i64(0), RunAsNonRoot: &yes} },
			"spec.securityContext.runAsNonRoot: Invalid value: true: must be false when runAsUser is 0"},
		{"unknown seccomp type", func(p *Pod) {
			p.Spec.SecurityContext = &PodSecurityContext{SeccompProfile: &SeccompProfile{Type: "Strict"}}
		},
			`spec.securityContext.seccompProfile.type: Unsupported value: "Strict"`},
		{"localhost without a file", func(p *Pod) {
			p.Spec.Containers[0].SecurityContext = &SecurityContext{SeccompProfile: &SeccompProfile{Type: SeccompLocalhost}}
		}, "spec.containers[0].securityContext.seccompProfile.localhostProfile: Required value"},
		{"localhost out of the directory", func(p *Pod) {
			up := "../../etc/shadow"
			p.Spec.SecurityContext = &PodSecurityContext{SeccompProfile: &SeccompProfile{Type: SeccompLocalhost, LocalhostProfile: &up}}
		}, "must be a relative path without '..'"},
	}
	checkPodCases(t, tests)
}

// podCase mutates a minimal valid pod; want is a substring of the
// validation error ("" for none).
type podCase struct {
	name   string
	mutate func(*Pod)
	want   string
}

func checkPodCases(t *testing.T, tests []podCase) {
	t.Helper()
	for _, tt := range tests {
		p := &Pod{ObjectMeta: meta.ObjectMeta{Name: "p", Namespace: "default"}, Spec: PodSpec{RestartPolicy: RestartPolicyAlways,
			Containers: []Container{{Name: "app", Image: "i"}}}}
		tt.mutate(p)
		got := ValidatePod(p).ToError()
		switch {
		case tt.want == "" && got != nil:
			t.Errorf("%s: unexpected error %v", tt.name, got)
		case tt.want != "" && (got == nil || !strings.Contains(got.Error(), tt.want)):
			t.Errorf("%s: got %v, want %q", tt.name, got, tt.want)
		}
	}
}

// A pod's requests as Kubernetes adds them up: sidecars run beside the
// containers (summed with them); an ordinary init container runs beside
// the sidecars started before it; the pod needs the larger.
func TestPodRequestsWithSidecars(t *testing.T) {
	always := ContainerRestartPolicyAlways
	cpu := func(name, q string, sidecar bool) Container {
		c := Container{Name: name, Resources: ResourceRequirements{Requests: resource.List{resource.CPU: resource.MustParse(q)}}}
		if sidecar {
			c.RestartPolicy = &always
		}
		return c
	}
	for _, tt := range []struct {
		name  string
		inits []Container
		want  string
	}{
		{"no init containers", nil, "200m"},
		{"an init container larger than the containers", []Container{cpu("setup", "500m", false)}, "500m"},
		{"a sidecar adds to the containers", []Container{cpu("proxy", "100m", true)}, "300m"},
		{"an init container after a sidecar runs beside it", []Container{cpu("proxy", "100m", true), cpu("setup", "500m", false), cpu("log", "50m", true)}, "600m"},
		{"sidecars outweigh the init containers", []Container{cpu("setup", "250m", false), cpu("proxy", "100m", true), cpu("log", "50m", true)}, "350m"},
	} {
		spec := &PodSpec{InitContainers: tt.inits, Containers: []Container{cpu("app", "200m", false)}}
		req, _ := PodRequestsAndLimits(spec)
		if got := req[resource.CPU]; got.Cmp(resource.MustParse(tt.want)) != 0 {
			t.Errorf("%s: cpu request %s, want %s", tt.name, got.String(), tt.want)
		}
	}
}

// TestImmutableConfigMapsAndSecrets: once immutable, a ConfigMap's data
// and binaryData, and the flag itself, stay; its metadata may change.
func TestImmutableConfigMapsAndSecrets(t *testing.T) {
	yes, no := true, false
	old := &ConfigMap{Data: map[string]string{"a": "1"}, Immutable: &yes}
	for _, tc := range []struct {
		name string
		n    ConfigMap
		want string
	}{
		{"data changed", ConfigMap{Data: map[string]string{"a": "2"}, Immutable: &yes}, "data: Forbidden: field is immutable when `immutable` is set"},
		{"binaryData added", ConfigMap{Data: map[string]string{"a": "1"}, BinaryData: map[string][]byte{"b": {1}}, Immutable: &yes}, "data: Forbidden"},
		{"made mutable", ConfigMap{Data: map[string]string{"a": "1"}, Immutable: &no}, "immutable: Forbidden: field is immutable when `immutable` is set"},
		{"flag dropped", ConfigMap{Data: map[string]string{"a": "1"}}, "immutable: Forbidden"},
		{"unchanged", ConfigMap{Data: map[string]string{"a": "1"}, Immutable: &yes}, ""},
	} {
		errs := ValidateImmutableData([2]any{tc.n.Data, tc.n.BinaryData}, [2]any{old.Data, old.BinaryData}, tc.n.Immutable, old.Immutable)
		if got := errs.ToError(); (tc.want == "") != (got == nil) || got != nil && !strings.Contains(got.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, got, tc.want)
		}
	}
}

// TestValidateEvent: Kubernetes' rules for events — none asks for an
// involved object's kind or name (the conformance suite's events have
// none); the namespace agrees with the involved object's; a new-style
// event (with an eventTime) names its reporter, instance, action and reason.
func TestValidateEvent(t *testing.T) {
	now := meta.MicroTime{Time: time.Now()}
	for _, tc := range []struct {
		name string
		e    Event
		want string
	}{
		{"no involved object", Event{ObjectMeta: meta.ObjectMeta{Name: "e", Namespace: "default"}, Reason: "Test"}, ""},
		{"another namespace's object", Event{ObjectMeta: meta.ObjectMeta{Name: "e", Namespace: "team"}, InvolvedObject: ObjectReference{Kind: "Pod", Name: "p", Namespace: "other"}}, "involvedObject.namespace: Invalid value"},
		{"new-style without its reporter", Event{ObjectMeta: meta.ObjectMeta{Name: "e", Namespace: "default"}, EventTime: now, ReportingInstance: "i", Action: "a", Reason: "r"}, "reportingComponent: Required value"},
		{"new-style, whole", Event{ObjectMeta: meta.ObjectMeta{Name: "e", Namespace: "default"}, EventTime: now, ReportingController: "c", ReportingInstance: "i", Action: "a", Reason: "r", Type: EventTypeNormal}, ""},
	} {
		got := ValidateEvent(&tc.e).ToError()
		if (tc.want == "") != (got == nil) || got != nil && !strings.Contains(got.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, got, tc.want)
		}
	}
}
