package agent

import (
	"context"
	"flag"
	"fmt"
	"log"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/coreos/go-systemd/v22/daemon"
	"sigs.k8s.io/knftables"

	"github.com/kobune/kobune/agent/eviction"
	"github.com/kobune/kobune/agent/netpol"
	"github.com/kobune/kobune/agent/network"
	"github.com/kobune/kobune/agent/node"
	"github.com/kobune/kobune/agent/proxy"
	"github.com/kobune/kobune/agent/runtime"
	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/client"
)

// Command is kobune-agent's command line: cmd/kobune-agent parses the
// flags into it and calls Run.
type Command struct {
	Server, NodeName, NodeIP, Runtime, Capacity, Socket, ContainerdNS string
	Kubeconfig                                                        string
	StateDir, CNIDirs, LoadImages, NodeAPIListen, MetricsListen       string
	SystemReserved, Labels, Taints, PodCIDR                           string
	Workers                                                           int
	LeaseInterval, StatusInterval, BackoffBase, BackoffMax            time.Duration
	StatsInterval                                                     time.Duration
	// The kubelet's eviction flags.
	EvictionHard, EvictionSoft, EvictionSoftGrace, EvictionMinReclaim string
	EvictionTransition                                                time.Duration
	RuntimeCheckInterval                                              time.Duration
	// LogBinary is the program that runs as each container's logging
	// process: the kobune-agent binary (cmd/kobune-agent sets it to its
	// own path and runs containerlog.RunLogger when started as
	// `kobune-agent container-log FILE`); empty: logs without times.
	LogBinary string
	// Proxy programs the node's Service rules (kube-proxy) with the
	// containerd runtime; ServiceCIDR is the cluster's Service range.
	Proxy bool
	// NetworkPolicy enforces NetworkPolicies for the node's pods
	// (agent/netpol), in nftables table ip kobune-netpol.
	NetworkPolicy bool
	ServiceCIDR   string
	// ClusterCIDR is every node's pod range (kube-proxy's --cluster-cidr).
	ClusterCIDR string
	// ClusterDNS and ClusterDomain go into pods' resolv.conf (the
	// kubelet's flags); DNS serves the cluster domain on the node.
	ClusterDNS, ClusterDomain string
	DNS                       bool
	// TLSCertFile, TLSPrivateKeyFile and ClientCAFile secure the node API
	// (the kubelet's flags of the same names).
	TLSCertFile, TLSPrivateKeyFile, ClientCAFile string
	// BootstrapKubeconfig holds a bootstrap token: the agent asks for its
	// certificates with it (TLS bootstrap) when the files are missing.
	BootstrapKubeconfig string
	// RotateCertificates renews the client and serving certificates
	// before they expire (Rotation).
	RotateCertificates bool
}

