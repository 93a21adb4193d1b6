// Command kobune-agent is the node agent (kubelet): it registers its node,
// renews the node's Lease and runs the pods bound to it. Everything but the
// flags lives in package agent (Command).
//
// Started as `kobune-agent container-log FILE` (by containerd's shim, never
// by hand), it is instead one container's logging process: package
// containerlog says why.
package main

import (
	"context"
	"flag"
	"log"
	"os"
	"os/signal"
	"syscall"

	"github.com/kobune/kobune/agent"
	"github.com/kobune/kobune/agent/containerlog"
)

func main() {
	if len(os.Args) == 3 && os.Args[1] == containerlog.Mode {
		containerlog.RunLogger(os.Args[2])
	}
	var cmd agent.Command
	cmd.Register(flag.CommandLine)
	flag.Parse()
	if exe, err := os.Executable(); err == nil {
		cmd.LogBinary = exe
	} else {
		log.Printf("kobune-agent: container logs will have no times: cannot find this program's path for containerd's shim: %v", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := cmd.Run(ctx); err != nil && ctx.Err() == nil {
		log.Fatalf("kobune-agent: %v", err)
	}
}
