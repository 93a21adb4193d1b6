package dns

import (
	"context"
	"net"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/discovery"
	"github.com/kobune/kobune/api/meta"
)

// serve runs s on a free loopback port until ctx ends and returns its
// address once it answers TCP. A port found free can be taken by another
// process before Serve binds it (make test runs packages in parallel):
// Serve's error then says so, and another port is tried.
func serve(t *testing.T, ctx context.Context, s *Server) string {
	t.Helper()
	var last error
	for range 10 {
		pc, err := net.ListenPacket("udp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := pc.LocalAddr().String()
		pc.Close()
		errc := make(chan error, 1)
		go func() { errc <- s.Serve(ctx, addr) }()
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			select {
			case last = <-errc:
			default:
				if c, err := net.Dial("tcp", addr); err == nil {
					c.Close()
					return addr
				}
				continue
			}
			break
		}
	}
	t.Fatalf("the DNS server never listened: %v", last)
	return ""
}

// The cluster's names, answered over UDP and TCP on loopback: Services,
// headless Services and their pods' hostnames, SRV for named ports,
// ExternalName, pod addresses, NXDOMAIN inside the cluster domain and
// REFUSED outside it.
func TestClusterNames(t *testing.T) {
	yes, no := true, false
	host := "db-0"
	services := []*core.Service{
		{ObjectMeta: meta.ObjectMeta{Namespace: "default", Name: "web"}, Spec: core.ServiceSpec{ClusterIP: "10.96.3.4",
			Ports: []core.ServicePort{{Name: "http", Port: 80, Protocol: core.ProtocolTCP}}}},
		{ObjectMeta: meta.ObjectMeta{Namespace: "data", Name: "db"}, Spec: core.ServiceSpec{ClusterIP: "None",
			Ports: []core.ServicePort{{Name: "pg", Port: 5432, Protocol: core.ProtocolTCP}}}},
		{ObjectMeta: meta.ObjectMeta{Namespace: "default", Name: "ext"}, Spec: core.ServiceSpec{Type: core.ServiceTypeExternalName, ExternalName: "db.example.internal"}},
	}
	pg, pgPort := "pg", int32(15432)
	slices := []*discovery.EndpointSlice{{ObjectMeta: meta.ObjectMeta{Namespace: "data", Name: "db-x", Labels: map[string]string{discovery.LabelServiceName: "db"}},
		Ports: []discovery.EndpointPort{{Name: &pg, Port: &pgPort}},
		Endpoints: []discovery.Endpoint{
			{Addresses: []string{"10.244.1.7"}, Hostname: &host, Conditions: discovery.EndpointConditions{Ready: &yes}},
			{Addresses: []string{"10.244.2.8"}, Conditions: discovery.EndpointConditions{Ready: &yes}},
			{Addresses: []string{"10.244.2.9"}, Conditions: discovery.EndpointConditions{Ready: &no}},
		}}}
	s := &Server{Domain: "cluster.local", Source: Source{Services: func() []*core.Service { return services },
		Slices: func() []*discovery.EndpointSlice { return slices }}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	addr := serve(t, ctx, s)
	ask := func(net, name string, qtype uint16) *dns.Msg {
		t.Helper()
		c := &dns.Client{Net: net, Timeout: time.Second}
		m := new(dns.Msg)
		m.SetQuestion(dns.Fqdn(name), qtype)
		var r *dns.Msg
		var err error
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if r, _, err = c.Exchange(m, addr); err == nil {
				return r
			}
		}
		t.Fatalf("%s %s: %v", net, name, err)
		return nil
	}
	answers := func(r *dns.Msg) string {
		var out []string
		for _, rr := range r.Answer {
			switch x := rr.(type) {
			case *dns.A:
				out = append(out, x.A.String())
			case *dns.CNAME:
				out = append(out, "CNAME "+x.Target)
			case *dns.SRV:
				out = append(out, "SRV "+x.Target+":"+strings.TrimSpace(strings.Fields(x.String())[6]))
			case *dns.PTR:
				out = append(out, "PTR "+x.Ptr)
			}
		}
		sort.Strings(out)
		return dns.RcodeToString[r.Rcode] + " " + strings.Join(out, ",")
	}
	for _, tt := range []struct {
		net, name string
		qtype     uint16
		want      string
	}{
		{"udp", "web.default.svc.cluster.local", dns.TypeA, "NOERROR 10.96.3.4"},
		{"tcp", "web.default.svc.cluster.local", dns.TypeA, "NOERROR 10.96.3.4"},
		{"udp", "WEB.Default.svc.cluster.local", dns.TypeA, "NOERROR 10.96.3.4"},
		{"udp", "db.data.svc.cluster.local", dns.TypeA, "NOERROR 10.244.1.7,10.244.2.8"},
		{"udp", "db-0.db.data.svc.cluster.local", dns.TypeA, "NOERROR 10.244.1.7"},
		{"udp", "10-244-2-8.db.data.svc.cluster.local", dns.TypeA, "NOERROR 10.244.2.8"},
		{"udp", "_pg._tcp.db.data.svc.cluster.local", dns.TypeSRV, "NOERROR SRV 10-244-2-8.db.data.svc.cluster.local.:15432,SRV db-0.db.data.svc.cluster.local.:15432"},
		{"udp", "_http._tcp.web.default.svc.cluster.local", dns.TypeSRV, "NOERROR SRV web.default.svc.cluster.local.:80"},
		{"udp", "ext.default.svc.cluster.local", dns.TypeA, "NOERROR CNAME db.example.internal."},
		{"udp", "10-244-1-7.data.pod.cluster.local", dns.TypeA, "NOERROR 10.244.1.7"},
		{"udp", "web.default.svc.cluster.local", dns.TypeAAAA, "NOERROR "},
		{"udp", "nope.default.svc.cluster.local", dns.TypeA, "NXDOMAIN "},
		{"udp", "db-9.db.data.svc.cluster.local", dns.TypeA, "NXDOMAIN "},
		{"udp", "example.com", dns.TypeA, "REFUSED "},
		// Reverse lookups of the cluster's addresses, as CoreDNS answers them.
		{"udp", "4.3.96.10.in-addr.arpa", dns.TypePTR, "NOERROR PTR web.default.svc.cluster.local."},
		{"tcp", "7.1.244.10.in-addr.arpa", dns.TypePTR, "NOERROR PTR db-0.db.data.svc.cluster.local."},
		{"udp", "8.2.244.10.in-addr.arpa", dns.TypePTR, "NOERROR PTR 10-244-2-8.db.data.svc.cluster.local."},
		{"udp", "1.1.168.192.in-addr.arpa", dns.TypePTR, "REFUSED "},
	} {
		if got := answers(ask(tt.net, tt.name, tt.qtype)); got != tt.want {
			t.Errorf("%s %s %s: %q, want %q", tt.net, tt.name, dns.TypeToString[tt.qtype], got, tt.want)
		}
	}
}