// Register adds the flags.
func (c *Command) Register(fs *flag.FlagSet) {
	hostname, _ := os.Hostname()
	fs.StringVar(&c.Server, "server", "127.0.0.1:6443", "address of kobune-apiserver")
	fs.StringVar(&c.Kubeconfig, "kubeconfig", "", "a kubeconfig with the API server's https:// address, its CA and this component's certificate (instead of --server, plaintext)")
	fs.StringVar(&c.NodeName, "node-name", hostname, "name of this node")
	fs.StringVar(&c.NodeIP, "node-ip", "", "the node's InternalIP address")
	fs.StringVar(&c.Runtime, "runtime", "containerd", "container runtime: containerd, or fake (simulated pods, for scale and controller tests)")
	fs.StringVar(&c.Capacity, "capacity", "", "node capacity, e.g. cpu=4,memory=8Gi,pods=110 (default: the host's cpu and memory, pods=110; simulated nodes: cpu=4,memory=8Gi,pods=110)")
	fs.StringVar(&c.Socket, "containerd", "/run/containerd/containerd.sock", "containerd socket")
	fs.StringVar(&c.ContainerdNS, "containerd-namespace", "kobune", "containerd namespace for this agent's pods")
	fs.StringVar(&c.StateDir, "state-dir", "", "agent state: container logs, CNI allocations (default /var/lib/kobune/agent/NODE)")
	fs.StringVar(&c.CNIDirs, "cni-bin-dir", "/usr/lib/cni:/opt/cni/bin", "where the CNI plugins are, colon-separated")
	fs.StringVar(&c.LoadImages, "load-images", "", "import every OCI tarball (*.tar) in this directory at start (no registry needed)")
	fs.IntVar(&c.Workers, "workers", 10, "pods set up in parallel")
	fs.StringVar(&c.NodeAPIListen, "node-api-listen", ":10250", "where the agent serves logs and exec to the API server (the kubelet's port)")
	fs.BoolVar(&c.RotateCertificates, "rotate-certificates", true, "renew the client certificate in --kubeconfig and the node API's (--tls-cert-file) when 70-90% of their lifetime has passed, through a CertificateSigningRequest (the kubelet's rotation)")
	fs.StringVar(&c.BootstrapKubeconfig, "bootstrap-kubeconfig", "", "a kubeconfig with a bootstrap token (kobectl token create --kubeconfig-out): when --kubeconfig (and the node API's certificate files) do not exist, the agent asks for its certificates with it and writes them")
	fs.StringVar(&c.TLSCertFile, "tls-cert-file", "", "the node API's serving certificate (for the node's name; kobectl pki init writes agent-NODE-serving.crt); with --tls-private-key-file and --client-ca-file the node API is TLS 1.3 and answers only the API server")
	fs.StringVar(&c.TLSPrivateKeyFile, "tls-private-key-file", "", "the key of --tls-cert-file")
	fs.StringVar(&c.ClientCAFile, "client-ca-file", "", "the CA that signed the API server's kubelet-client certificate (the cluster CA)")
	fs.StringVar(&c.MetricsListen, "metrics-listen", "127.0.0.1:10255", "HTTP address for /healthz, /readyz, /metrics, and the usage pages /stats/summary and /metrics/cadvisor (empty: off; keep it on loopback: it asks for no credentials)")
	fs.StringVar(&c.SystemReserved, "system-reserved", "", "resources kept for the system, e.g. cpu=100m,memory=256Mi; allocatable = capacity - this")
	fs.StringVar(&c.Labels, "node-labels", "", "extra node labels, k=v,k2=v2")
	fs.StringVar(&c.Taints, "register-with-taints", "", "taints to register with, key=value:Effect,...")
	fs.StringVar(&c.PodCIDR, "pod-cidr", "", "this node's pod CIDR (default: the one kobune-controller allocates, node IPAM, kept in --state-dir for the next start; if none comes within 30 s on the first start, a /24 of 10.250.0.0/16 derived from the node name)")
	fs.DurationVar(&c.LeaseInterval, "lease-interval", 10*time.Second, "how often the node's Lease is renewed")
	fs.DurationVar(&c.StatusInterval, "status-interval", time.Minute, "how often the node's status is rewritten")
	fs.DurationVar(&c.StatsInterval, "stats-interval", time.Second, "how often the pods' cgroups are sampled for usage metrics (CPU rates are over the last 5 s; negative: off)")
	fs.StringVar(&c.ClusterDNS, "cluster-dns", "10.96.0.10", "the cluster DNS address pods' resolv.conf names (the kube-dns Service; empty: the node's resolvers)")
	fs.StringVar(&c.ClusterDomain, "cluster-domain", "cluster.local", "the cluster's DNS domain")
	fs.BoolVar(&c.DNS, "dns", true, "serve cluster DNS on the node's address, port 53, for this node's pods (with --proxy)")
	fs.BoolVar(&c.NetworkPolicy, "network-policy", true, "enforce the NetworkPolicies that select this node's pods, in nftables (containerd runtime only)")
	fs.BoolVar(&c.Proxy, "proxy", true, "program this node's Service rules in nftables (kube-proxy's job; containerd runtime only)")
	fs.StringVar(&c.ClusterCIDR, "cluster-cidr", "10.244.0.0/16", "every node's pod range (kobune-controller's --cluster-cidr): Service traffic from this node's pods to an endpoint outside it (the API server) is masqueraded")
	fs.StringVar(&c.ServiceCIDR, "service-cluster-ip-range", "10.96.0.0/16", "the cluster's Service range (kobune-apiserver's --service-cluster-ip-range), routed on nodes that have no route for it")
	fs.DurationVar(&c.RuntimeCheckInterval, "runtime-check-interval", 5*time.Second, "how often the container runtime is checked; a runtime that does not answer makes the node NotReady")
	fs.DurationVar(&c.BackoffBase, "crashloop-backoff-base", 10*time.Second, "first CrashLoopBackOff delay; it doubles with each restart")
	fs.DurationVar(&c.BackoffMax, "crashloop-backoff-max", 5*time.Minute, "longest CrashLoopBackOff delay")
	fs.StringVar(&c.EvictionHard, "eviction-hard", "memory.available<100Mi,nodefs.available<10%,nodefs.inodesFree<5%,imagefs.available<15%",
		"thresholds that evict a pod at once, SIGNAL<QUANTITY|PERCENT,... (signals: memory.available, nodefs.available, nodefs.inodesFree, imagefs.available, pid.available; empty: none)")
	fs.StringVar(&c.EvictionSoft, "eviction-soft", "", "thresholds that evict a pod after their grace period (--eviction-soft-grace-period), with the pod's own grace")
	fs.StringVar(&c.EvictionSoftGrace, "eviction-soft-grace-period", "", "how long each soft threshold must hold, SIGNAL=DURATION,...")
	fs.StringVar(&c.EvictionMinReclaim, "eviction-minimum-reclaim", "", "once evicting for a signal, free at least this much more than its threshold, SIGNAL=QUANTITY|PERCENT,...")
	fs.DurationVar(&c.EvictionTransition, "eviction-pressure-transition-period", 5*time.Minute, "how long a pressure condition stays True after its threshold was last met")
}

