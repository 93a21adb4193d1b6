// Command website-operator is an operator written on Kobune's own client,
// small enough for a course to read in one sitting: the Operator pattern
// of the seed chapter, a custom kind (crd.yaml) and a controller that
// makes the cluster match it.
//
// For each Website it keeps a Deployment of kobune.local/labapp with the
// Website's replicas, owned by the Website (the garbage collector deletes
// it with the Website), and writes the Deployment's ready replicas into
// the Website's status. It is level-based like every Kobune controller
// (client/reconcile): any change to a Website or to a Deployment it owns
// queues the Website, and Reconcile recomputes everything from the
// informers' caches.
//
//	kobectl apply -f crd.yaml
//	go run ./deploy/examples/website-operator --kubeconfig .lab/admin.kubeconfig &
//	kobectl apply -f website.yaml
//	kobectl get websites        # DOMAIN and READY, the printer columns
//	kobectl get deployments     # blog, owned by the Website
//
// It mirrors what kubebuilder scaffolds for controller-runtime, with
// Kobune's client in place of it.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/kobune/kobune/client"
)

func main() {
	kubeconfig := flag.String("kubeconfig", os.Getenv("KUBECONFIG"), "the kubeconfig to connect with")
	server := flag.String("server", "", "the API server (host:port), when no kubeconfig")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	c, err := client.Dial(*server, *kubeconfig)
	if err != nil {
		fmt.Fprintln(os.Stderr, "website-operator:", err)
		os.Exit(1)
	}
	defer c.Close()
	op, err := New(ctx, c, 30*time.Second)
	if err != nil {
		fmt.Fprintln(os.Stderr, "website-operator:", err, "(kobectl apply -f deploy/examples/website-operator/crd.yaml first)")
		os.Exit(1)
	}
	fmt.Println("website-operator: reconciling Websites")
	op.Run(ctx)
}
