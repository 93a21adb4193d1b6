package installer

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// machine is a host that passes every check: a root directory with the
// files the checks read, every program found, every port free.
func machine(t *testing.T) Host {
	t.Helper()
	root := t.TempDir()
	write := func(p, content string) {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(root, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, p), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("/proc/meminfo", "MemTotal:        4028400 kB\nMemFree:         1000000 kB\n")
	write("/proc/sys/net/ipv4/ip_forward", "1\n")
	write("/proc/sys/net/bridge/bridge-nf-call-iptables", "1\n")
	write("/proc/swaps", "Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n")
	write("/sys/fs/cgroup/cgroup.controllers", "cpuset cpu io memory pids\n")
	write("/run/containerd/containerd.sock", "")
	for _, p := range []string{"bridge", "host-local", "loopback", "portmap"} {
		write("/usr/lib/cni/"+p, "")
	}
	return Host{Root: root, EUID: 0, CPUs: 2, Hostname: "cp1",
		LookPath: func(p string) (string, error) { return "/usr/bin/" + p, nil },
		Listen:   func(string, string) error { return nil },
		Now:      func() time.Time { return time.Date(2026, 12, 5, 0, 0, 0, 0, time.UTC) }}
}

// TestPreflight makes each check that can fail on a machine fail, and
// reads what it tells the user: the check's name, what is wrong, and what
// to do.
func TestPreflight(t *testing.T) {
	var out bytes.Buffer
	if err := Preflight(&out, machine(t), ControlPlane, nil); err != nil || out.Len() != 0 {
		t.Fatalf("a machine that has everything: %v\n%s", err, out.String())
	}
	rm := func(h Host, p string) { os.Remove(filepath.Join(h.Root, p)) }
	put := func(h Host, p, s string) {
		os.MkdirAll(filepath.Dir(filepath.Join(h.Root, p)), 0o755)
		os.WriteFile(filepath.Join(h.Root, p), []byte(s), 0o644)
	}
	for _, c := range []struct {
		check string
		role  Role
		spoil func(h *Host)
		want  []string // in the message
		warn  bool
	}{
		{"IsPrivilegedUser", Worker, func(h *Host) { h.EUID = 1000 }, []string{"must run as root", "sudo kobeadm"}, false},
		{"Mem", Worker, func(h *Host) { put(*h, "/proc/meminfo", "MemTotal: 262144 kB\n") }, []string{"256 MiB", "at least 512 MiB"}, false},
		{"Hostname", Worker, func(h *Host) { h.Hostname = "Worker_1" }, []string{`"Worker_1"`, "upper-case", "hostnamectl set-hostname", "--node-name"}, false},
		{"SystemClock", Worker, func(h *Host) { h.Now = func() time.Time { return time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC) } }, []string{"2001-01-01", "timedatectl set-ntp true"}, false},
		{"ExistingInstall", Worker, func(h *Host) { put(*h, "/etc/kobune/agent.conf", "x") }, []string{"already installed", "/etc/kobune/agent.conf", "kobeadm reset"}, false},
		{"Port-6443", ControlPlane, func(h *Host) {
			h.Listen = func(_, addr string) error {
				if addr == ":6443" {
					return errors.New("address already in use")
				}
				return nil
			}
		}, []string{"port 6443 is in use", "the API server", "ss -ltnp 'sport = :6443'"}, false},
		{"Port-10250", Worker, func(h *Host) {
			h.Listen = func(_, addr string) error {
				if addr == ":10250" {
					return errors.New("address already in use")
				}
				return nil
			}
		}, []string{"port 10250 is in use", "node API"}, false},
		{"FileExisting-containerd", Worker, func(h *Host) {
			h.LookPath = func(p string) (string, error) {
				if p == "containerd" {
					return "", errors.New("not found")
				}
				return "/usr/bin/" + p, nil
			}
		}, []string{"containerd is not installed", "apt-get install -y containerd"}, false},
		{"FileExisting-runc", Worker, func(h *Host) {
			h.LookPath = func(p string) (string, error) {
				if p == "runc" {
					return "", errors.New("not found")
				}
				return "/usr/bin/" + p, nil
			}
		}, []string{"runc is not installed", "apt-get install -y runc"}, false},
		{"CRI", Worker, func(h *Host) { rm(*h, "/run/containerd/containerd.sock") }, []string{"containerd is installed but not running", "systemctl enable --now containerd"}, false},
		{"CNIPlugins", Worker, func(h *Host) { rm(*h, "/usr/lib/cni/portmap") }, []string{"CNI plugins", "apt-get install -y containernetworking-plugins"}, false},
		{"Cgroups", Worker, func(h *Host) { put(*h, "/sys/fs/cgroup/cgroup.controllers", "cpuset cpu io pids\n") }, []string{"without the memory controller"}, false},
		{"IPForward", Worker, func(h *Host) { put(*h, "/proc/sys/net/ipv4/ip_forward", "0\n") }, []string{"ip_forward is not 1", "sysctl -w net.ipv4.ip_forward=1"}, false},
		{"BridgeNetfilter", Worker, func(h *Host) { rm(*h, "/proc/sys/net/bridge/bridge-nf-call-iptables") }, []string{"br_netfilter", "modprobe br_netfilter"}, false},
		{"Swap", Worker, func(h *Host) {
			put(*h, "/proc/swaps", "Filename Type Size Used Priority\n/swapfile file 1048572 0 -2\n")
		}, []string{"swap is on", "swapoff -a"}, true},
	} {
		t.Run(c.check, func(t *testing.T) {
			h := machine(t)
			c.spoil(&h)
			var out bytes.Buffer
			err := Preflight(&out, h, c.role, nil)
			tag := "[ERROR " + c.check + "]: "
			if c.warn {
				tag = "[WARNING " + c.check + "]: "
				if err != nil {
					t.Errorf("a warning failed the preflight: %v", err)
				}
			} else {
				var pe *PreflightError
				if !errors.As(err, &pe) || len(pe.Failed) != 1 || pe.Failed[0] != c.check {
					t.Fatalf("preflight: %v; want one error, %s\n%s", err, c.check, out.String())
				}
				if !strings.Contains(err.Error(), "--ignore-preflight-errors="+c.check) {
					t.Errorf("the error does not say how to skip the check: %v", err)
				}
			}
			if !strings.Contains(out.String(), tag) {
				t.Errorf("output has no %q line:\n%s", tag, out.String())
			}
			for _, w := range c.want {
				if !strings.Contains(out.String(), w) {
					t.Errorf("the message does not say %q:\n%s", w, out.String())
				}
			}
			if c.warn {
				return
			}
			// Ignored by name (any case), it is a warning and passes.
			out.Reset()
			if err := Preflight(&out, h, c.role, []string{strings.ToLower(c.check)}); err != nil || !strings.Contains(out.String(), "[WARNING "+c.check+"]") {
				t.Errorf("--ignore-preflight-errors=%s: %v\n%s", strings.ToLower(c.check), err, out.String())
			}
		})
	}
	// A worker is not asked for the control plane's ports.
	h := machine(t)
	h.Listen = func(_, addr string) error {
		if addr == ":6443" {
			return errors.New("in use")
		}
		return nil
	}
	if err := Preflight(&bytes.Buffer{}, h, Worker, nil); err != nil {
		t.Errorf("a worker's preflight checked the API server's port: %v", err)
	}
	// all: every error ignored.
	h.EUID, h.CPUs = 1000, 0
	if err := Preflight(&bytes.Buffer{}, h, ControlPlane, []string{"all"}); err != nil {
		t.Errorf("--ignore-preflight-errors=all: %v", err)
	}
}
