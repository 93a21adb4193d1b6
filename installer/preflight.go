package installer

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Host is what the preflight checks read of the machine. Real reads by
// default (HostOf); tests give a root directory of their own and
// functions that fail on purpose.
type Host struct {
	// Root is prepended to every file path the checks read (/proc, /sys,
	// /etc, /usr/lib/cni, /var/lib/kobune): "/" on a machine.
	Root string
	// EUID is the user the installer runs as.
	EUID int
	// CPUs is the number of CPUs the machine has.
	CPUs int
	// LookPath finds a program on PATH (exec.LookPath).
	LookPath func(string) (string, error)
	// Listen tries to listen on a TCP or UDP address ("tcp", ":6443").
	Listen func(network, addr string) error
	// Now is the machine's clock.
	Now func() time.Time
	// Hostname is the machine's name (the node's, unless --node-name).
	Hostname string
}

// HostOf is this machine, read as the checks read it.
func HostOf() Host {
	name, _ := os.Hostname()
	return Host{Root: "/", EUID: os.Geteuid(), CPUs: runtime.NumCPU(), LookPath: exec.LookPath, Listen: listen, Now: time.Now, Hostname: name}
}

func listen(network, addr string) error {
	if strings.HasPrefix(network, "udp") {
		c, err := net.ListenPacket(network, addr)
		if err != nil {
			return err
		}
		return c.Close()
	}
	l, err := net.Listen(network, addr)
	if err != nil {
		return err
	}
	return l.Close()
}

func (h Host) path(p string) string { return filepath.Join(h.Root, p) }

func (h Host) read(p string) (string, error) {
	b, err := os.ReadFile(h.path(p))
	return strings.TrimSpace(string(b)), err
}

func (h Host) exists(p string) bool {
	_, err := os.Stat(h.path(p))
	return err == nil
}

// Role is what the machine becomes: the control plane (kobeadm init) or a
// worker (kobeadm join).
type Role int

const (
	ControlPlane Role = iota
	Worker
)

// Check is one preflight check, named as kubeadm names its checks (the
// name is what --ignore-preflight-errors takes). Warn-only checks never
// stop an install. Check returns nil when the machine passes, or an error
// that says what is wrong and what to do.
type Check struct {
	Name  string
	Warn  bool
	Roles []Role
	Check func(Host) error
}

