// Package dns is the cluster DNS kobune-agent serves on every node (the
// job of CoreDNS's kubernetes plugin, run node-local as NodeLocal
// DNSCache would be), with github.com/miekg/dns, the library CoreDNS is
// built on. It answers, from the agent's caches of Services and
// EndpointSlices:
//
//	<svc>.<ns>.svc.cluster.local             A: the cluster IP, or every ready endpoint of a headless Service
//	<host>.<svc>.<ns>.svc.cluster.local      A: the endpoint with that hostname (StatefulSet pods)
//	_<port>._<proto>.<svc>.<ns>.svc.cluster.local   SRV: each named port (and the endpoints, for headless Services)
//	<svc>.<ns>.svc.cluster.local             CNAME: the externalName of an ExternalName Service
//	<a-b-c-d>.<ns>.pod.cluster.local         A: a.b.c.d
//
// Any other name in the cluster domain is NXDOMAIN; a name outside it is
// REFUSED, unless upstream resolvers are configured (Forward), in which
// case the question is passed on (tests and the lab never configure any:
// nothing leaves the machine).
package dns

import (
	"context"
	"fmt"
	"net"
	"sort"
	"strings"
	"time"

	"github.com/miekg/dns"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/discovery"
)

// TTL of every answer, in seconds (CoreDNS's kubernetes plugin uses 5).
const TTL = 5

// Source is what the server reads: the agent's informer caches.
type Source struct {
	Services func() []*core.Service
	Slices   func() []*discovery.EndpointSlice
}

// Server answers DNS questions for one cluster domain.
type Server struct {
	Domain string // "cluster.local"
	Source Source
	// Forward, when set, are upstream resolvers (host:port) for names
	// outside the cluster domain; empty: those are REFUSED.
	Forward []string
	Logf    func(format string, args ...any)
}

// Serve answers on addr (host:port) over UDP and TCP until ctx ends.
func (s *Server) Serve(ctx context.Context, addr string) error {
	pc, err := net.ListenPacket("udp", addr)
	if err != nil {
		return fmt.Errorf("cluster DNS: listen udp %s: %w", addr, err)
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		pc.Close()
		return fmt.Errorf("cluster DNS: listen tcp %s: %w", addr, err)
	}
	udp := &dns.Server{PacketConn: pc, Handler: s}
	tcp := &dns.Server{Listener: l, Handler: s, ReadTimeout: 5 * time.Second, WriteTimeout: 5 * time.Second}
	go func() { _ = udp.ActivateAndServe() }()
	go func() { _ = tcp.ActivateAndServe() }()
	<-ctx.Done()
	_ = udp.Shutdown()
	_ = tcp.Shutdown()
	return nil
}

// ServeDNS implements dns.Handler.
func (s *Server) ServeDNS(w dns.ResponseWriter, r *dns.Msg) {
	m := s.Answer(r)
	_ = w.WriteMsg(m)
}

// Answer builds the reply to a query.
func (s *Server) Answer(r *dns.Msg) *dns.Msg {
	m := new(dns.Msg)
	m.SetReply(r)
	m.Authoritative = true
	if len(r.Question) != 1 {
		m.Rcode = dns.RcodeFormatError
		return m
	}
	q := r.Question[0]
	name := strings.ToLower(q.Name)
	zone := dns.Fqdn(s.Domain)
	if !dns.IsSubDomain(zone, name) {
		return s.forward(r, m)
	}
	rrs, exists := s.lookup(strings.TrimSuffix(name, "."+zone), q)
	if !exists {
		m.Rcode = dns.RcodeNameError
		m.Ns = []dns.RR{s.soa()}
		return m
	}
	m.Answer = rrs
	if len(rrs) == 0 {
		m.Ns = []dns.RR{s.soa()} // the name exists, not with this type (NODATA)
	}
	return m
}

func (s *Server) soa() dns.RR {
	zone := dns.Fqdn(s.Domain)
	return &dns.SOA{Hdr: dns.RR_Header{Name: zone, Rrtype: dns.TypeSOA, Class: dns.ClassINET, Ttl: TTL},
		Ns: "ns.dns." + zone, Mbox: "hostmaster." + zone, Serial: 1, Refresh: 7200, Retry: 1800, Expire: 86400, Minttl: TTL}
}

func (s *Server) forward(r, m *dns.Msg) *dns.Msg {
	if len(s.Forward) == 0 {
		m.Authoritative = false
		m.Rcode = dns.RcodeRefused
		return m
	}
	c := &dns.Client{Timeout: 2 * time.Second}
	for _, up := range s.Forward {
		if resp, _, err := c.Exchange(r, up); err == nil {
			return resp
		}
	}
	m.Authoritative = false
	m.Rcode = dns.RcodeServerFailure
	return m
}

