package installer

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/kobune/kobune/client"
	"github.com/kobune/kobune/client/pki"
)

// Config is what an install needs to know about the machine.
type Config struct {
	// NodeName is the machine's node (its hostname by default).
	NodeName string
	// Address is where other machines reach it (the API server, the node
	// API, pods): by default the first global IPv4 address.
	Address string
	// Bundle is the directory with the binaries and images to install (by
	// default the one kobeadm runs from: the unpacked `make dist` bundle,
	// or bin/ after make build).
	Bundle string
	// FastTimings: the netns lab's shortened timings instead of
	// Kubernetes' defaults.
	FastTimings bool
	// Untaint leaves the control plane's node open to ordinary pods.
	Untaint bool
	// TokenTTL is how long init's bootstrap token lives.
	TokenTTL time.Duration
	// JoinCommand is what init prints at the end (its bootstrap-token
	// phase sets it).
	JoinCommand string
	// IgnorePreflight are the checks whose errors are warnings.
	IgnorePreflight []string
	// Systemctl runs systemctl (tests record the calls).
	Systemctl func(args ...string) error
	Out       io.Writer
}

// Phase is one step of init or join: kubeadm's phases, each runnable on
// its own (kobeadm init phase NAME).
type Phase struct {
	Name, Short string
	Run         func(ctx context.Context, c *Config) error
}

// InitPhases are kobeadm init's phases, in order.
func InitPhases() []Phase {
	return []Phase{
		{"preflight", "check that this machine can become a control plane", func(_ context.Context, c *Config) error {
			return Preflight(c.Out, HostOf(), ControlPlane, c.IgnorePreflight)
		}},
		{"install", "put the binaries on PATH (" + BinDir + ") and the images in " + ImagesDir, install},
		{"certs", "make the cluster CA and every certificate in " + PKIDir, certs},
		{"kubeconfig", "write the admin's and the components' kubeconfigs in " + EtcDir, kubeconfigs},
		{"control-plane", "write and start the units of the API server, the scheduler and the controllers", controlPlane},
		{"wait-control-plane", "wait until the API server answers", waitControlPlane},
		{"agent", "write and start this machine's agent and CSI driver (the control plane is a node too)", agentOnControlPlane},
		{"mark-control-plane", "label this machine's node as a control plane and taint it (unless --untaint)", markControlPlane},
		{"bootstrap-token", "publish cluster-info for joining machines and make a bootstrap token", bootstrapToken},
		{"addon", "apply the add-ons' manifests (" + AddonsDir + "): kobune-ingress, the local-path StorageClass", addons},
	}
}

// RunPhases runs phases in order, each saying what it did and how long it took.
func RunPhases(ctx context.Context, c *Config, phases []Phase) error {
	for _, p := range phases {
		start := time.Now()
		fmt.Fprintf(c.Out, "[%s] %s\n", p.Name, p.Short)
		if err := p.Run(ctx, c); err != nil {
			return fmt.Errorf("phase %s: %w", p.Name, err)
		}
		fmt.Fprintf(c.Out, "[%s] done in %s\n", p.Name, time.Since(start).Round(time.Millisecond))
	}
	return nil
}

// Defaults fills what was not given from the machine.
func (c *Config) Defaults() error {
	if c.NodeName == "" {
		name, err := os.Hostname()
		if err != nil {
			return err
		}
		c.NodeName = name
	}
	if c.Address == "" {
		ip, err := firstAddress()
		if err != nil {
			return err
		}
		c.Address = ip
	}
	if c.Bundle == "" {
		exe, err := os.Executable()
		if err != nil {
			return err
		}
		c.Bundle = filepath.Dir(exe)
	}
	if c.Systemctl == nil {
		c.Systemctl = func(args ...string) error {
			out, err := exec.Command("systemctl", args...).CombinedOutput()
			if err != nil {
				return fmt.Errorf("systemctl %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
			}
			return nil
		}
	}
	return nil
}

// firstAddress is the machine's first global IPv4 address.
func firstAddress() (string, error) {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return "", err
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && n.IP.IsGlobalUnicast() {
			return n.IP.String(), nil
		}
	}
	return "", errors.New("the machine has no global IPv4 address: give --apiserver-advertise-address")
}

// Binaries are what an install puts on PATH.
var Binaries = []string{"kobeadm", "kobectl", "kobune-apiserver", "kobune-scheduler", "kobune-controller", "kobune-agent", "kobune-csi-local", "kobune-ingress"}

func install(_ context.Context, c *Config) error {
	for _, b := range Binaries {
		src, dst := filepath.Join(c.Bundle, b), filepath.Join(BinDir, b)
		if same(src, dst) {
			continue
		}
		if err := copyFile(src, dst, 0o755); err != nil {
			return fmt.Errorf("%w (the bundle %s must hold %s: make build, or unpack make dist's tarball)", err, c.Bundle, strings.Join(Binaries, ", "))
		}
	}
	fmt.Fprintf(c.Out, "\tinstalled %s in %s\n", strings.Join(Binaries, ", "), BinDir)
	images, _ := filepath.Glob(filepath.Join(c.Bundle, "images", "*.tar"))
	if err := os.MkdirAll(ImagesDir, 0o755); err != nil {
		return err
	}
	for _, img := range images {
		if err := copyFile(img, filepath.Join(ImagesDir, filepath.Base(img)), 0o644); err != nil {
			return err
		}
	}
	fmt.Fprintf(c.Out, "\t%d images in %s (the agent loads them into containerd)\n", len(images), ImagesDir)
	manifests, _ := filepath.Glob(filepath.Join(c.Bundle, "addons", "*.yaml"))
	if len(manifests) > 0 {
		if err := os.MkdirAll(AddonsDir, 0o755); err != nil {
			return err
		}
	}
	for _, m := range manifests {
		if err := copyFile(m, filepath.Join(AddonsDir, filepath.Base(m)), 0o644); err != nil {
			return err
		}
	}
	fmt.Fprintf(c.Out, "\t%d add-on manifests in %s\n", len(manifests), AddonsDir)
	return nil
}

