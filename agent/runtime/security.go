package runtime

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/contrib/seccomp"
	"github.com/containerd/containerd/v2/core/containers"
	"github.com/containerd/containerd/v2/pkg/oci"
	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/kobune/kobune/api/core"
)

// effectiveSecurity is a container's security settings after its own
// securityContext overrides the pod's, as the kubelet computes them.
type effectiveSecurity struct {
	user, group      *int64
	nonRoot          bool
	seccomp          *core.SeccompProfile
	readOnlyRoot     bool
	privileged       bool
	noNewPrivs       bool
	add, drop        []string
	supplementalGIDs []uint32
}

func securityOf(pod *core.Pod, c *core.Container) effectiveSecurity {
	var e effectiveSecurity
	if ps := pod.Spec.SecurityContext; ps != nil {
		e.user, e.group, e.seccomp = ps.RunAsUser, ps.RunAsGroup, ps.SeccompProfile
		e.nonRoot = ps.RunAsNonRoot != nil && *ps.RunAsNonRoot
		if ps.FSGroup != nil {
			e.supplementalGIDs = append(e.supplementalGIDs, uint32(*ps.FSGroup))
		}
		for _, g := range ps.SupplementalGroups {
			e.supplementalGIDs = append(e.supplementalGIDs, uint32(g))
		}
	}
	if cs := c.SecurityContext; cs != nil {
		if cs.RunAsUser != nil {
			e.user = cs.RunAsUser
		}
		if cs.RunAsGroup != nil {
			e.group = cs.RunAsGroup
		}
		if cs.RunAsNonRoot != nil {
			e.nonRoot = *cs.RunAsNonRoot
		}
		if cs.SeccompProfile != nil {
			e.seccomp = cs.SeccompProfile
		}
		e.readOnlyRoot = cs.ReadOnlyRootFilesystem != nil && *cs.ReadOnlyRootFilesystem
		e.privileged = cs.Privileged != nil && *cs.Privileged
		e.noNewPrivs = cs.AllowPrivilegeEscalation != nil && !*cs.AllowPrivilegeEscalation
		if cs.Capabilities != nil {
			e.add, e.drop = cs.Capabilities.Add, cs.Capabilities.Drop
		}
	}
	return e
}