// config turns the flags into the agent's Config; errors name the flag.
func (c *Command) config() (Config, error) {
	cfg := Config{LeaseInterval: c.LeaseInterval, StatusInterval: c.StatusInterval, StatsInterval: c.StatsInterval, RuntimeCheckInterval: c.RuntimeCheckInterval,
		BackoffBase: c.BackoffBase, BackoffMax: c.BackoffMax, Workers: c.Workers}
	cfg.Node.Name = c.NodeName
	var err error
	if cfg.Eviction, err = eviction.Parse(eviction.Config{Hard: c.EvictionHard, Soft: c.EvictionSoft, SoftGracePeriod: c.EvictionSoftGrace, MinimumReclaim: c.EvictionMinReclaim}); err != nil {
		return cfg, err
	}
	cfg.EvictionTransition = c.EvictionTransition
	if cfg.Node.Capacity, err = node.ParseResources(c.Capacity); err != nil {
		return cfg, fmt.Errorf("--capacity: %w", err)
	}
	if c.Capacity == "" {
		cfg.Node.Capacity = HostCapacity(c.Runtime == "fake")
	}
	if cfg.Node.SystemReserved, err = node.ParseResources(c.SystemReserved); err != nil {
		return cfg, fmt.Errorf("--system-reserved: %w", err)
	}
	if cfg.Node.Labels, err = node.ParseLabels(c.Labels); err != nil {
		return cfg, fmt.Errorf("--node-labels: %w", err)
	}
	if cfg.Node.Taints, err = node.ParseTaints(c.Taints); err != nil {
		return cfg, fmt.Errorf("--register-with-taints: %w", err)
	}
	cfg.Node.Addresses = []core.NodeAddress{{Type: "Hostname", Address: c.NodeName}}
	if c.NodeIP != "" {
		cfg.Node.Addresses = append([]core.NodeAddress{{Type: "InternalIP", Address: c.NodeIP}}, cfg.Node.Addresses...)
	}
	cfg.Node.KernelVersion, cfg.Node.OSImage = HostInfo()
	cfg.Node.PodCIDR = c.PodCIDR
	if c.ClusterCIDR != "" {
		if _, _, err := net.ParseCIDR(c.ClusterCIDR); err != nil {
			return cfg, fmt.Errorf("--cluster-cidr %q: want a CIDR such as 10.244.0.0/16", c.ClusterCIDR)
		}
	}
	switch n := btoi(c.TLSCertFile != "") + btoi(c.TLSPrivateKeyFile != "") + btoi(c.ClientCAFile != ""); n {
	case 0:
	case 3:
		if cfg.NodeAPITLS, err = NodeAPITLSConfig(c.TLSCertFile, c.TLSPrivateKeyFile, c.ClientCAFile); err != nil {
			return cfg, err
		}
	default:
		return cfg, fmt.Errorf("--tls-cert-file, --tls-private-key-file and --client-ca-file go together: give all three, or none (a plaintext node API anyone on the network can exec through)")
	}
	return cfg, nil
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// Run sets the node up, serves health and metrics and runs the pods until
// ctx ends. An error means the process should exit.
func (c *Command) Run(ctx context.Context) error {
	if c.BootstrapKubeconfig != "" {
		bctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
		err := Bootstrap(bctx, BootstrapConfig{BootstrapKubeconfig: c.BootstrapKubeconfig, Kubeconfig: c.Kubeconfig, NodeName: c.NodeName,
			CertFile: c.TLSCertFile, KeyFile: c.TLSPrivateKeyFile, ClientCAFile: c.ClientCAFile, Logf: log.Printf})
		cancel()
		if err != nil {
			return fmt.Errorf("TLS bootstrap: %w", err)
		}
	}
	cfg, err := c.config()
	if err != nil {
		return err
	}
	cl, err := client.Dial(c.Server, c.Kubeconfig)
	if err != nil {
		return err
	}
	defer cl.Close()
	if c.RotateCertificates && c.Kubeconfig != "" {
		if _, err := kubeconfigCert(c.Kubeconfig); err == nil {
			go (&Rotation{Kubeconfig: c.Kubeconfig, CertFile: c.TLSCertFile, KeyFile: c.TLSPrivateKeyFile, NodeName: c.NodeName, Client: cl, Logf: log.Printf}).Run(ctx)
		}
	}
	if c.StateDir == "" && c.Runtime == "containerd" {
		c.StateDir = filepath.Join("/var/lib/kobune/agent", c.NodeName)
	}
	if cfg.Node.PodCIDR == "" {
		cfg.Node.PodCIDR = c.podCIDR(ctx, cl, cfg.Node)
	}
	if cfg.NodeAPITLS == nil && c.NodeAPIListen != "" {
		log.Printf("kobune-agent: WARNING: the node API on %s is plaintext and unauthenticated: anyone who reaches it can read logs and exec into this node's pods; give --tls-cert-file, --tls-private-key-file and --client-ca-file", c.NodeAPIListen)
	}
	cfg.Metrics = NewMetrics()
	cfg.Started = notifySystemd
	rt, closeRT, err := c.runtime(ctx, &cfg)
	if err != nil {
		return err
	}
	defer closeRT()
	a := New(cfg, cl, rt)
	if c.MetricsListen != "" {
		health := &client.HealthServer{Metrics: cfg.Metrics.Handler(), Paths: a.StatsHandlers()}
		health.AddReadyCheck("node-registered", a.Ready)
		if err := health.Serve(ctx, c.MetricsListen, log.Printf); err != nil {
			return err
		}
	}
	return a.Run(ctx)
}

// runtime opens the container runtime the flags name, and the pod network
// with it; the function returned closes it.
func (c *Command) runtime(ctx context.Context, cfg *Config) (runtime.Runtime, func(), error) {
	switch c.Runtime {
	case "fake":
		rt, err := runtime.NewFake(cfg.Node.PodCIDR)
		if err != nil {
			return nil, nil, err
		}
		cfg.DisableProbes = true
		log.Printf("kobune-agent: SIMULATED node %s (--runtime fake): pods are reported Running and Ready but nothing is executed", c.NodeName)
		return rt, func() {}, nil
	case "containerd":
	default:
		return nil, nil, fmt.Errorf("--runtime %q: use containerd or fake", c.Runtime)
	}
	cni, err := network.NewCNI(network.Config{PluginDirs: strings.Split(c.CNIDirs, ":"), PodCIDR: cfg.Node.PodCIDR,
		Bridge: "kobune0", StateDir: filepath.Join(c.StateDir, "cni")})
	if err != nil {
		return nil, nil, err
	}
	m := cfg.Metrics
	net := network.Timed(cni, func(op string, d time.Duration) { m.NetworkCalls.WithLabelValues(op).Observe(d.Seconds()) })
	ctrd, err := runtime.NewContainerd(c.Socket, c.ContainerdNS, filepath.Join(c.StateDir, "logs"), net)
	if err != nil {
		return nil, nil, err
	}
	ctrd.DNS = runtime.DNS{ClusterDNS: c.ClusterDNS, Domain: c.ClusterDomain, HostResolvConf: "/etc/resolv.conf"}
	ctrd.PodDir = filepath.Join(c.StateDir, "pods")
	ctrd.SeccompDir = filepath.Join(c.StateDir, "seccomp")
	ctrd.LogBinary = c.LogBinary
	cfg.PodDir = ctrd.PodDir
	cfg.CSIPluginDir = filepath.Join(c.StateDir, "plugins")
	ctrd.Observe = func(phase string, d time.Duration) { m.ContainerPhases.WithLabelValues(phase).Observe(d.Seconds()) }
	ctrd.Node = runtime.HostNode{Name: c.NodeName, IP: c.NodeIP, Netns: fmt.Sprintf("/proc/%d/ns/net", os.Getpid())}
	if c.LoadImages != "" {
		names, err := ctrd.LoadImages(ctx, c.LoadImages)
		if err != nil {
			ctrd.Close()
			return nil, nil, fmt.Errorf("--load-images: %w", err)
		}
		log.Printf("kobune-agent: loaded images %s", strings.Join(names, ", "))
	}
	cfg.Routes = network.SyncRoutes
	cfg.NodeAPIListen = c.NodeAPIListen
	if c.Proxy {
		nft, err := knftables.New(knftables.IPv4Family, proxy.Table, knftables.UseNetlink)
		if err != nil {
			ctrd.Close()
			return nil, nil, fmt.Errorf("node proxy: %w (install nftables: apt-get install -y nftables; or run with --proxy=false)", err)
		}
		cfg.Proxy = proxy.New(proxy.Config{NodeName: c.NodeName, PodCIDR: cfg.Node.PodCIDR, ClusterCIDR: c.ClusterCIDR}, nft)
		cfg.Proxy.Netlink = proxy.NewNetlink()
		if _, err := exec.LookPath("conntrack"); err == nil {
			cfg.Proxy.Conntrack = proxy.ConntrackCLI
		} else {
			log.Printf("kobune-agent: conntrack is not installed: UDP flows to endpoints that went are not cleaned up (apt-get install -y conntrack)")
		}
		nodeIP := c.NodeIP
		for _, a := range cfg.Node.Addresses {
			if a.Type == "InternalIP" && nodeIP == "" {
				nodeIP = a.Address
			}
		}
		cfg.ServiceRoute = func(ctx context.Context) error { return network.EnsureServiceRoute(ctx, c.ServiceCIDR, nodeIP) }
		if c.DNS {
			cfg.ClusterDomain = c.ClusterDomain
		}
	}
	if c.NetworkPolicy {
		nft, err := knftables.New(knftables.IPv4Family, netpol.Table, knftables.UseNetlink)
		if err != nil {
			ctrd.Close()
			return nil, nil, fmt.Errorf("NetworkPolicy: %w (install nftables: apt-get install -y nftables; or run with --network-policy=false)", err)
		}
		if err := netpol.CheckBridgeNetfilter(); err != nil {
			log.Printf("kobune-agent: %v", err)
		}
		cfg.NetworkPolicy = netpol.New(c.NodeName, nft)
	}
	return ctrd, func() { ctrd.Close() }, nil
}

// notifySystemd tells systemd the agent has started (READY=1 on
// $NOTIFY_SOCKET: kobeadm's unit is Type=notify, so systemctl start
// returns, and units ordered after the agent start, only then). Nothing
// happens without the variable. It is unset afterwards so that no process
// the agent starts (CNI plugins, hooks) can speak for the agent.
func notifySystemd() {
	if _, err := daemon.SdNotify(true, daemon.SdNotifyReady); err != nil {
		log.Printf("kobune-agent: telling systemd it is ready: %v", err)
	}
}
