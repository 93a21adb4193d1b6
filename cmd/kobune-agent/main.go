// Command kobune-agent is the node agent (kubelet): it registers its node,
// renews the node's Lease and runs the pods bound to it.
package main

import (
	"context"
	"flag"
	"fmt"
	"hash/fnv"
	"log"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/kobune/kobune/agent"
	"github.com/kobune/kobune/agent/node"
	"github.com/kobune/kobune/agent/runtime"
	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/client"
)

func main() {
	hostname, _ := os.Hostname()
	var (
		server      = flag.String("server", "127.0.0.1:6443", "address of kobune-apiserver")
		nodeName    = flag.String("node-name", hostname, "name of this node")
		nodeIP      = flag.String("node-ip", "", "the node's InternalIP address")
		rtName      = flag.String("runtime", "containerd", "container runtime: containerd, or fake (simulated pods, for scale and controller tests)")
		capacity    = flag.String("capacity", "cpu=4,memory=8Gi,pods=110", "capacity of a simulated node (--runtime fake)")
		reserved    = flag.String("system-reserved", "", "resources kept for the system, e.g. cpu=100m,memory=256Mi; allocatable = capacity - this")
		labels      = flag.String("node-labels", "", "extra node labels, k=v,k2=v2")
		taints      = flag.String("register-with-taints", "", "taints to register with, key=value:Effect,...")
		podCIDR     = flag.String("pod-cidr", "", "this node's pod CIDR (default: a /24 of 10.250.0.0/16 derived from the node name)")
		leaseEvery  = flag.Duration("lease-interval", 10*time.Second, "how often the node's Lease is renewed")
		statusEvery = flag.Duration("status-interval", time.Minute, "how often the node's status is rewritten")
	)
	flag.Parse()

	cfg := agent.Config{LeaseInterval: *leaseEvery, StatusInterval: *statusEvery}
	cfg.Node.Name = *nodeName
	var err error
	if cfg.Node.Capacity, err = node.ParseResources(*capacity); err != nil {
		log.Fatalf("kobune-agent: --capacity: %v", err)
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
	cfg.Node.PodCIDR = *podCIDR
	if cfg.Node.PodCIDR == "" {
		h := fnv.New32a()
		h.Write([]byte(*nodeName))
		cfg.Node.PodCIDR = fmt.Sprintf("10.250.%d.0/24", h.Sum32()%256)
	}

	var rt runtime.Runtime
	switch *rtName {
	case "fake":
		if rt, err = runtime.NewFake(cfg.Node.PodCIDR); err != nil {
			log.Fatalf("kobune-agent: %v", err)
		}
		log.Printf("kobune-agent: SIMULATED node %s (--runtime fake): pods are reported Running but nothing is executed", *nodeName)
	case "containerd":
		log.Fatalf("kobune-agent: the containerd runtime is not implemented yet (issue #3); today only --runtime fake (simulated pods) works")
	default:
		log.Fatalf("kobune-agent: --runtime %q: use containerd or fake", *rtName)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	c, err := client.New(*server)
	if err != nil {
		log.Fatalf("kobune-agent: %v", err)
	}
	defer c.Close()
	if err := agent.New(cfg, c, rt).Run(ctx); err != nil && ctx.Err() == nil {
		log.Fatalf("kobune-agent: %v", err)
	}
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
