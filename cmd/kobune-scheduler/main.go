// Command kobune-scheduler places pending pods on nodes (kube-scheduler).
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"net/http"
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
	metricsAddr := flag.String("metrics-listen", "127.0.0.1:10259", "HTTP address for /metrics (empty: off)")
	leaderElect := flag.Bool("leader-elect", true, "run only while holding the Lease kube-system/<scheduler-name>, so that several replicas can run and one acts")
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
	sched := scheduler.New(scheduler.Config{SchedulerName: *name}, c)
	if *metricsAddr != "" {
		srv := &http.Server{Addr: *metricsAddr, Handler: sched.Metrics.Handler(), ReadHeaderTimeout: 10 * time.Second}
		go func() {
			if err := srv.ListenAndServe(); err != nil && err != http.ErrServerClosed {
				log.Printf("kobune-scheduler: metrics on %s: %v", *metricsAddr, err)
			}
		}()
		defer srv.Close()
	}
	run := func(ctx context.Context) {
		log.Printf("kobune-scheduler: scheduling pods with schedulerName %q (filters: NodeUnschedulable, NodeName, NodeReady, TaintToleration, NodeAffinity, NodePorts, NodeResourcesFit; score: LeastAllocated)", *name)
		sched.Run(ctx)
	}
	if !*leaderElect {
		run(ctx)
		return
	}
	host, _ := os.Hostname()
	le := &client.LeaderElection{Client: c, Namespace: "kube-system", Name: *name,
		Identity: fmt.Sprintf("%s_%d", host, os.Getpid()), OnStartedLeading: run}
	log.Printf("kobune-scheduler: waiting to lead (Lease kube-system/%s, identity %s)", *name, le.Identity)
	if err := le.Run(ctx); err != nil && ctx.Err() == nil {
		log.Fatalf("kobune-scheduler: %v (exiting so a restart starts clean)", err)
	}
}
