package agent

import (
	"context"
	"net"
	"time"

	"github.com/kobune/kobune/agent/dns"
	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/discovery"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/client"
)

// Cluster DNS on the node: the agent answers cluster names (agent/dns) on
// its node address, port 53, and publishes that address as an endpoint of
// kube-system/kube-dns in an EndpointSlice of its own. The kube-dns
// Service has internalTrafficPolicy Local, so the node proxy sends each
// pod's questions to the agent of its own node.

// dnsManagedBy is the managed-by label of the agent's kube-dns slice.
const dnsManagedBy = "kobune-agent"

// clusterDNS serves the node's pods' DNS questions and publishes the
// node's address as a kube-dns endpoint (the role CoreDNS plays in
// Kubernetes, here node-local as NodeLocal DNSCache is).
type clusterDNS struct {
	client       *client.Client
	domain       string
	node, nodeIP string
	services     *client.Informer[*core.Service]
	slices       *client.Informer[*discovery.EndpointSlice]
	logf         func(string, ...any)
}

// Run answers on the node's address, port 53, until ctx ends.
func (d *clusterDNS) Run(ctx context.Context) {
	srv := &dns.Server{Domain: d.domain, Logf: d.logf,
		Source: dns.Source{Services: d.services.List, Slices: d.slices.List}}
	addr := net.JoinHostPort(d.nodeIP, "53")
	errs := make(chan error, 1)
	go func() { errs <- srv.Serve(ctx, addr) }()
	select {
	case err := <-errs:
		if err != nil {
			d.logf("%v: this node's pods have no cluster DNS", err)
		}
		return
	case <-time.After(200 * time.Millisecond): // listening
	}
	d.logf("cluster DNS for %s on %s", d.domain, addr)
	for delay := 200 * time.Millisecond; ; delay = min(2*delay, 5*time.Second) {
		err := d.publishEndpoint(ctx)
		if err == nil || ctx.Err() != nil {
			break
		}
		d.logf("publish this node's kube-dns endpoint: %s (retrying)", client.Message(err))
		select {
		case <-ctx.Done():
		case <-time.After(delay):
		}
	}
	<-errs
}

// publishEndpoint creates or updates kube-system/kube-dns-<node>.
func (d *clusterDNS) publishEndpoint(ctx context.Context) error {
	yes, no := true, false
	node := d.node
	udp, tcp := core.ProtocolUDP, core.ProtocolTCP
	port := int32(53)
	dnsName, tcpName := "dns", "dns-tcp"
	want := &discovery.EndpointSlice{ObjectMeta: meta.ObjectMeta{Name: "kube-dns-" + node, Namespace: "kube-system",
		Labels: map[string]string{discovery.LabelServiceName: "kube-dns", discovery.LabelManagedBy: dnsManagedBy}},
		AddressType: discovery.AddressTypeIPv4,
		Endpoints: []discovery.Endpoint{{Addresses: []string{d.nodeIP}, NodeName: &node,
			Conditions: discovery.EndpointConditions{Ready: &yes, Serving: &yes, Terminating: &no}}},
		Ports: []discovery.EndpointPort{{Name: &dnsName, Protocol: &udp, Port: &port}, {Name: &tcpName, Protocol: &tcp, Port: &port}}}
	slices := client.For[*discovery.EndpointSlice](d.client)
	_, err := slices.Create(ctx, want)
	if !client.IsAlreadyExists(err) {
		return err
	}
	cur, err := slices.Get(ctx, "kube-system", want.Name)
	if err != nil {
		return err
	}
	cur.Labels, cur.Endpoints, cur.Ports = want.Labels, want.Endpoints, want.Ports
	_, err = slices.Update(ctx, cur)
	return err
}