// addons applies the add-ons' manifests with kobectl, as a user would
// (kubeadm's addon phase applies CoreDNS and kube-proxy; Kobune's agent is
// both, and its add-ons are the ingress controller).
func addons(ctx context.Context, c *Config) error {
	manifests, _ := filepath.Glob(filepath.Join(AddonsDir, "*.yaml"))
	if len(manifests) == 0 {
		fmt.Fprintf(c.Out, "\tno add-on manifest in %s (the bundle's addons/ had none: make dist, or make build, puts kobune-ingress.yaml there)\n", AddonsDir)
		return nil
	}
	for _, m := range manifests {
		out, err := exec.CommandContext(ctx, filepath.Join(BinDir, "kobectl"), "--kubeconfig", AdminConf, "apply", "-f", m).CombinedOutput()
		if err != nil {
			return fmt.Errorf("kobectl apply -f %s: %v: %s", m, err, strings.TrimSpace(string(out)))
		}
		fmt.Fprintf(c.Out, "\tkobectl apply -f %s:\n", m)
		for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			fmt.Fprintf(c.Out, "\t  %s\n", line)
		}
	}
	return nil
}

func same(a, b string) bool {
	sa, err1 := os.Stat(a)
	sb, err2 := os.Stat(b)
	return err1 == nil && err2 == nil && os.SameFile(sa, sb)
}

func copyFile(src, dst string, mode os.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	tmp := dst + ".kobeadm"
	out, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	if err := out.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, dst) // a running binary is replaced, not overwritten
}

func certs(_ context.Context, c *Config) error {
	wrote, err := pki.Init(PKIDir, pki.Options{Server: "https://" + c.Address + ":6443", Names: []string{c.Address, c.NodeName}, Nodes: []string{c.NodeName}})
	if err != nil {
		return err
	}
	fmt.Fprintf(c.Out, "\t%d files in %s (an existing CA is kept): the API server's certificate is for %s, %s, 127.0.0.1 and kubernetes.default.svc\n", len(wrote), PKIDir, c.Address, c.NodeName)
	return nil
}

func kubeconfigs(_ context.Context, c *Config) error {
	for from, to := range map[string]string{"admin.kubeconfig": AdminConf, "scheduler.kubeconfig": EtcDir + "/scheduler.conf",
		"controller.kubeconfig": EtcDir + "/controller.conf", "agent-" + c.NodeName + ".kubeconfig": AgentConf,
		"agent-" + c.NodeName + "-serving.crt": PKIDir + "/agent-serving.crt", "agent-" + c.NodeName + "-serving.key": PKIDir + "/agent-serving.key",
		"csi-" + c.NodeName + ".kubeconfig": CSIConf} {
		if err := copyFile(filepath.Join(PKIDir, from), to, 0o600); err != nil {
			return err
		}
	}
	if _, err := os.Stat(Encryption); errors.Is(err, os.ErrNotExist) {
		key := make([]byte, 32)
		if _, err := rand.Read(key); err != nil {
			return err
		}
		conf := fmt.Sprintf(`apiVersion: apiserver.config.k8s.io/v1
kind: EncryptionConfiguration
resources:
  - resources: [secrets]
    providers:
      - aesgcm:
          keys:
            - name: key1
              secret: %s
      - identity: {}
`, base64.StdEncoding.EncodeToString(key))
		if err := os.WriteFile(Encryption, []byte(conf), 0o600); err != nil {
			return err
		}
	}
	fmt.Fprintf(c.Out, "\t%s (the admin: kobectl and kubectl --kubeconfig %s), scheduler.conf, controller.conf, agent.conf, csi.conf; Secrets' encryption key in %s\n", AdminConf, AdminConf, Encryption)
	return nil
}

func writeUnits(c *Config, units []Unit) error {
	var names []string
	for _, u := range units {
		if err := os.WriteFile(filepath.Join(UnitDir, u.Name+".service"), []byte(u.Text()), 0o644); err != nil {
			return err
		}
		names = append(names, u.Name)
	}
	if err := c.Systemctl("daemon-reload"); err != nil {
		return err
	}
	if err := c.Systemctl(append([]string{"enable", "--now"}, names...)...); err != nil {
		return err
	}
	fmt.Fprintf(c.Out, "\twrote and started %s (in %s; systemctl status NAME, journalctl -u NAME)\n", strings.Join(names, ", "), UnitDir)
	return nil
}

func controlPlane(_ context.Context, c *Config) error {
	return writeUnits(c, ControlPlaneUnits(c.Address, c.FastTimings))
}

func waitControlPlane(ctx context.Context, c *Config) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	var last error
	for {
		cl, err := client.Dial("", AdminConf)
		if err == nil {
			_, err = cl.Version(ctx)
			cl.Close()
			if err == nil {
				return nil
			}
		}
		last = err
		select {
		case <-ctx.Done():
			return fmt.Errorf("the API server did not answer within 2 minutes (%v): journalctl -u kobune-apiserver says why", last)
		case <-time.After(500 * time.Millisecond):
		}
	}
}

func agentOnControlPlane(_ context.Context, c *Config) error {
	return writeUnits(c, []Unit{AgentUnit(c.NodeName, c.Address, ""), CSIUnit(c.NodeName)})
}