// securityOpts turns a container's securityContext (and its pod's) into
// OCI spec options, the way containerd's CRI plugin does for the kubelet.
// An error is a container config error (CreateContainerConfigError).
func (r *Containerd) securityOpts(ctx context.Context, pod *core.Pod, c *core.Container, img client.Image) ([]oci.SpecOpts, error) {
	e := securityOf(pod, c)
	var opts []oci.SpecOpts
	if e.nonRoot {
		if err := checkNonRoot(ctx, pod, c, img, e.user); err != nil {
			return nil, err
		}
	}
	switch {
	case e.user != nil && e.group != nil:
		opts = append(opts, oci.WithUIDGID(uint32(*e.user), uint32(*e.group)))
	case e.user != nil:
		opts = append(opts, oci.WithUserID(uint32(*e.user))) // its group from the image's /etc/passwd, else 0
	case e.group != nil:
		uid, err := imageUID(ctx, img)
		if err != nil {
			return nil, fmt.Errorf("runAsGroup without runAsUser: %w", err)
		}
		opts = append(opts, oci.WithUIDGID(uid, uint32(*e.group)))
	}
	if sc := pod.Spec.SecurityContext; sc != nil && len(sc.Sysctls) > 0 {
		// The pod's sysctls, set by runc in the container's namespaces
		// (the agent let only safe, namespaced ones through).
		sysctls := sc.Sysctls
		opts = append(opts, func(_ context.Context, _ oci.Client, _ *containers.Container, s *oci.Spec) error {
			if s.Linux == nil {
				s.Linux = &specs.Linux{}
			}
			if s.Linux.Sysctl == nil {
				s.Linux.Sysctl = map[string]string{}
			}
			for _, x := range sysctls {
				s.Linux.Sysctl[core.NormalizeSysctl(x.Name)] = x.Value
			}
			return nil
		})
	}
	if len(e.supplementalGIDs) > 0 {
		gids := e.supplementalGIDs
		opts = append(opts, func(_ context.Context, _ oci.Client, _ *containers.Container, s *oci.Spec) error {
			for _, g := range gids {
				if !slices.Contains(s.Process.User.AdditionalGids, g) {
					s.Process.User.AdditionalGids = append(s.Process.User.AdditionalGids, g)
				}
			}
			return nil
		})
	}
	if e.readOnlyRoot {
		opts = append(opts, oci.WithRootFSReadonly())
	}
	if e.privileged {
		opts = append(opts, oci.WithPrivileged, oci.WithAllDevicesAllowed, oci.WithHostDevices)
	} else {
		if caps := capabilities(e.add, e.drop); caps != nil {
			opts = append(opts, oci.WithCapabilities(caps))
		}
		switch {
		case e.seccomp == nil || e.seccomp.Type == core.SeccompUnconfined:
			// Kubernetes' default: no filter.
		case e.seccomp.Type == core.SeccompRuntimeDefault:
			opts = append(opts, seccomp.WithDefaultProfile())
		case e.seccomp.Type == core.SeccompLocalhost:
			o, err := r.localhostSeccomp(*e.seccomp.LocalhostProfile)
			if err != nil {
				return nil, err
			}
			opts = append(opts, o)
		}
	}
	// containerd's default spec sets no_new_privs; Kubernetes' default
	// (allowPrivilegeEscalation unset) is to allow escalation.
	if e.noNewPrivs {
		opts = append(opts, oci.WithNoNewPrivileges)
	} else {
		opts = append(opts, oci.WithNewPrivileges)
	}
	if pod.Spec.HostPID {
		opts = append(opts, oci.WithHostNamespace(specs.PIDNamespace))
	}
	if pod.Spec.HostIPC {
		opts = append(opts, oci.WithHostNamespace(specs.IPCNamespace))
	}
	return opts, nil
}

// defaultCapabilities is the set containerd (and Docker, and so the
// kubelet's pods) give a container.
var defaultCapabilities = []string{"CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_FSETID", "CAP_FOWNER", "CAP_MKNOD", "CAP_NET_RAW", "CAP_SETGID",
	"CAP_SETUID", "CAP_SETFCAP", "CAP_SETPCAP", "CAP_NET_BIND_SERVICE", "CAP_SYS_CHROOT", "CAP_KILL", "CAP_AUDIT_WRITE"}

// allCapabilities are the capabilities "ALL" adds.
var allCapabilities = []string{"CAP_AUDIT_CONTROL", "CAP_AUDIT_READ", "CAP_AUDIT_WRITE", "CAP_BLOCK_SUSPEND", "CAP_BPF", "CAP_CHECKPOINT_RESTORE",
	"CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_DAC_READ_SEARCH", "CAP_FOWNER", "CAP_FSETID", "CAP_IPC_LOCK", "CAP_IPC_OWNER", "CAP_KILL", "CAP_LEASE",
	"CAP_LINUX_IMMUTABLE", "CAP_MAC_ADMIN", "CAP_MAC_OVERRIDE", "CAP_MKNOD", "CAP_NET_ADMIN", "CAP_NET_BIND_SERVICE", "CAP_NET_BROADCAST",
	"CAP_NET_RAW", "CAP_PERFMON", "CAP_SETFCAP", "CAP_SETGID", "CAP_SETPCAP", "CAP_SETUID", "CAP_SYS_ADMIN", "CAP_SYS_BOOT", "CAP_SYS_CHROOT",
	"CAP_SYS_MODULE", "CAP_SYS_NICE", "CAP_SYS_PACCT", "CAP_SYS_PTRACE", "CAP_SYS_RAWIO", "CAP_SYS_RESOURCE", "CAP_SYS_TIME",
	"CAP_SYS_TTY_CONFIG", "CAP_SYSLOG", "CAP_WAKE_ALARM"}

