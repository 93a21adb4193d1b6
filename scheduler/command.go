package scheduler

import (
	"context"
	"flag"
	"fmt"
	"log"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/client"
)

// Command is kobune-scheduler's command line: cmd/kobune-scheduler parses
// the flags into it and calls Run.
type Command struct {
	Server        string
	Kubeconfig    string
	Name          string
	MetricsListen string
	ConfigPath    string
	Leader        client.LeaderFlags
	// NameSet: --scheduler-name was given, so it wins over the config file's.
	NameSet bool
}

// Register adds the flags.
func (c *Command) Register(fs *flag.FlagSet) {
	fs.StringVar(&c.Server, "server", "127.0.0.1:6443", "address of kobune-apiserver")
	fs.StringVar(&c.Kubeconfig, "kubeconfig", "", "a kubeconfig with the API server's https:// address, its CA and this component's certificate (instead of --server, plaintext)")
	fs.StringVar(&c.Name, "scheduler-name", core.DefaultSchedulerName, "serve pods whose spec.schedulerName is this")
	fs.StringVar(&c.MetricsListen, "metrics-listen", "127.0.0.1:10259", "HTTP address for /healthz, /readyz and /metrics (empty: off)")
	fs.StringVar(&c.ConfigPath, "config", "", "a SchedulerConfiguration file: plugins to enable or disable, score weights, percentageOfNodesToScore (see scheduler.FileConfig)")
	c.Leader.Register(fs, "kube-system/<scheduler-name>")
}

// Run loads the configuration, connects, serves health and metrics, and
// schedules while it leads, until ctx ends. An error means the process
// should exit (a bad flag, or leadership lost: start clean).
func (c *Command) Run(ctx context.Context) error {
	profile := DefaultProfile()
	if c.ConfigPath != "" {
		p, cfgName, err := LoadConfig(c.ConfigPath)
		if err != nil {
			return fmt.Errorf("--config %w", err)
		}
		profile = p
		if cfgName != "" && !c.NameSet {
			c.Name = cfgName
		}
	}
	cl, err := client.Connect(ctx, c.Server, c.Kubeconfig, "kobune-scheduler", log.Printf)
	if err != nil {
		return err
	}
	defer cl.Close()
	sched := New(Config{SchedulerName: c.Name, Profile: profile}, cl)
	return c.Leader.RunComponent(ctx, cl, client.Component{Name: "kobune-scheduler", Lease: c.Name,
		MetricsListen: c.MetricsListen, Metrics: sched.Metrics.Handler(), Ready: client.Synced(sched.pods.HasSynced, sched.nodes.HasSynced),
		Run: func(ctx context.Context) {
			log.Printf("kobune-scheduler: scheduling pods with schedulerName %q; %s", c.Name, profile)
			sched.Run(ctx)
		}})
}
