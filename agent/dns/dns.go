// Package dns is the cluster DNS kobune-agent serves on every node (the
// job of CoreDNS's kubernetes plugin, run node-local as NodeLocal
// DNSCache would be), with github.com/miekg/dns, the library CoreDNS is
// built on. It answers, from the agent's caches of Services and
// EndpointSlices:
//
//	<svc>.<ns>.svc.cluster.local             A: the cluster IP, or every ready endpoint of a headless Service
//	<host>.<svc>.<ns>.svc.cluster.local      A: the headless Service's endpoint with that hostname
//	                                         (StatefulSet pods) or that address with dashes (10-244-1-7)
//	_<port>._<proto>.<svc>.<ns>.svc.cluster.local   SRV: a named port, at the Service's name; for a headless
//	                                         Service one record per endpoint, at its name and port
//	<svc>.<ns>.svc.cluster.local             CNAME: the externalName of an ExternalName Service
//	<a-b-c-d>.<ns>.pod.cluster.local         A: a.b.c.d
//	<d.c.b.a>.in-addr.arpa                   PTR: the Service whose cluster IP a.b.c.d is, or the
//	                                         headless Service's endpoint at that address
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
	if dns.IsSubDomain("in-addr.arpa.", name) {
		if rrs, ok := s.reverse(q, name); ok {
			m.Answer = rrs
			return m
		}
	}
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

// reverse answers a PTR question for an address the cluster names, as
// CoreDNS's kubernetes plugin does: a Service's cluster IP is
// <svc>.<ns>.svc.<domain>, the address of a headless Service's endpoint
// <hostname or a-b-c-d>.<svc>.<ns>.svc.<domain>. Another address is not
// the cluster's to answer (ok false: forwarded, or refused).
func (s *Server) reverse(q dns.Question, name string) ([]dns.RR, bool) {
	labels := strings.Split(strings.TrimSuffix(name, ".in-addr.arpa."), ".")
	if len(labels) != 4 {
		return nil, false
	}
	ip := labels[3] + "." + labels[2] + "." + labels[1] + "." + labels[0]
	if p := net.ParseIP(ip); p == nil || p.To4() == nil {
		return nil, false
	}
	var targets []string
	for _, svc := range s.Source.Services() {
		switch {
		case svc.Spec.ClusterIP == ip:
			targets = append(targets, svc.Name+"."+svc.Namespace+".svc")
		case svc.Spec.ClusterIP == core.ClusterIPNone:
			for _, e := range s.endpoints(svc, "") {
				if e.addr == ip {
					targets = append(targets, e.name+"."+svc.Name+"."+svc.Namespace+".svc")
				}
			}
		}
	}
	if len(targets) == 0 {
		return nil, false
	}
	if q.Qtype != dns.TypePTR && q.Qtype != dns.TypeANY {
		return []dns.RR{}, true // the name exists, not with this type
	}
	sort.Strings(targets)
	var out []dns.RR
	for _, t := range targets {
		out = append(out, &dns.PTR{Hdr: hdr(q.Name, dns.TypePTR), Ptr: t + "." + dns.Fqdn(s.Domain)})
	}
	return out, true
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

// endpoint is one published address of a Service: its name under the
// Service (the endpoint's hostname, or its address with dashes, as
// CoreDNS names them) and the slice it came from (for its ports).
type endpoint struct {
	addr, name string
	slice      *discovery.EndpointSlice
}

// endpoints are a Service's ready endpoint addresses (and the not-ready
// ones with publishNotReadyAddresses), each once, sorted by address; with
// name set, only the endpoint of that name.
func (s *Server) endpoints(svc *core.Service, name string) []endpoint {
	seen := map[string]bool{}
	var out []endpoint
	for _, sl := range s.Source.Slices() {
		if sl.Namespace != svc.Namespace || sl.Labels[discovery.LabelServiceName] != svc.Name {
			continue
		}
		for _, e := range sl.Endpoints {
			ready := e.Conditions.Ready == nil || *e.Conditions.Ready
			if !ready && !svc.Spec.PublishNotReadyAddresses {
				continue
			}
			for _, a := range e.Addresses {
				n := strings.ReplaceAll(a, ".", "-")
				if e.Hostname != nil && *e.Hostname != "" {
					n = *e.Hostname
				}
				if seen[a] || (name != "" && !strings.EqualFold(n, name)) {
					continue
				}
				seen[a] = true
				out = append(out, endpoint{addr: a, name: n, slice: sl})
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].addr < out[j].addr })
	return out
}

func addrs(eps []endpoint) []string {
	out := make([]string, len(eps))
	for i, e := range eps {
		out[i] = e.addr
	}
	return out
}

func (s *Server) endpointIPs(svc *core.Service, name string) []string {
	return addrs(s.endpoints(svc, name))
}

// hostnameIPs answers <name>.<svc>.<ns>.svc, for headless Services only:
// name is an endpoint's hostname (StatefulSet pods) or its address with
// dashes.
func (s *Server) hostnameIPs(svc *core.Service, name string) []string {
	if svc.Spec.ClusterIP != core.ClusterIPNone {
		return nil
	}
	return s.endpointIPs(svc, name)
}

// srv answers _<port>._<proto>.<svc>.<ns>.svc for a named port: one
// record pointing at the Service's name and port, or, for a headless
// Service, one per endpoint, pointing at the endpoint's name and the port
// it serves on (as CoreDNS does).
func (s *Server) srv(q dns.Question, svc *core.Service, port, proto string) ([]dns.RR, bool) {
	zone := dns.Fqdn(s.Domain)
	for _, p := range svc.Spec.Ports {
		if p.Name == "" || !strings.EqualFold(p.Name, port) || !strings.EqualFold(string(p.Protocol), proto) {
			continue
		}
		if q.Qtype != dns.TypeSRV && q.Qtype != dns.TypeANY {
			return nil, true
		}
		if svc.Spec.ClusterIP != core.ClusterIPNone {
			target := fmt.Sprintf("%s.%s.svc.%s", svc.Name, svc.Namespace, zone)
			return []dns.RR{&dns.SRV{Hdr: hdr(q.Name, dns.TypeSRV), Priority: 0, Weight: 100, Port: uint16(p.Port), Target: target}}, true
		}
		eps := s.endpoints(svc, "")
		var out []dns.RR
		for _, e := range eps {
			n, ok := slicePort(e.slice, p.Name)
			if !ok {
				continue
			}
			target := fmt.Sprintf("%s.%s.%s.svc.%s", e.name, svc.Name, svc.Namespace, zone)
			out = append(out, &dns.SRV{Hdr: hdr(q.Name, dns.TypeSRV), Priority: 0, Weight: uint16(100 / len(eps)), Port: uint16(n), Target: target})
		}
		return out, true
	}
	return nil, false
}

// slicePort is the number a slice's endpoints serve the named port on.
func slicePort(sl *discovery.EndpointSlice, name string) (int32, bool) {
	for _, p := range sl.Ports {
		if p.Name != nil && *p.Name == name && p.Port != nil {
			return *p.Port, true
		}
	}
	return 0, false
}
