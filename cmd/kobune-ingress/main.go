// Command kobune-ingress is Kobune's ingress controller (package ingress):
// it serves the Ingresses of the IngressClasses whose controller is
// kobune.io/ingress-controller over HTTP and HTTPS. In a pod it reaches the
// API with its ServiceAccount (in-cluster config); outside, with
// --kubeconfig. The lab runs it as a DaemonSet on the nodes' host network
// (deploy/ingress/kobune-ingress.yaml).
package main

import (
	"context"
	"flag"
	"log"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/kobune/kobune/client"
	"github.com/kobune/kobune/ingress"
)

func main() {
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig to reach the API server (default: the pod's ServiceAccount, in-cluster)")
	controller := flag.String("controller-name", ingress.DefaultControllerName, "serve the IngressClasses whose spec.controller is this")
	httpAddr := flag.String("http-address", ":80", "address of the HTTP listener")
	httpsAddr := flag.String("https-address", ":443", "address of the HTTPS listener (\"\": none)")
	metricsAddr := flag.String("metrics-address", ":10254", "address of /metrics and /healthz (\"\": none)")
	selector := flag.String("publish-pod-selector", "", "label selector of this controller's pods (in $POD_NAMESPACE): their nodes' addresses go into the Ingresses' status")
	publish := flag.String("publish-address", "", "comma-separated addresses for the Ingresses' status, when there is no --publish-pod-selector")
	flag.Parse()
	log.SetFlags(log.LstdFlags | log.LUTC)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var c *client.Client
	var err error
	if cfg, ok, ierr := client.InClusterConfig(); *kubeconfig == "" && ok {
		if ierr != nil {
			log.Fatalf("kobune-ingress: %v", ierr)
		}
		c, err = client.NewFromConfig(cfg)
	} else if *kubeconfig != "" {
		c, err = client.Dial("", *kubeconfig)
	} else {
		log.Fatalf("kobune-ingress: not in a pod and no --kubeconfig: say how to reach the API server")
	}
	if err != nil {
		log.Fatalf("kobune-ingress: %v", err)
	}
	defer c.Close()
	cfg := ingress.Config{ControllerName: *controller, Namespace: os.Getenv("POD_NAMESPACE"), PodSelector: *selector, Logf: log.Printf,
		AccessLog: func(l string) { os.Stdout.WriteString(l + "\n") }}
	if *publish != "" {
		cfg.PublishAddresses = strings.Split(*publish, ",")
	}
	if cfg.PodSelector != "" && cfg.Namespace == "" {
		log.Fatalf("kobune-ingress: --publish-pod-selector needs $POD_NAMESPACE (set it from the downward API: fieldRef metadata.namespace)")
	}
	m := ingress.NewMetrics()
	ic, err := ingress.New(cfg, c, m)
	if err != nil {
		log.Fatalf("kobune-ingress: %v", err)
	}
	go ic.Run(ctx)
	err = ic.Serve(ctx, ingress.Listeners{HTTP: *httpAddr, HTTPS: *httpsAddr, Metrics: *metricsAddr}, func(h, s, m net.Addr) {
		log.Printf("kobune-ingress: serving the IngressClasses of %s: HTTP on %v, HTTPS on %v, metrics on %v", *controller, h, s, m)
	})
	if err != nil {
		log.Fatalf("kobune-ingress: %v", err)
	}
}
