// Command kobune-scheduler is a placeholder: it connects to the API server, says
// plainly that it does nothing yet (issue #4), and waits to be stopped.
package main

import (
	"context"
	"flag"
	"log"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/kobune/kobune/client"
)

func main() {
	server := flag.String("server", "127.0.0.1:6443", "address of kobune-apiserver")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	c, err := client.New(*server)
	if err != nil {
		log.Fatalf("kobune-scheduler: %v", err)
	}
	defer c.Close()
	vctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	v, err := c.Version(vctx)
	cancel()
	if err != nil {
		log.Fatalf("kobune-scheduler: cannot reach the API server at %s: %s", *server, client.Message(err))
	}
	log.Printf("kobune-scheduler: connected to kobune-apiserver %s at %s", v.Version, *server)
	log.Printf("kobune-scheduler: NOT IMPLEMENTED YET (issue #4): this process does nothing; stop it with Ctrl-C")
	<-ctx.Done()
}