// capabilities is the default set with add and drop applied (drop first,
// as the CRI plugin does; ALL in either means every one), or nil when
// neither is set.
func capabilities(add, drop []string) []string {
	if len(add) == 0 && len(drop) == 0 {
		return nil
	}
	has := slices.Contains[[]string, string]
	caps := []string{}
	if !has(drop, "ALL") {
		for _, c := range defaultCapabilities {
			if !has(drop, strings.TrimPrefix(c, "CAP_")) {
				caps = append(caps, c)
			}
		}
	}
	more := add
	if has(add, "ALL") {
		more = nil
		for _, c := range allCapabilities {
			more = append(more, strings.TrimPrefix(c, "CAP_"))
		}
	}
	for _, a := range more {
		if a == "ALL" {
			continue
		}
		if c := "CAP_" + a; !has(caps, c) {
			caps = append(caps, c)
		}
	}
	return caps
}

// imageUID is the numeric user the image runs as ("" and root are 0); a
// user given by name cannot be told without the image's /etc/passwd.
func imageUID(ctx context.Context, img client.Image) (uint32, error) {
	spec, err := img.Spec(ctx)
	if err != nil {
		return 0, err
	}
	user, _, _ := strings.Cut(spec.Config.User, ":")
	switch user {
	case "", "root":
		return 0, nil
	}
	n, err := strconv.ParseUint(user, 10, 32)
	if err != nil {
		return 0, fmt.Errorf("the image's user is a name (%s), not a number", user)
	}
	return uint32(n), nil
}

// checkNonRoot refuses to run as root a container that must not: the
// kubelet's verifyRunAsNonRoot, with its messages.
func checkNonRoot(ctx context.Context, pod *core.Pod, c *core.Container, img client.Image, user *int64) error {
	podRef := fmt.Sprintf("pod: %q, container: %s", pod.Name+"_"+pod.Namespace+"("+pod.UID+")", c.Name)
	if user != nil {
		if *user == 0 {
			return fmt.Errorf("container's runAsUser breaks non-root policy (%s)", podRef)
		}
		return nil
	}
	spec, err := img.Spec(ctx)
	if err != nil {
		return err
	}
	u, _, _ := strings.Cut(spec.Config.User, ":")
	switch n, err := strconv.ParseUint(u, 10, 32); {
	case u == "" || u == "root" || (err == nil && n == 0):
		return fmt.Errorf("container has runAsNonRoot and image will run as root (%s)", podRef)
	case err != nil:
		return fmt.Errorf("container has runAsNonRoot and image has non-numeric user (%s), cannot verify user is non-root (%s)", u, podRef)
	}
	return nil
}

// localhostSeccomp reads a profile from the node's seccomp directory
// (<state>/seccomp, the kubelet's /var/lib/kubelet/seccomp).
func (r *Containerd) localhostSeccomp(name string) (oci.SpecOpts, error) {
	if r.SeccompDir == "" {
		return nil, fmt.Errorf("seccompProfile Localhost %q: this node has no seccomp directory", name)
	}
	path := filepath.Join(r.SeccompDir, filepath.Clean("/"+name))
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("seccompProfile Localhost: %w", err)
	}
	var profile specs.LinuxSeccomp
	if err := json.Unmarshal(b, &profile); err != nil {
		return nil, fmt.Errorf("seccompProfile Localhost %s: not an OCI seccomp profile: %w", path, err)
	}
	return func(_ context.Context, _ oci.Client, _ *containers.Container, s *oci.Spec) error {
		if s.Linux == nil {
			s.Linux = &specs.Linux{}
		}
		s.Linux.Seccomp = &profile
		return nil
	}, nil
}