// Checks are kobeadm's preflight checks, in the order they run.
func Checks() []Check {
	both := []Role{ControlPlane, Worker}
	cp := []Role{ControlPlane}
	checks := []Check{
		{Name: "IsPrivilegedUser", Roles: both, Check: func(h Host) error {
			if h.EUID != 0 {
				return errors.New("kobeadm must run as root: it writes systemd units, /etc/kobune and /var/lib/kobune (sudo kobeadm ...)")
			}
			return nil
		}},
		{Name: "NumCPU", Roles: both, Check: func(h Host) error {
			if h.CPUs < 1 {
				return fmt.Errorf("the machine has %d CPUs: Kobune needs at least 1", h.CPUs)
			}
			return nil
		}},
		{Name: "Mem", Roles: both, Check: memCheck},
		{Name: "Hostname", Roles: both, Check: func(h Host) error {
			if msg := dnsLabelProblem(h.Hostname); msg != "" {
				return fmt.Errorf("the hostname %q cannot be a node's name (%s): set one with hostnamectl set-hostname NAME, or give --node-name", h.Hostname, msg)
			}
			return nil
		}},
		{Name: "SystemClock", Roles: both, Check: func(h Host) error {
			if now := h.Now(); now.Before(clockFloor) {
				return fmt.Errorf("the clock says %s, before this kobeadm was made: certificates made now would not be valid yet on machines with the right time; set it (timedatectl set-ntp true, or date -s)", now.UTC().Format(time.RFC3339))
			}
			return nil
		}},
		{Name: "ExistingInstall", Roles: both, Check: func(h Host) error {
			for _, p := range []string{"/etc/kobune/admin.conf", "/etc/kobune/agent.conf", "/etc/kobune/pki/ca.crt", "/etc/systemd/system/kobune-agent.service"} {
				if h.exists(p) {
					return fmt.Errorf("Kobune is already installed on this machine (%s exists): run kobeadm reset first", p)
				}
			}
			return nil
		}},
	}
	for _, port := range []struct {
		port  int
		roles []Role
		what  string
	}{
		{6443, cp, "the API server"},
		{6444, cp, "the API server's health and metrics"},
		{10257, cp, "kobune-controller's health and metrics"},
		{10259, cp, "kobune-scheduler's health and metrics"},
		{10250, both, "the agent's node API (logs, exec)"},
		{10255, both, "the agent's health and metrics"},
	} {
		port := port
		checks = append(checks, Check{Name: "Port-" + strconv.Itoa(port.port), Roles: port.roles, Check: func(h Host) error {
			if err := h.Listen("tcp", ":"+strconv.Itoa(port.port)); err != nil {
				return fmt.Errorf("port %d is in use (%s needs it): find what holds it with ss -ltnp 'sport = :%d' and stop it, or run kobeadm reset if it is an earlier install", port.port, port.what, port.port)
			}
			return nil
		}})
	}
	checks = append(checks,
		Check{Name: "FileExisting-containerd", Roles: both, Check: programCheck("containerd", "containerd")},
		Check{Name: "FileExisting-runc", Roles: both, Check: programCheck("runc", "runc")},
		// kubeadm's CRI check: the runtime must run, not only be installed.
		Check{Name: "CRI", Roles: both, Check: func(h Host) error {
			if h.exists(ContainerdSocket) {
				return nil
			}
			if _, err := h.LookPath("containerd"); err != nil {
				return nil // FileExisting-containerd says what to do
			}
			return fmt.Errorf("containerd is installed but not running (no %s): systemctl enable --now containerd; its distribution's default configuration is what the agent expects (it keeps its containers in containerd's namespace kobune)", ContainerdSocket)
		}},
		Check{Name: "FileExisting-nft", Roles: both, Check: programCheck("nft", "nftables")},
		Check{Name: "FileExisting-ip", Roles: both, Check: programCheck("ip", "iproute2")},
		Check{Name: "CNIPlugins", Roles: both, Check: cniCheck},
		Check{Name: "Cgroups", Roles: both, Check: cgroupCheck},
		Check{Name: "IPForward", Roles: both, Check: func(h Host) error {
			v, err := h.read("/proc/sys/net/ipv4/ip_forward")
			if err != nil || v != "1" {
				return errors.New("/proc/sys/net/ipv4/ip_forward is not 1: pods on other machines cannot be reached; run sysctl -w net.ipv4.ip_forward=1 and keep it in /etc/sysctl.d/99-kobune.conf")
			}
			return nil
		}},
		Check{Name: "BridgeNetfilter", Roles: both, Check: func(h Host) error {
			v, err := h.read("/proc/sys/net/bridge/bridge-nf-call-iptables")
			if err != nil {
				return errors.New("/proc/sys/net/bridge/bridge-nf-call-iptables does not exist: the br_netfilter module is not loaded, so Service rules and NetworkPolicy miss traffic between pods of one machine; run modprobe br_netfilter and keep it in /etc/modules-load.d/kobune.conf")
			}
			if v != "1" {
				return errors.New("net.bridge.bridge-nf-call-iptables is 0: Service rules and NetworkPolicy miss traffic between pods of one machine; run sysctl -w net.bridge.bridge-nf-call-iptables=1 and keep it in /etc/sysctl.d/99-kobune.conf")
			}
			return nil
		}},
		Check{Name: "Swap", Warn: true, Roles: both, Check: func(h Host) error {
			s, err := h.read("/proc/swaps")
			if err == nil && strings.Count(s, "\n") > 0 {
				return errors.New("swap is on: the kubelet refuses to start with swap by default; Kobune's agent runs, but a container's memory limit then counts memory and not swap (swapoff -a, and remove the swap line from /etc/fstab)")
			}
			return nil
		}},
	)
	return checks
}

// clockFloor: a clock before this is wrong (kobeadm did not exist).
var clockFloor = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func memCheck(h Host) error {
	s, err := h.read("/proc/meminfo")
	if err != nil {
		return fmt.Errorf("cannot read /proc/meminfo: %v", err)
	}
	for _, line := range strings.Split(s, "\n") {
		f := strings.Fields(line)
		if len(f) >= 2 && f[0] == "MemTotal:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			if mib := kb / 1024; mib < 512 {
				return fmt.Errorf("the machine has %d MiB of memory: Kobune needs at least 512 MiB (a control plane uses about 100 MiB, each pod its own)", mib)
			}
			return nil
		}
	}
	return errors.New("/proc/meminfo has no MemTotal line")
}

