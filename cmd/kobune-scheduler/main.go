// Command kobune-scheduler places pending pods on nodes (kube-scheduler).
// Everything but the flags lives in package scheduler (Command).
package main

import (
	"context"
	"flag"
	"log"
	"os"
	"os/signal"
	"syscall"

	"github.com/kobune/kobune/scheduler"
)

func main() {
	var cmd scheduler.Command
	cmd.Register(flag.CommandLine)
	flag.Parse()
	flag.Visit(func(f *flag.Flag) { cmd.NameSet = cmd.NameSet || f.Name == "scheduler-name" })
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := cmd.Run(ctx); err != nil {
		log.Fatalf("kobune-scheduler: %v", err)
	}
}
