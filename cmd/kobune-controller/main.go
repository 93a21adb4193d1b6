// Command kobune-controller runs the controllers (kube-controller-manager):
// ReplicaSet, Deployment, DaemonSet, StatefulSet, Job, CronJob, the garbage
// collector, node lifecycle and node IPAM (controllermanager.Names), while it
// holds the Lease kube-system/kobune-controller.
package main

import (
	"context"
	"flag"
	"log"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/kobune/kobune/client"
	"github.com/kobune/kobune/controller/controllermanager"
)

func main() {
	server := flag.String("server", "127.0.0.1:6443", "address of kobune-apiserver")
	var leader client.LeaderFlags
	leader.Register(flag.CommandLine, "kube-system/kobune-controller")
	var cfg controllermanager.Config
	flag.DurationVar(&cfg.NodeLifecycle.GracePeriod, "node-monitor-grace-period", 40*time.Second, "how long a node's Lease may go unrenewed before the node is marked Unknown and tainted unreachable")
	flag.Float64Var(&cfg.NodeLifecycle.EvictionRate, "node-eviction-rate", 10, "pods evicted per second at most from nodes with NoExecute taints")
	flag.BoolVar(&cfg.AllocateNodeCIDRs, "allocate-node-cidrs", true, "give nodes without a pod CIDR one from --cluster-cidr (node IPAM)")
	flag.StringVar(&cfg.NodeIPAM.ClusterCIDR, "cluster-cidr", "10.244.0.0/16", "the range pod CIDRs are allocated from")
	flag.IntVar(&cfg.NodeIPAM.NodeMaskSize, "node-cidr-mask-size", 24, "the size of each node's pod CIDR")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	c, err := client.New(*server)
	if err != nil {
		log.Fatalf("kobune-controller: %v", err)
	}
	defer c.Close()
	vctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	_, err = c.Version(vctx)
	cancel()
	if err != nil {
		log.Printf("kobune-controller: the API server at %s does not answer yet (%s); waiting for it", *server, client.Message(err))
	}
	m, err := controllermanager.New(c, cfg)
	if err != nil {
		log.Fatalf("kobune-controller: %v", err)
	}
	run := func(ctx context.Context) {
		log.Printf("kobune-controller: running %s", strings.Join(controllermanager.Names, ", "))
		m.Run(ctx)
	}
	if err := leader.Run(ctx, c, "kobune-controller", "kobune-controller", run); err != nil && ctx.Err() == nil {
		log.Fatalf("kobune-controller: %v (exiting so a restart starts clean)", err)
	}
}
