// Command kobune-controller is a placeholder: it connects to the API server, says
// plainly that it does nothing yet (issue #5), and waits to be stopped.
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
		log.Fatalf("kobune-controller: %v", err)
	}
	defer c.Close()
	vctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	v, err := c.Version(vctx)
	cancel()
	if err != nil {
		log.Fatalf("kobune-controller: cannot reach the API server at %s: %s", *server, client.Message(err))
	}
	log.Printf("kobune-controller: connected to kobune-apiserver %s at %s", v.Version, *server)
	log.Printf("kobune-controller: NOT IMPLEMENTED YET (issue #5): this process does nothing; stop it with Ctrl-C")
	<-ctx.Done()
}
