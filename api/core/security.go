package core

import (
	"regexp"
	"strings"

	v "github.com/kobune/kobune/api/validation"
)

// PodSecurityContext is what a pod's containers run as, unless their own
// securityContext says otherwise (kobune-agent turns it into the OCI
// spec: agent/runtime/security.go).
type PodSecurityContext struct {
	RunAsUser    *int64 `json:"runAsUser,omitempty"`
	RunAsGroup   *int64 `json:"runAsGroup,omitempty"`
	RunAsNonRoot *bool  `json:"runAsNonRoot,omitempty"`
	// FSGroup owns the pod's volumes (group, setgid directories) and is a
	// supplementary group of every container.
	FSGroup            *int64          `json:"fsGroup,omitempty"`
	SupplementalGroups []int64         `json:"supplementalGroups,omitempty"`
	SeccompProfile     *SeccompProfile `json:"seccompProfile,omitempty"`
	// Sysctls are set in the pod's namespaces before its containers start;
	// the agent runs a pod only with the sysctls the kubelet deems safe
	// (SafeSysctls), and fails it with SysctlForbidden otherwise.
	Sysctls []Sysctl `json:"sysctls,omitempty"`
	// Not supported: no SELinux, AppArmor, Windows or fsGroupChangePolicy
	// (volumes are always changed).
	SELinuxOptions      any    `json:"seLinuxOptions,omitempty" kobune:"unsupported"`
	AppArmorProfile     any    `json:"appArmorProfile,omitempty" kobune:"unsupported"`
	WindowsOptions      any    `json:"windowsOptions,omitempty" kobune:"unsupported"`
	FSGroupChangePolicy string `json:"fsGroupChangePolicy,omitempty" kobune:"unsupported"`
}

// SecurityContext is one container's: it overrides the pod's.
type SecurityContext struct {
	RunAsUser    *int64 `json:"runAsUser,omitempty"`
	RunAsGroup   *int64 `json:"runAsGroup,omitempty"`
	RunAsNonRoot *bool  `json:"runAsNonRoot,omitempty"`
	// ReadOnlyRootFilesystem mounts the image read-only.
	ReadOnlyRootFilesystem *bool         `json:"readOnlyRootFilesystem,omitempty"`
	Capabilities           *Capabilities `json:"capabilities,omitempty"`
	// Privileged: every capability, every device, no seccomp, writable
	// /sys.
	Privileged *bool `json:"privileged,omitempty"`
	// AllowPrivilegeEscalation false sets no_new_privs.
	AllowPrivilegeEscalation *bool           `json:"allowPrivilegeEscalation,omitempty"`
	SeccompProfile           *SeccompProfile `json:"seccompProfile,omitempty"`
	ProcMount                string          `json:"procMount,omitempty" kobune:"unsupported"`
	SELinuxOptions           any             `json:"seLinuxOptions,omitempty" kobune:"unsupported"`
	AppArmorProfile          any             `json:"appArmorProfile,omitempty" kobune:"unsupported"`
	WindowsOptions           any             `json:"windowsOptions,omitempty" kobune:"unsupported"`
}

// Capabilities are Linux capabilities added to and dropped from the
// runtime's default set, by name without CAP_ (NET_ADMIN), or ALL.
type Capabilities struct {
	Add  []string `json:"add,omitempty"`
	Drop []string `json:"drop,omitempty"`
}

// SeccompProfile is a seccomp filter: the runtime's default, none, or a
// file of the node's (Localhost: <agent state>/seccomp/<localhostProfile>).
type SeccompProfile struct {
	Type             string  `json:"type"`
	LocalhostProfile *string `json:"localhostProfile,omitempty"`
}

// Seccomp profile types.
const (
	SeccompRuntimeDefault = "RuntimeDefault"
	SeccompUnconfined     = "Unconfined"
	SeccompLocalhost      = "Localhost"
)

var capabilityName = regexp.MustCompile(`^[A-Z][A-Z0-9_]*$`)

