// Command kobune-scheduler places pending pods on nodes (kube-scheduler).
package main

import (
	"context"
	"flag"
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
	var leader client.LeaderFlags
	leader.Register(flag.CommandLine, "kube-system/<scheduler-name>")
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
	if err := leader.Run(ctx, c, "kobune-scheduler", *name, run); err != nil && ctx.Err() == nil {
		log.Fatalf("kobune-scheduler: %v (exiting so a restart starts clean)", err)
	}
}

// flagSet reports whether a flag was given on the command line.
func flagSet(name string) bool {
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}
