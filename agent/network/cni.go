package network

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/containernetworking/cni/libcni"
	current "github.com/containernetworking/cni/pkg/types/100"
)

// Network sets up and tears down a pod's network.
type Network interface {
	// Setup creates the pod's network namespace and attaches it, with the
	// pod's host ports; it returns the namespace's path and the pod's IP.
	Setup(ctx context.Context, sandboxID string, ports []PortMapping) (netnsPath, ip string, err error)
	// Teardown detaches and removes the namespace; missing pieces are not errors.
	Teardown(ctx context.Context, sandboxID string) error
	// Attached returns the IP of a sandbox that is still set up, so that a
	// pod whose containers were removed keeps its address; ok is false
	// when the sandbox must be made again.
	Attached(ctx context.Context, sandboxID string) (ip string, ok bool)
	// Sandboxes lists the sandboxes this node has set up and not torn
	// down (every node on a host shares /run/netns: only its own count).
	Sandboxes() ([]string, error)
}

// PortMapping is a container's hostPort, in the portmap plugin's terms.
type PortMapping struct {
	HostPort      int32  `json:"hostPort"`
	ContainerPort int32  `json:"containerPort"`
	Protocol      string `json:"protocol"`
	HostIP        string `json:"hostIP,omitempty"`
}

// CNI is a Network on the CNI bridge, host-local, portmap and loopback plugins.
type CNI struct {
	cni      *libcni.CNIConfig
	pods     *libcni.NetworkConfigList
	loopback *libcni.NetworkConfigList
	stateDir string
}

// Config says where the plugins are and which addresses pods get.
type Config struct {
	PluginDirs []string // e.g. /usr/lib/cni
	PodCIDR    string   // this node's range, e.g. 10.244.1.0/24
	Bridge     string   // bridge device, e.g. kobune0
	// StateDir keeps host-local's allocations; one per node, so that
	// several nodes on one host (the lab) never hand out the same address.
	StateDir string
}

// NewCNI checks the plugins exist and prepares the network configuration.
// IP masquerading is off: pods in a Kobune lab have no outside to reach.
func NewCNI(cfg Config) (*CNI, error) {
	for _, p := range []string{"bridge", "host-local", "portmap", "loopback"} {
		found := false
		for _, d := range cfg.PluginDirs {
			if _, err := os.Stat(filepath.Join(d, p)); err == nil {
				found = true
			}
		}
		if !found {
			return nil, fmt.Errorf("CNI plugin %q not found in %s (install it: apt-get install -y containernetworking-plugins)", p, strings.Join(cfg.PluginDirs, ":"))
		}
	}
	pods, err := libcni.ConfListFromBytes([]byte(fmt.Sprintf(`{"cniVersion":"1.0.0","name":"kobune","plugins":[
		{"type":"bridge","bridge":%q,"isGateway":true,"ipMasq":false,"hairpinMode":true,
		 "ipam":{"type":"host-local","ranges":[[{"subnet":%q}]],"routes":[{"dst":"0.0.0.0/0"}],"dataDir":%q}},
		{"type":"portmap","capabilities":{"portMappings":true}}]}`,
		cfg.Bridge, cfg.PodCIDR, filepath.Join(cfg.StateDir, "ipam"))))
	if err != nil {
		return nil, fmt.Errorf("CNI configuration: %w", err)
	}
	lo, err := libcni.ConfListFromBytes([]byte(`{"cniVersion":"1.0.0","name":"loopback","plugins":[{"type":"loopback"}]}`))
	if err != nil {
		return nil, err
	}
	// libcni's cache of results (by default /var/lib/cni, shared with
	// anything else on the machine) is kept in the agent's own state: it
	// goes with the node (kobeadm reset removes the state directory).
	cni := libcni.NewCNIConfigWithCacheDir(cfg.PluginDirs, filepath.Join(cfg.StateDir, "cache"), nil)
	return &CNI{cni: cni, pods: pods, loopback: lo, stateDir: cfg.StateDir}, nil
}

// Sandboxes implements Network.
func (c *CNI) Sandboxes() ([]string, error) { return AllocatedSandboxes(c.stateDir) }

// AllocatedSandboxes lists the sandboxes that hold an address in a node's
// host-local allocations (stateDir as in Config): host-local keeps one file
// per allocated address, named after it, whose first line is the sandbox
// (CNI container) ID, until CNI DEL releases it.
func AllocatedSandboxes(stateDir string) ([]string, error) {
	dir := filepath.Join(stateDir, "ipam", "kobune")
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, e := range entries {
		if e.IsDir() || net.ParseIP(e.Name()) == nil {
			continue // lock, last_reserved_ip.0
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			continue
		}
		if id, _, _ := strings.Cut(string(b), "\n"); strings.TrimSpace(id) != "" {
			ids = append(ids, strings.TrimSpace(id))
		}
	}
	return ids, nil
}