func validateSeccomp(s *SeccompProfile, p *v.Path) v.ErrorList {
	if s == nil {
		return nil
	}
	var errs v.ErrorList
	switch s.Type {
	case SeccompRuntimeDefault, SeccompUnconfined:
		if s.LocalhostProfile != nil {
			errs = append(errs, v.NewInvalid(p.Child("localhostProfile"), *s.LocalhostProfile, "can only be set for type Localhost"))
		}
	case SeccompLocalhost:
		if s.LocalhostProfile == nil || *s.LocalhostProfile == "" {
			errs = append(errs, v.NewRequired(p.Child("localhostProfile"), "a file name under the node's seccomp directory"))
		} else if hasDotDot(*s.LocalhostProfile) || (*s.LocalhostProfile)[0] == '/' {
			errs = append(errs, v.NewInvalid(p.Child("localhostProfile"), *s.LocalhostProfile, "must be a relative path without '..'"))
		}
	case "":
		errs = append(errs, v.NewRequired(p.Child("type"), ""))
	default:
		errs = append(errs, v.NewNotSupported(p.Child("type"), s.Type, []string{SeccompRuntimeDefault, SeccompUnconfined, SeccompLocalhost}))
	}
	return errs
}

func validateIDs(user, group *int64, p *v.Path) v.ErrorList {
	var errs v.ErrorList
	for i, id := range []*int64{user, group} {
		if id != nil && (*id < 0 || *id > 2147483647) {
			errs = append(errs, v.NewInvalid(p.Child([]string{"runAsUser", "runAsGroup"}[i]), *id, "must be between 0 and 2147483647, inclusive"))
		}
	}
	return errs
}

// validatePodSecurityContext checks the pod's securityContext.
func validatePodSecurityContext(s *PodSecurityContext, p *v.Path) v.ErrorList {
	if s == nil {
		return nil
	}
	errs := validateIDs(s.RunAsUser, s.RunAsGroup, p)
	if s.FSGroup != nil && (*s.FSGroup < 0 || *s.FSGroup > 2147483647) {
		errs = append(errs, v.NewInvalid(p.Child("fsGroup"), *s.FSGroup, "must be between 0 and 2147483647, inclusive"))
	}
	for i, g := range s.SupplementalGroups {
		if g < 0 || g > 2147483647 {
			errs = append(errs, v.NewInvalid(p.Child("supplementalGroups").Index(i), g, "must be between 0 and 2147483647, inclusive"))
		}
	}
	if s.RunAsNonRoot != nil && *s.RunAsNonRoot && s.RunAsUser != nil && *s.RunAsUser == 0 {
		errs = append(errs, v.NewInvalid(p.Child("runAsNonRoot"), true, "must be false when runAsUser is 0 (root)"))
	}
	return append(errs, validateSeccomp(s.SeccompProfile, p.Child("seccompProfile"))...)
}

// sysctlName is a sysctl name as Kubernetes validates it: segments of
// lowercase letters, digits, '-' and '_' (starting and ending with a letter
// or digit), separated by '.' or '/'.
var sysctlName = regexp.MustCompile(`^([a-z0-9]([-_a-z0-9]*[a-z0-9])?[\./])*[a-z0-9]([-_a-z0-9]*[a-z0-9])?$`)

// validateSysctls checks the pod's sysctls as Kubernetes does: a name
// that is one, at most once, and no network (IPC) sysctl for a pod in the
// node's network (IPC) namespace.
func validateSysctls(spec *PodSpec, p *v.Path) v.ErrorList {
	if spec.SecurityContext == nil {
		return nil
	}
	var errs v.ErrorList
	seen := map[string]bool{}
	for i, sc := range spec.SecurityContext.Sysctls {
		np := p.Index(i).Child("name")
		switch {
		case sc.Name == "":
			errs = append(errs, v.NewRequired(np, ""))
		case len(sc.Name) > 253 || !sysctlName.MatchString(sc.Name):
			errs = append(errs, v.NewInvalid(np, sc.Name, "must have at most 253 characters and match regex "+sysctlName.String()))
		case seen[sc.Name]:
			errs = append(errs, v.NewDuplicate(np, sc.Name))
		}
		seen[sc.Name] = true
		name := NormalizeSysctl(sc.Name)
		switch {
		case spec.HostNetwork && strings.HasPrefix(name, "net."):
			errs = append(errs, v.NewInvalid(np, sc.Name, "may not be specified when 'hostNetwork' is true"))
		case spec.HostIPC && (strings.HasPrefix(name, "kernel.shm") || strings.HasPrefix(name, "kernel.msg") || name == "kernel.sem" || strings.HasPrefix(name, "fs.mqueue.")):
			errs = append(errs, v.NewInvalid(np, sc.Name, "may not be specified when 'hostIPC' is true"))
		}
	}
	return errs
}

