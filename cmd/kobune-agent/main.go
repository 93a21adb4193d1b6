// Command kobune-agent is the node agent (kubelet): it registers its node,
// renews the node's Lease and runs the pods bound to it.
package main

import (
	"context"
	"flag"
	"fmt"
	"hash/fnv"
	"log"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"syscall"
	"time"

	"github.com/kobune/kobune/agent"
	"github.com/kobune/kobune/agent/network"
	"github.com/kobune/kobune/agent/node"
	"github.com/kobune/kobune/agent/runtime"
	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/resource"
	"github.com/kobune/kobune/client"
)

func main() {
	hostname, _ := os.Hostname()
	var (
		server      = flag.String("server", "127.0.0.1:6443", "address of kobune-apiserver")
		nodeName    = flag.String("node-name", hostname, "name of this node")
		nodeIP      = flag.String("node-ip", "", "the node's InternalIP address")
		rtName      = flag.String("runtime", "containerd", "container runtime: containerd, or fake (simulated pods, for scale and controller tests)")
		capacity    = flag.String("capacity", "", "node capacity, e.g. cpu=4,memory=8Gi,pods=110 (default: the host's cpu and memory, pods=110; simulated nodes: cpu=4,memory=8Gi,pods=110)")
		socket      = flag.String("containerd", "/run/containerd/containerd.sock", "containerd socket")
		ctrdNS      = flag.String("containerd-namespace", "kobune", "containerd namespace for this agent's pods")
		stateDir    = flag.String("state-dir", "", "agent state: container logs, CNI allocations (default /var/lib/kobune/agent/NODE)")
		cniDirs     = flag.String("cni-bin-dir", "/usr/lib/cni:/opt/cni/bin", "where the CNI plugins are, colon-separated")
		loadImages  = flag.String("load-images", "", "import every OCI tarball (*.tar) in this directory at start (no registry needed)")
		workers     = flag.Int("workers", 10, "pods set up in parallel")
		nodeAPI     = flag.String("node-api-listen", ":10250", "where the agent serves logs and exec to the API server (the kubelet's port)")
		metricsAddr = flag.String("metrics-listen", "127.0.0.1:10255", "HTTP address for /metrics and /healthz (empty: off)")
		reserved    = flag.String("system-reserved", "", "resources kept for the system, e.g. cpu=100m,memory=256Mi; allocatable = capacity - this")
		labels      = flag.String("node-labels", "", "extra node labels, k=v,k2=v2")
		taints      = flag.String("register-with-taints", "", "taints to register with, key=value:Effect,...")
		podCIDR     = flag.String("pod-cidr", "", "this node's pod CIDR (default: the one kobune-controller allocates, node IPAM; if none comes within 30 s, a /24 of 10.250.0.0/16 derived from the node name)")
		leaseEvery  = flag.Duration("lease-interval", 10*time.Second, "how often the node's Lease is renewed")
		statusEvery = flag.Duration("status-interval", time.Minute, "how often the node's status is rewritten")
		backoffBase = flag.Duration("crashloop-backoff-base", 10*time.Second, "first CrashLoopBackOff delay; it doubles with each restart")
		backoffMax  = flag.Duration("crashloop-backoff-max", 5*time.Minute, "longest CrashLoopBackOff delay")
	)
	flag.Parse()

	cfg := agent.Config{LeaseInterval: *leaseEvery, StatusInterval: *statusEvery, BackoffBase: *backoffBase, BackoffMax: *backoffMax, Workers: *workers}
	cfg.Node.Name = *nodeName
	var err error
	if cfg.Node.Capacity, err = node.ParseResources(*capacity); err != nil {
		log.Fatalf("kobune-agent: --capacity: %v", err)
	}
	if *capacity == "" {
		cfg.Node.Capacity = hostCapacity(*rtName == "fake")
	}
	if cfg.Node.SystemReserved, err = node.ParseResources(*reserved); err != nil {
		log.Fatalf("kobune-agent: --system-reserved: %v", err)
	}
	if cfg.Node.Labels, err = node.ParseLabels(*labels); err != nil {
		log.Fatalf("kobune-agent: --node-labels: %v", err)
	}
	if cfg.Node.Taints, err = node.ParseTaints(*taints); err != nil {
		log.Fatalf("kobune-agent: --register-with-taints: %v", err)
	}
	cfg.Node.Addresses = []core.NodeAddress{{Type: "Hostname", Address: *nodeName}}
	if *nodeIP != "" {
		cfg.Node.Addresses = append([]core.NodeAddress{{Type: "InternalIP", Address: *nodeIP}}, cfg.Node.Addresses...)
	}
	cfg.Node.KernelVersion, cfg.Node.OSImage = hostInfo()
	c, err := client.New(*server)
	if err != nil {
		log.Fatalf("kobune-agent: %v", err)
	}
	defer c.Close()
	cfg.Node.PodCIDR = *podCIDR
	if cfg.Node.PodCIDR == "" {
		// Node IPAM: kobune-controller gives the node a block of the cluster CIDR.
		log.Printf("kobune-agent: no --pod-cidr: waiting for kobune-controller to allocate one (node IPAM)")
		cfg.Node.PodCIDR = node.AwaitPodCIDR(context.Background(), c, cfg.Node, 30*time.Second)
		if cfg.Node.PodCIDR == "" {
			h := fnv.New32a()
			h.Write([]byte(*nodeName))
			cfg.Node.PodCIDR = fmt.Sprintf("10.250.%d.0/24", h.Sum32()%256)
			log.Printf("kobune-agent: no pod CIDR allocated within 30s (is kobune-controller running with --allocate-node-cidrs?); using %s, derived from the node name", cfg.Node.PodCIDR)
		}
		log.Printf("kobune-agent: pod CIDR %s", cfg.Node.PodCIDR)
	}

	metrics := agent.NewMetrics()
	cfg.Metrics = metrics
	var rt runtime.Runtime
	switch *rtName {
	case "fake":
		if rt, err = runtime.NewFake(cfg.Node.PodCIDR); err != nil {
			log.Fatalf("kobune-agent: %v", err)
		}
		cfg.DisableProbes = true
		log.Printf("kobune-agent: SIMULATED node %s (--runtime fake): pods are reported Running and Ready but nothing is executed", *nodeName)
	case "containerd":
		if *stateDir == "" {
			*stateDir = filepath.Join("/var/lib/kobune/agent", *nodeName)
		}
		cni, err := network.NewCNI(network.Config{PluginDirs: strings.Split(*cniDirs, ":"), PodCIDR: cfg.Node.PodCIDR,
			Bridge: "kobune0", StateDir: filepath.Join(*stateDir, "cni")})
		if err != nil {
			log.Fatalf("kobune-agent: %v", err)
		}
		net := network.Timed(cni, func(op string, d time.Duration) { metrics.NetworkCalls.WithLabelValues(op).Observe(d.Seconds()) })
		ctrd, err := runtime.NewContainerd(*socket, *ctrdNS, filepath.Join(*stateDir, "logs"), net)
		if err != nil {
			log.Fatalf("kobune-agent: %v", err)
		}
		defer ctrd.Close()
		ctrd.Observe = func(phase string, d time.Duration) {
			metrics.ContainerPhases.WithLabelValues(phase).Observe(d.Seconds())
		}
		if *loadImages != "" {
			names, err := ctrd.LoadImages(context.Background(), *loadImages)
			if err != nil {
				log.Fatalf("kobune-agent: --load-images: %v", err)
			}
			log.Printf("kobune-agent: loaded images %s", strings.Join(names, ", "))
		}
		rt = ctrd
		cfg.Routes = network.SyncRoutes
		cfg.NodeAPIListen = *nodeAPI
	default:
		log.Fatalf("kobune-agent: --runtime %q: use containerd or fake", *rtName)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if *metricsAddr != "" {
		mux := http.NewServeMux()
		mux.Handle("/metrics", metrics.Handler())
		mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
		srv := &http.Server{Addr: *metricsAddr, Handler: mux, ReadHeaderTimeout: 10 * time.Second}
		go func() {
			if err := srv.ListenAndServe(); err != nil && err != http.ErrServerClosed {
				log.Printf("kobune-agent: metrics on %s: %v", *metricsAddr, err)
			}
		}()
		defer srv.Close()
	}
	if err := agent.New(cfg, c, rt).Run(ctx); err != nil && ctx.Err() == nil {
		log.Fatalf("kobune-agent: %v", err)
	}
}

// hostCapacity is the host's cpu count and memory, and 110 pods (the
// kubelet's default), or a fixed size for simulated nodes.
func hostCapacity(simulated bool) resource.List {
	if simulated {
		l, _ := node.ParseResources("cpu=4,memory=8Gi,pods=110")
		return l
	}
	l := resource.List{resource.CPU: resource.NewQuantity(int64(goruntime.NumCPU()), resource.DecimalSI), resource.Pods: resource.NewQuantity(110, resource.DecimalSI)}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		var kb int64
		fmt.Sscanf(strings.SplitN(string(b), "\n", 2)[0], "MemTotal: %d kB", &kb)
		l[resource.Memory] = resource.NewQuantity(kb*1024, resource.BinarySI)
	}
	return l
}

// hostInfo reads the kernel version and the OS's pretty name.
func hostInfo() (kernel, osImage string) {
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		kernel = strings.TrimSpace(string(b))
	}
	if b, err := os.ReadFile("/etc/os-release"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "PRETTY_NAME="); ok {
				osImage = strings.Trim(v, `"`)
			}
		}
	}
	return kernel, osImage
}
