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
	configPath := flag.String("config", "", "a SchedulerConfiguration file: plugins to enable or disable, score weights, percentageOfNodesToScore (see scheduler.FileConfig)")
	leaderElect := flag.Bool("leader-elect", true, "run only while holding the Lease kube-system/<scheduler-name>, so that several replicas can run and one acts")
	leaseDuration := flag.Duration("leader-elect-lease-duration", 15*time.Second, "how long a leader's Lease holds without renewal before a standby takes over")
	renewDeadline := flag.Duration("leader-elect-renew-deadline", 10*time.Second, "how long the leader keeps trying to renew before it gives up leading")
	retryPeriod := flag.Duration("leader-elect-retry-period", 2*time.Second, "how often to try to acquire or renew the Lease")
	flag.Parse()
	profile := scheduler.DefaultProfile()
	if *configPath != "" {
		p, cfgName, err := scheduler.LoadConfig(*configPath)
		if err != nil {
			log.Fatalf("kobune-scheduler: --config %v", err)
		}
		profile = p
		if cfgName != "" && !flagSet("scheduler-name") {
			*name = cfgName
		}
	}
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
	sched := scheduler.New(scheduler.Config{SchedulerName: *name, Profile: profile}, c)
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
		log.Printf("kobune-scheduler: scheduling pods with schedulerName %q; %s", *name, profile)
		sched.Run(ctx)
	}
	if !*leaderElect {
		run(ctx)
		return
	}
	host, _ := os.Hostname()
	le := &client.LeaderElection{Client: c, Namespace: "kube-system", Name: *name,
		Identity: fmt.Sprintf("%s_%d", host, os.Getpid()), OnStartedLeading: run,
		LeaseDuration: *leaseDuration, RenewDeadline: *renewDeadline, RetryPeriod: *retryPeriod}
	log.Printf("kobune-scheduler: waiting to lead (Lease kube-system/%s, identity %s)", *name, le.Identity)
	if err := le.Run(ctx); err != nil && ctx.Err() == nil {
		log.Fatalf("kobune-scheduler: %v (exiting so a restart starts clean)", err)
	}
}

// flagSet reports whether a flag was given on the command line.
func flagSet(name string) bool {
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}