func programCheck(prog, pkg string) func(Host) error {
	return func(h Host) error {
		if _, err := h.LookPath(prog); err != nil {
			return fmt.Errorf("%s is not installed: apt-get install -y %s (or install from kobeadm's bundle)", prog, pkg)
		}
		return nil
	}
}

// CNIDirs are where the CNI plugins are looked for (Debian's package, the
// upstream tarball's place).
var CNIDirs = []string{"/usr/lib/cni", "/opt/cni/bin"}

func cniCheck(h Host) error {
	for _, dir := range CNIDirs {
		missing := slices.DeleteFunc([]string{"bridge", "host-local", "loopback", "portmap"}, func(p string) bool { return h.exists(filepath.Join(dir, p)) })
		if len(missing) == 0 {
			return nil
		}
	}
	return fmt.Errorf("the CNI plugins bridge, host-local, loopback and portmap are not in %s: apt-get install -y containernetworking-plugins", strings.Join(CNIDirs, " or "))
}

func cgroupCheck(h Host) error {
	if c, err := h.read("/sys/fs/cgroup/cgroup.controllers"); err == nil {
		for _, want := range []string{"cpu", "memory"} {
			if !slices.Contains(strings.Fields(c), want) {
				return fmt.Errorf("cgroup v2 without the %s controller: pods' limits cannot be set; enable it (on a VM: the kernel command line; in a container: delegate it)", want)
			}
		}
		return nil
	}
	for _, want := range []string{"cpu", "memory"} {
		if !h.exists(filepath.Join("/sys/fs/cgroup", want)) {
			return fmt.Errorf("no cgroup v2 and no cgroup v1 %s hierarchy under /sys/fs/cgroup: pods' limits cannot be set; boot with cgroups (systemd mounts them)", want)
		}
	}
	return nil
}

// dnsLabelProblem says why name is not a DNS-1123 subdomain, or "".
func dnsLabelProblem(name string) string {
	switch {
	case name == "":
		return "empty"
	case len(name) > 253:
		return "longer than 253 characters"
	case strings.ToLower(name) != name:
		return "upper-case letters"
	}
	for _, label := range strings.Split(name, ".") {
		if label == "" || label[0] == '-' || label[len(label)-1] == '-' {
			return "a label that is empty or starts or ends with '-'"
		}
		for _, r := range label {
			if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-') {
				return fmt.Sprintf("the character %q", r)
			}
		}
	}
	return ""
}

// PreflightError is a preflight that found errors not ignored.
type PreflightError struct{ Failed []string }

func (e *PreflightError) Error() string {
	return fmt.Sprintf("preflight found %d error(s) (%s): fix them, or skip a check with --ignore-preflight-errors=%s (all: every check)",
		len(e.Failed), strings.Join(e.Failed, ", "), strings.Join(e.Failed, ","))
}

// Preflight runs the checks for role and prints each finding as kubeadm
// does ([ERROR Name]: ..., [WARNING Name]: ...). A check named in ignore
// (or "all") prints as a warning and does not fail the preflight.
func Preflight(w io.Writer, h Host, role Role, ignore []string) error {
	ignored := func(name string) bool {
		return slices.ContainsFunc(ignore, func(s string) bool { return strings.EqualFold(s, name) || strings.EqualFold(s, "all") })
	}
	var failed []string
	for _, c := range Checks() {
		if !slices.Contains(c.Roles, role) {
			continue
		}
		err := c.Check(h)
		switch {
		case err == nil:
		case c.Warn || ignored(c.Name):
			fmt.Fprintf(w, "\t[WARNING %s]: %v\n", c.Name, err)
		default:
			fmt.Fprintf(w, "\t[ERROR %s]: %v\n", c.Name, err)
			failed = append(failed, c.Name)
		}
	}
	if len(failed) > 0 {
		return &PreflightError{Failed: failed}
	}
	return nil
}
