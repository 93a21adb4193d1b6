// Command kobectl is Kobune's command line, shaped like kubectl.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/kobune/kobune/ctl"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := ctl.RunContext(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
