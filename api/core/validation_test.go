package core

import (
	"strings"
	"testing"

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
		}, "livenessProbe: Invalid value: 2: must specify exactly one"},
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
