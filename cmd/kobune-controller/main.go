// Command kobune-controller runs the controllers (kube-controller-manager):
// ReplicaSet, Deployment, DaemonSet, StatefulSet, Job, CronJob, EndpointSlice,
// the garbage collector, node lifecycle and node IPAM (controllermanager.Names), while it
// holds the Lease kube-system/kobune-controller. Everything but the flags
// lives in package controllermanager (Command).
package main

import (
	"context"
	"flag"
	"log"
	"os"
	"os/signal"
	"syscall"

	"github.com/kobune/kobune/controller/controllermanager"
)

func main() {
	var cmd controllermanager.Command
	cmd.Register(flag.CommandLine)
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := cmd.Run(ctx); err != nil {
		log.Fatalf("kobune-controller: %v", err)
	}
}
