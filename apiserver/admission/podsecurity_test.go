package admission

import (
	"reflect"
	"testing"

	"github.com/kobune/kobune/api/core"
)

func TestPodSecurityViolations(t *testing.T) {
	i64 := func(v int64) *int64 { return &v }
	yes, no := true, false
	restricted := func() core.PodSpec {
		return core.PodSpec{
			SecurityContext: &core.PodSecurityContext{RunAsNonRoot: &yes, SeccompProfile: &core.SeccompProfile{Type: core.SeccompRuntimeDefault}},
			Containers: []core.Container{{Name: "app", SecurityContext: &core.SecurityContext{AllowPrivilegeEscalation: &no,
				Capabilities: &core.Capabilities{Drop: []string{"ALL"}, Add: []string{"NET_BIND_SERVICE"}}}}},
			Volumes: []core.Volume{{Name: "cfg", VolumeSource: core.VolumeSource{ConfigMap: &core.ConfigMapVolumeSource{}}}},
		}
	}
	tests := []struct {
		name     string
		level    string
		mutate   func(*core.PodSpec)
		violates []string
	}{
		{"restricted pod, restricted", LevelRestricted, func(*core.PodSpec) {}, nil},
		{"plain pod, baseline", LevelBaseline, func(s *core.PodSpec) { *s = core.PodSpec{Containers: []core.Container{{Name: "app"}}} }, nil},
		{"plain pod, restricted", LevelRestricted, func(s *core.PodSpec) { *s = core.PodSpec{Containers: []core.Container{{Name: "app"}}} }, []string{
			`allowPrivilegeEscalation != false (container "app" must set securityContext.allowPrivilegeEscalation=false)`,
			`unrestricted capabilities (container "app" must set securityContext.capabilities.drop=["ALL"])`,
			`runAsNonRoot != true (pod or container "app" must set securityContext.runAsNonRoot=true)`,
			`seccompProfile (pod or container "app" must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost")`,
		}},
		{"privileged and host namespaces, baseline", LevelBaseline, func(s *core.PodSpec) {
			s.HostNetwork, s.HostPID = true, true
			s.Containers = append(s.Containers, core.Container{Name: "side", SecurityContext: &core.SecurityContext{Privileged: &yes}})
		}, []string{"host namespaces (hostNetwork=true, hostPID=true)", `privileged (container "side" must not set securityContext.privileged=true)`}},
		{"capabilities, baseline", LevelBaseline, func(s *core.PodSpec) {
			s.Containers[0].SecurityContext.Capabilities.Add = []string{"NET_ADMIN", "CHOWN", "SYS_TIME"}
		}, []string{`non-default capabilities (container "app" must not include "NET_ADMIN", "SYS_TIME" in securityContext.capabilities.add)`}},
		{"capabilities, restricted", LevelRestricted, func(s *core.PodSpec) {
			s.Containers[0].SecurityContext.Capabilities.Add = []string{"CHOWN"}
		}, []string{`unrestricted capabilities (container "app" must not include capabilities other than "NET_BIND_SERVICE" in securityContext.capabilities.add)`}},
		{"hostPath and hostPort, baseline", LevelBaseline, func(s *core.PodSpec) {
			s.Volumes = append(s.Volumes, core.Volume{Name: "root", VolumeSource: core.VolumeSource{HostPath: &core.HostPathVolumeSource{Path: "/"}}})
			s.Containers[0].Ports = []core.ContainerPort{{ContainerPort: 80, HostPort: 8080}}
		}, []string{`hostPath volumes (volumes "root")`, `hostPort (container "app" uses hostPorts 8080)`}},
		{"hostPath, restricted", LevelRestricted, func(s *core.PodSpec) {
			s.Volumes = append(s.Volumes, core.Volume{Name: "root", VolumeSource: core.VolumeSource{HostPath: &core.HostPathVolumeSource{Path: "/"}}})
		}, []string{`hostPath volumes (volumes "root")`, `restricted volume types (volume "root" uses restricted volume type "hostPath")`}},
		{"unconfined seccomp, baseline", LevelBaseline, func(s *core.PodSpec) {
			s.SecurityContext.SeccompProfile = &core.SeccompProfile{Type: core.SeccompUnconfined}
		}, []string{`seccompProfile (pod must not set securityContext.seccompProfile.type to "Unconfined")`}},
		{"root user, restricted", LevelRestricted, func(s *core.PodSpec) {
			s.Containers[0].SecurityContext.RunAsUser = i64(0)
		}, []string{`runAsUser=0 (container "app" must not set runAsUser=0)`}},
		{"a container opts out of non-root, restricted", LevelRestricted, func(s *core.PodSpec) {
			s.InitContainers = []core.Container{{Name: "init", SecurityContext: &core.SecurityContext{RunAsNonRoot: &no, AllowPrivilegeEscalation: &no,
				Capabilities: &core.Capabilities{Drop: []string{"ALL"}}}}}
		}, []string{`runAsNonRoot != true (container "init" must not set securityContext.runAsNonRoot=false)`}},
		{"privileged level", LevelPrivileged, func(s *core.PodSpec) { s.HostPID = true }, nil},
		{"sysctls, baseline", LevelBaseline, func(s *core.PodSpec) {
			s.SecurityContext.Sysctls = []core.Sysctl{{Name: "kernel.shm_rmid_forced", Value: "1"}, {Name: "kernel.msgmax", Value: "1"}, {Name: "net/ipv4/tcp_syncookies", Value: "1"}}
		}, []string{"forbidden sysctls (kernel.msgmax)"}},
	}
	for _, tt := range tests {
		s := restricted()
		tt.mutate(&s)
		if got := PodSecurityViolations(tt.level, &s); !reflect.DeepEqual(got, tt.violates) {
			t.Errorf("%s:\n got  %q\n want %q", tt.name, got, tt.violates)
		}
	}
}
