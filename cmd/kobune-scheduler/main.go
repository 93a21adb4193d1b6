// Command kobune-scheduler places pending pods on nodes (kube-scheduler).
package main

import (
	"context"
	"flag"
	"log"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/client"
	"github.com/kobune/kobune/scheduler"
)

func main() {
	server := flag.String("server", "127.0.0.1:6443", "address of kobune-apiserver")
	name := flag.String("scheduler-name", core.DefaultSchedulerName, "serve pods whose spec.schedulerName is this")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	c, err := client.New(*server)
	if err != nil {
		log.Fatalf("kobune-scheduler: %v", err)
	}
	defer c.Close()
	vctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	_, err = c.Version(vctx)
	cancel()
	if err != nil {
		log.Printf("kobune-scheduler: the API server at %s does not answer yet (%s); waiting for it", *server, client.Message(err))
	}
	log.Printf("kobune-scheduler: scheduling pods with schedulerName %q (filters: NodeUnschedulable, NodeName, NodeReady, TaintToleration, NodeAffinity, NodeResourcesFit; score: LeastAllocated)", *name)
	scheduler.New(scheduler.Config{SchedulerName: *name}, c).Run(ctx)
}