// NetnsName is the name of a sandbox's network namespace under /run/netns.
func NetnsName(sandboxID string) string { return "kobune-" + sandboxID }

// NetnsPath is where the namespace is mounted.
func NetnsPath(sandboxID string) string { return "/run/netns/" + NetnsName(sandboxID) }

// Setup implements Network.
func (c *CNI) Setup(ctx context.Context, sandboxID string, ports []PortMapping) (string, string, error) {
	path := NetnsPath(sandboxID)
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		if out, err := exec.CommandContext(ctx, "ip", "netns", "add", NetnsName(sandboxID)).CombinedOutput(); err != nil {
			return "", "", fmt.Errorf("ip netns add %s: %v: %s", NetnsName(sandboxID), err, strings.TrimSpace(string(out)))
		}
	}
	rt := &libcni.RuntimeConf{ContainerID: sandboxID, NetNS: path, IfName: "lo"}
	if _, err := c.cni.AddNetworkList(ctx, c.loopback, rt); err != nil {
		return "", "", fmt.Errorf("CNI loopback ADD: %w", err)
	}
	rt.IfName = "eth0"
	if len(ports) > 0 {
		rt.CapabilityArgs = map[string]any{"portMappings": ports}
	}
	res, err := c.cni.AddNetworkList(ctx, c.pods, rt)
	if err != nil {
		return "", "", fmt.Errorf("CNI bridge ADD: %w", err)
	}
	r, err := current.NewResultFromResult(res)
	if err != nil || len(r.IPs) == 0 {
		return "", "", fmt.Errorf("CNI bridge ADD returned no IP (%v)", err)
	}
	return path, r.IPs[0].Address.IP.String(), nil
}

// Attached implements Network: the namespace exists, CNI's cache has the
// result of its ADD, and eth0 in it still has that address.
func (c *CNI) Attached(ctx context.Context, sandboxID string) (string, bool) {
	path := NetnsPath(sandboxID)
	if _, err := os.Stat(path); err != nil {
		return "", false
	}
	res, err := c.cni.GetNetworkListCachedResult(c.pods, &libcni.RuntimeConf{ContainerID: sandboxID, NetNS: path, IfName: "eth0"})
	if err != nil || res == nil {
		return "", false
	}
	r, err := current.NewResultFromResult(res)
	if err != nil || len(r.IPs) == 0 {
		return "", false
	}
	ip := r.IPs[0].Address.IP.String()
	out, err := exec.CommandContext(ctx, "ip", "-n", NetnsName(sandboxID), "-o", "addr", "show", "dev", "eth0").CombinedOutput()
	if err != nil || !strings.Contains(string(out), " "+ip+"/") {
		return "", false
	}
	return ip, true
}

// Teardown implements Network. CNI DEL runs before the namespace goes, or
// the bridge plugin would leak its state.
func (c *CNI) Teardown(ctx context.Context, sandboxID string) error {
	path := NetnsPath(sandboxID)
	rt := &libcni.RuntimeConf{ContainerID: sandboxID, NetNS: path, IfName: "eth0"}
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		rt.NetNS = "" // plugins still release the IP without a namespace
	}
	if err := c.cni.DelNetworkList(ctx, c.pods, rt); err != nil {
		return fmt.Errorf("CNI bridge DEL: %w", err)
	}
	if rt.NetNS == "" {
		return nil
	}
	if out, err := exec.CommandContext(ctx, "ip", "netns", "delete", NetnsName(sandboxID)).CombinedOutput(); err != nil {
		return fmt.Errorf("ip netns delete %s: %v: %s", NetnsName(sandboxID), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// Timed wraps a Network so that every call's duration is reported to
// observe ("add" for Setup, "del" for Teardown).
func Timed(n Network, observe func(op string, d time.Duration)) Network {
	return timed{n, observe}
}

type timed struct {
	Network
	observe func(string, time.Duration)
}

func (t timed) Setup(ctx context.Context, id string, ports []PortMapping) (string, string, error) {
	start := time.Now()
	defer func() { t.observe("add", time.Since(start)) }()
	return t.Network.Setup(ctx, id, ports)
}

func (t timed) Teardown(ctx context.Context, id string) error {
	start := time.Now()
	defer func() { t.observe("del", time.Since(start)) }()
	return t.Network.Teardown(ctx, id)
}