// validateSecurityContext checks a container's securityContext.
func validateSecurityContext(s *SecurityContext, p *v.Path) v.ErrorList {
	if s == nil {
		return nil
	}
	errs := validateIDs(s.RunAsUser, s.RunAsGroup, p)
	if s.Capabilities != nil {
		for f, list := range [][]string{s.Capabilities.Add, s.Capabilities.Drop} {
			field := []string{"add", "drop"}[f]
			for i, c := range list {
				if !capabilityName.MatchString(c) || len(c) > 4 && c[:4] == "CAP_" {
					errs = append(errs, v.NewInvalid(p.Child("capabilities", field).Index(i), c, "a capability name without CAP_, in capitals (NET_ADMIN), or ALL"))
				}
			}
		}
	}
	privileged := s.Privileged != nil && *s.Privileged
	if s.AllowPrivilegeEscalation != nil && !*s.AllowPrivilegeEscalation {
		if privileged {
			errs = append(errs, v.NewInvalid(p.Child("allowPrivilegeEscalation"), false, "cannot set allowPrivilegeEscalation to false and privileged to true"))
		}
		if s.Capabilities != nil {
			for _, c := range s.Capabilities.Add {
				if c == "SYS_ADMIN" {
					errs = append(errs, v.NewInvalid(p.Child("allowPrivilegeEscalation"), false, "cannot set allowPrivilegeEscalation to false and capabilities.Add CAP_SYS_ADMIN"))
				}
			}
		}
	}
	if s.RunAsNonRoot != nil && *s.RunAsNonRoot && s.RunAsUser != nil && *s.RunAsUser == 0 {
		errs = append(errs, v.NewInvalid(p.Child("runAsNonRoot"), true, "must be false when runAsUser is 0 (root)"))
	}
	return append(errs, validateSeccomp(s.SeccompProfile, p.Child("seccompProfile"))...)
}

// Sysctl is one kernel parameter of the pod's namespaces.
type Sysctl struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// SafeSysctls are the sysctls the kubelet allows without
// --allowed-unsafe-sysctls: namespaced, and harmless to the node and to
// other pods.
var SafeSysctls = []string{"kernel.shm_rmid_forced", "net.ipv4.ip_local_port_range", "net.ipv4.tcp_syncookies", "net.ipv4.ping_group_range",
	"net.ipv4.ip_unprivileged_port_start", "net.ipv4.ip_local_reserved_ports", "net.ipv4.tcp_keepalive_time", "net.ipv4.tcp_fin_timeout",
	"net.ipv4.tcp_keepalive_intvl", "net.ipv4.tcp_keepalive_probes", "net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem"}

// NormalizeSysctl writes a sysctl name with dots: a name that uses '/' as
// its separator has its dots and slashes swapped (kernel/shm_rmid_forced
// is kernel.shm_rmid_forced; net/ipv4/conf/eno2.100/rp_filter is
// net.ipv4.conf.eno2/100.rp_filter), as the kubelet reads it.
func NormalizeSysctl(name string) string {
	if !strings.Contains(name, "/") {
		return name
	}
	return strings.Map(func(r rune) rune {
		switch r {
		case '/':
			return '.'
		case '.':
			return '/'
		}
		return r
	}, name)
}