// lookup answers name (relative to the cluster domain) and reports whether
// the name exists.
func (s *Server) lookup(rel string, q dns.Question) ([]dns.RR, bool) {
	labels := strings.Split(rel, ".")
	n := len(labels)
	switch {
	case n == 3 && labels[2] == "pod":
		ip := net.ParseIP(strings.ReplaceAll(labels[0], "-", "."))
		if ip == nil || ip.To4() == nil {
			return nil, false
		}
		return s.a(q, []string{ip.String()}), true
	case n >= 3 && labels[n-1] == "svc":
		svc := s.service(labels[n-2], labels[n-3])
		if svc == nil {
			return nil, false
		}
		switch n {
		case 3:
			return s.serviceRecords(q, svc), true
		case 4: // <hostname>.<svc>.<ns>.svc
			ips := s.hostnameIPs(svc, labels[0])
			if len(ips) == 0 {
				return nil, false
			}
			return s.a(q, ips), true
		case 5: // _<port>._<proto>.<svc>.<ns>.svc
			return s.srv(q, svc, strings.TrimPrefix(labels[0], "_"), strings.TrimPrefix(labels[1], "_"))
		}
	}
	return nil, false
}

func (s *Server) service(ns, name string) *core.Service {
	for _, svc := range s.Source.Services() {
		if svc.Namespace == ns && svc.Name == name {
			return svc
		}
	}
	return nil
}

func (s *Server) serviceRecords(q dns.Question, svc *core.Service) []dns.RR {
	if svc.Spec.Type == core.ServiceTypeExternalName {
		if q.Qtype != dns.TypeCNAME && q.Qtype != dns.TypeA && q.Qtype != dns.TypeANY {
			return nil
		}
		return []dns.RR{&dns.CNAME{Hdr: hdr(q.Name, dns.TypeCNAME), Target: dns.Fqdn(svc.Spec.ExternalName)}}
	}
	if svc.Spec.ClusterIP == core.ClusterIPNone {
		return s.a(q, s.endpointIPs(svc, ""))
	}
	if svc.Spec.ClusterIP == "" {
		return nil
	}
	return s.a(q, []string{svc.Spec.ClusterIP})
}

// a returns A records for ips when the question asks for them.
func (s *Server) a(q dns.Question, ips []string) []dns.RR {
	if q.Qtype != dns.TypeA && q.Qtype != dns.TypeANY {
		return nil
	}
	var out []dns.RR
	for _, ip := range ips {
		out = append(out, &dns.A{Hdr: hdr(q.Name, dns.TypeA), A: net.ParseIP(ip).To4()})
	}
	return out
}

func hdr(name string, t uint16) dns.RR_Header {
	return dns.RR_Header{Name: name, Rrtype: t, Class: dns.ClassINET, Ttl: TTL}
}

// endpointIPs are the ready endpoint addresses of a Service (with the
// given hostname, when not empty), each once, sorted.
func (s *Server) endpointIPs(svc *core.Service, hostname string) []string {
	seen := map[string]bool{}
	var out []string
	for _, sl := range s.Source.Slices() {
		if sl.Namespace != svc.Namespace || sl.Labels[discovery.LabelServiceName] != svc.Name {
			continue
		}
		for _, e := range sl.Endpoints {
			ready := e.Conditions.Ready == nil || *e.Conditions.Ready
			if !ready && !svc.Spec.PublishNotReadyAddresses {
				continue
			}
			if hostname != "" && (e.Hostname == nil || *e.Hostname != hostname) {
				continue
			}
			for _, a := range e.Addresses {
				if !seen[a] {
					seen[a] = true
					out = append(out, a)
				}
			}
		}
	}
	sort.Strings(out)
	return out
}

func (s *Server) hostnameIPs(svc *core.Service, hostname string) []string {
	if svc.Spec.ClusterIP != core.ClusterIPNone {
		return nil
	}
	return s.endpointIPs(svc, hostname)
}

// srv answers _<port>._<proto>.<svc>.<ns>.svc: the named port, pointing at
// the Service's name (or, for a headless Service, at each endpoint's
// name).
func (s *Server) srv(q dns.Question, svc *core.Service, port, proto string) ([]dns.RR, bool) {
	zone := dns.Fqdn(s.Domain)
	for _, p := range svc.Spec.Ports {
		if p.Name == "" || !strings.EqualFold(p.Name, port) || !strings.EqualFold(string(p.Protocol), proto) {
			continue
		}
		if q.Qtype != dns.TypeSRV && q.Qtype != dns.TypeANY {
			return nil, true
		}
		target := fmt.Sprintf("%s.%s.svc.%s", svc.Name, svc.Namespace, zone)
		return []dns.RR{&dns.SRV{Hdr: hdr(q.Name, dns.TypeSRV), Priority: 0, Weight: 100, Port: uint16(p.Port), Target: target}}, true
	}
	return nil, false
}
