// Command kobune-agent is the node agent (kubelet): it registers its node,
// renews the node's Lease and runs the pods bound to it. Everything but the
// flags lives in package agent (Command).
package main

import (
	"context"
	"flag"
	"log"
	"os"
	"os/signal"
	"syscall"

	"github.com/kobune/kobune/agent"
)

func main() {
	var cmd agent.Command
	cmd.Register(flag.CommandLine)
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := cmd.Run(ctx); err != nil && ctx.Err() == nil {
		log.Fatalf("kobune-agent: %v", err)
	}
}
