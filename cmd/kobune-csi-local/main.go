// Command kobune-csi-local is Kobune's local-path CSI driver and its
// provisioner, one per node. Everything but the flags lives in package
// localpath (Command).
package main

import (
	"context"
	"flag"
	"log"
	"os"
	"os/signal"
	"syscall"

	"github.com/kobune/kobune/csi/localpath"
)

func main() {
	var cmd localpath.Command
	cmd.Register(flag.CommandLine)
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := cmd.Run(ctx); err != nil && ctx.Err() == nil {
		log.Fatalf("kobune-csi-local: %v", err)
	}
}
