package agent

import (
	"context"
	"fmt"
	"hash/fnv"
	"log"
	"os"
	goruntime "runtime"
	"strings"
	"time"

	"github.com/kobune/kobune/agent/node"
	"github.com/kobune/kobune/api/resource"
	"github.com/kobune/kobune/client"
)

// HostCapacity is the host's cpu count and memory (/proc/meminfo), and 110
// pods (the kubelet's default), or a fixed size for simulated nodes.
func HostCapacity(simulated bool) resource.List {
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

// HostInfo reads the kernel version and the OS's pretty name.
func HostInfo() (kernel, osImage string) {
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

// AwaitPodCIDR waits up to wait for kobune-controller's node IPAM to give
// the node a pod CIDR (the kubelet waits for spec.podCIDR the same way);
// when none comes, it falls back to a /24 of 10.250.0.0/16 derived from the
// node's name, and says so.
func AwaitPodCIDR(ctx context.Context, c *client.Client, cfg node.Config, wait time.Duration) string {
	log.Printf("kobune-agent: no --pod-cidr: waiting for kobune-controller to allocate one (node IPAM)")
	cidr := node.AwaitPodCIDR(ctx, c, cfg, wait)
	if cidr == "" {
		h := fnv.New32a()
		h.Write([]byte(cfg.Name))
		cidr = fmt.Sprintf("10.250.%d.0/24", h.Sum32()%256)
		log.Printf("kobune-agent: no pod CIDR allocated within %v (is kobune-controller running with --allocate-node-cidrs?); using %s, derived from the node name", wait, cidr)
	}
	log.Printf("kobune-agent: pod CIDR %s", cidr)
	return cidr
}
