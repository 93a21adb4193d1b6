// Package proxy is kobune-agent's node proxy (kube-proxy in its nftables
// mode): it turns Services and their EndpointSlices into one nftables table,
// `ip kobune-proxy`, in the node's network namespace, using
// sigs.k8s.io/knftables (kube-proxy's own library, which drives the `nft`
// binary in atomic transactions).
//
// A packet to a Service is looked up once in a verdict map keyed by
// destination IP . protocol . port (`service-ips`; NodePorts in
// `service-nodeports`, keyed by protocol . port on the node's own
// addresses), so the first packet's cost does not grow with the number of
// Services. The map sends it to the Service port's chain, which picks an
// endpoint (at random: endpoint i of n with probability 1/(n-i) among the
// rest, or the one a ClientIP-affinity set remembers for the client) and
// jumps to the endpoint's chain, which DNATs to the pod. Connections from the node's own pods to an endpoint on this node,
// and NodePort connections under externalTrafficPolicy Cluster, are
// masqueraded, so replies come back through the node (pods on one bridge
// would otherwise answer each other directly, around the NAT). A Service
// port with no endpoint is rejected at once (`no-endpoint-services`), not
// left to time out.
//
// Sync rewrites only what changed: the chains whose rules differ and the
// map elements that differ, in one transaction. The first sync after a
// start replaces the whole table's contents in one atomic transaction,
// so rules left by a previous agent keep working until then, with no gap.
package proxy

import (
	"context"
	"crypto/sha256"
	"encoding/base32"
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"sort"
	"strings"
	"time"

	"sigs.k8s.io/knftables"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/discovery"
)

// Table is the nftables table the proxy owns.
const Table = "kobune-proxy"

// Names of the fixed objects of the table.
const (
	serviceIPsMap         = "service-ips"
	serviceNodePortsMap   = "service-nodeports"
	noEndpointServicesMap = "no-endpoint-services"
	noEndpointNodePorts   = "no-endpoint-nodeports"
	servicesChain         = "services"
	markChain             = "mark-for-masquerade"
	masqChain             = "masquerading"
	endpointsCheckChain   = "endpoints-check"
	rejectChain           = "reject-chain"
	masqMark              = "0x4000"
)

// Config is what the proxy needs of its node.
type Config struct {
	NodeName string
	// PodCIDR is the node's pod range: connections from it to an endpoint
	// on this node are masqueraded.
	PodCIDR string
}

// Proxy programs one node's Service rules.
type Proxy struct {
	cfg  Config
	nft  knftables.Interface
	last *ruleset // what the kernel has after the last successful sync; nil: unknown
	// Conntrack deletes conntrack entries (ConntrackCLI on a node; a
	// recorder in tests; nil: none are deleted).
	Conntrack func(ctx context.Context, f ConntrackFilter) error
}

// ConntrackFilter selects UDP conntrack entries to delete: those to
// OrigDst:Port (OrigDst empty: to the node port Port on any address),
// only those answered by ReplySrc when it is set.
type ConntrackFilter struct {
	OrigDst  string
	Port     int32
	ReplySrc string
}

// ConntrackCLI deletes entries with conntrack-tools' `conntrack -D`, as
// kube-proxy did before it spoke netlink; "no entry matched" is not an
// error.
func ConntrackCLI(ctx context.Context, f ConntrackFilter) error {
	args := []string{"-D", "-p", "udp", "--orig-port-dst", fmt.Sprint(f.Port)}
	if f.OrigDst != "" {
		args = append(args, "--orig-dst", f.OrigDst)
	}
	if f.ReplySrc != "" {
		args = append(args, "--reply-src", f.ReplySrc)
	}
	out, err := exec.CommandContext(ctx, "conntrack", args...).CombinedOutput()
	if err != nil && !strings.Contains(string(out), "0 flow entries have been deleted") {
		return fmt.Errorf("conntrack %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// New returns a proxy over nft (knftables.New(knftables.IPv4Family, Table),
// or knftables.NewFake in tests).
func New(cfg Config, nft knftables.Interface) *Proxy { return &Proxy{cfg: cfg, nft: nft} }

// ruleset is the table's variable part: chains and map elements.
type ruleset struct {
	chains   map[string][]string          // chain → rules
	elements map[string]map[string]string // map → key ("a . b . c") → verdict
	sets     map[string]int32             // affinity sets → timeout seconds
	// udp are the endpoint addresses behind each UDP destination (a
	// cluster IP and port, or "" and a node port), for the conntrack
	// clean-up: UDP has no connection end, so a flow to an endpoint that
	// went lives on in conntrack until someone deletes it.
	udp map[udpDest][]string
}

// udpDest is a UDP destination the rules DNAT: a cluster IP and port, or
// (IP empty) a node port on the node's addresses.
type udpDest struct {
	ip   string
	port int32
}

func newRuleset() *ruleset {
	rs := &ruleset{chains: map[string][]string{}, elements: map[string]map[string]string{}, sets: map[string]int32{}, udp: map[udpDest][]string{}}
	for _, m := range []string{serviceIPsMap, serviceNodePortsMap, noEndpointServicesMap, noEndpointNodePorts} {
		rs.elements[m] = map[string]string{}
	}
	return rs
}

// endpoint is one ready backend of a Service port.
type endpoint struct {
	ip   string
	port int32
	node string
}

// Sync makes the table match the Services and EndpointSlices given.
func (p *Proxy) Sync(ctx context.Context, services []*core.Service, slices []*discovery.EndpointSlice) error {
	want := p.build(services, slices)
	tx := p.nft.NewTransaction()
	if p.last == nil {
		if err := p.full(ctx, tx, want); err != nil {
			return err
		}
	} else {
		p.incremental(tx, want)
	}
	if tx.NumOperations() > 0 {
		if err := p.nft.Run(ctx, tx); err != nil {
			p.last = nil // unknown now: the next sync rewrites everything
			return fmt.Errorf("nftables: %w", err)
		}
	}
	last := p.last
	p.last = want
	return p.flushUDP(ctx, last, want)
}

// flushUDP deletes the conntrack entries of UDP flows the new rules no
// longer send where conntrack remembers: to an endpoint that is gone, and,
// for a destination that had no endpoint (its packets were rejected), all
// of them — kube-proxy's two clean-ups. After an agent restart the
// endpoints the old rules had are not known, so that first sync deletes
// nothing.
func (p *Proxy) flushUDP(ctx context.Context, last, want *ruleset) error {
	if p.Conntrack == nil {
		return nil
	}
	var errs []error
	for d, eps := range want.udp {
		var before []string
		if last != nil {
			before = last.udp[d]
		}
		if last != nil && len(before) == 0 && len(eps) > 0 {
			errs = append(errs, p.Conntrack(ctx, ConntrackFilter{OrigDst: d.ip, Port: d.port}))
			continue
		}
		for _, ip := range before {
			if !slices.Contains(eps, ip) {
				errs = append(errs, p.Conntrack(ctx, ConntrackFilter{OrigDst: d.ip, Port: d.port, ReplySrc: ip}))
			}
		}
	}
	if last != nil {
		for d, before := range last.udp {
			if _, ok := want.udp[d]; ok {
				continue
			}
			for _, ip := range before { // the Service (port) is gone
				errs = append(errs, p.Conntrack(ctx, ConntrackFilter{OrigDst: d.ip, Port: d.port, ReplySrc: ip}))
			}
		}
	}
	return errors.Join(errs...)
}

// base adds the fixed part of the table: maps, hooks and helper chains.
func (p *Proxy) base(tx *knftables.Transaction) {
	tx.Add(&knftables.Table{Comment: knftables.PtrTo("kobune-agent's Service rules (kube-proxy)")})
	tx.Add(&knftables.Map{Name: serviceIPsMap, Type: "ipv4_addr . inet_proto . inet_service : verdict"})
	tx.Add(&knftables.Map{Name: noEndpointServicesMap, Type: "ipv4_addr . inet_proto . inet_service : verdict"})
	tx.Add(&knftables.Map{Name: serviceNodePortsMap, Type: "inet_proto . inet_service : verdict"})
	tx.Add(&knftables.Map{Name: noEndpointNodePorts, Type: "inet_proto . inet_service : verdict"})
	hook := func(name string, typ knftables.BaseChainType, h knftables.BaseChainHook, prio knftables.BaseChainPriority, rules ...string) {
		tx.Add(&knftables.Chain{Name: name, Type: &typ, Hook: &h, Priority: &prio})
		tx.Flush(&knftables.Chain{Name: name})
		for _, r := range rules {
			tx.Add(&knftables.Rule{Chain: name, Rule: r})
		}
	}
	chain := func(name string, rules ...string) {
		tx.Add(&knftables.Chain{Name: name})
		tx.Flush(&knftables.Chain{Name: name})
		for _, r := range rules {
			tx.Add(&knftables.Rule{Chain: name, Rule: r})
		}
	}
	chain(markChain, "meta mark set meta mark | "+masqMark)
	chain(masqChain, "meta mark & "+masqMark+" == 0 return", "meta mark set meta mark ^ "+masqMark, "masquerade fully-random")
	chain(servicesChain,
		"ip daddr . meta l4proto . th dport vmap @"+serviceIPsMap,
		"fib daddr type local meta l4proto . th dport vmap @"+serviceNodePortsMap)
	// TCP gets a reset (an ICMP error for a connection the node itself
	// makes to a Service IP routed at loopback never reaches the socket;
	// a reset does, as "connection refused"); other protocols an ICMP
	// port unreachable.
	chain(rejectChain, "meta l4proto tcp reject with tcp reset", "reject")
	chain(endpointsCheckChain,
		"ip daddr . meta l4proto . th dport vmap @"+noEndpointServicesMap,
		"fib daddr type local meta l4proto . th dport vmap @"+noEndpointNodePorts)
	hook("nat-prerouting", knftables.NATType, knftables.PreroutingHook, knftables.DNATPriority, "jump "+servicesChain)
	hook("nat-output", knftables.NATType, knftables.OutputHook, knftables.DNATPriority, "jump "+servicesChain)
	hook("nat-postrouting", knftables.NATType, knftables.PostroutingHook, knftables.SNATPriority, "jump "+masqChain)
	for _, h := range []knftables.BaseChainHook{knftables.InputHook, knftables.ForwardHook, knftables.OutputHook} {
		hook("filter-"+string(h), knftables.FilterType, h, knftables.FilterPriority, "ct state new jump "+endpointsCheckChain)
	}
}

// fixedChains are the chains base adds (never deleted by a sync).
var fixedChains = []string{markChain, masqChain, servicesChain, rejectChain, endpointsCheckChain, "nat-prerouting", "nat-output", "nat-postrouting",
	"filter-input", "filter-forward", "filter-output"}

// full replaces everything in one transaction: the fixed part, every
// chain and element; what a previous agent left and is not wanted goes.
func (p *Proxy) full(ctx context.Context, tx *knftables.Transaction, want *ruleset) error {
	p.base(tx)
	existing, err := p.nft.List(ctx, "chain")
	if err != nil && !knftables.IsNotFound(err) {
		return fmt.Errorf("nftables: list chains: %w", err)
	}
	existingSets, err := p.nft.List(ctx, "set")
	if err != nil && !knftables.IsNotFound(err) {
		return fmt.Errorf("nftables: list sets: %w", err)
	}
	for m := range want.elements {
		tx.Flush(&knftables.Map{Name: m})
	}
	for name, timeout := range want.sets {
		addAffinitySet(tx, name, timeout)
	}
	for _, name := range sortedKeys(want.chains) {
		writeChain(tx, name, want.chains[name])
	}
	for m, elems := range want.elements {
		for _, k := range sortedKeys(elems) {
			tx.Add(element(m, k, elems[k]))
		}
	}
	for _, name := range existing {
		if _, ok := want.chains[name]; !ok && !slices.Contains(fixedChains, name) {
			tx.Flush(&knftables.Chain{Name: name})
		}
	}
	for _, name := range existing {
		if _, ok := want.chains[name]; !ok && !slices.Contains(fixedChains, name) {
			tx.Delete(&knftables.Chain{Name: name})
		}
	}
	for _, name := range existingSets {
		if _, ok := want.sets[name]; !ok {
			tx.Delete(&knftables.Set{Name: name})
		}
	}
	return nil
}

// incremental writes only the differences from the last sync.
func (p *Proxy) incremental(tx *knftables.Transaction, want *ruleset) {
	last := p.last
	for name, timeout := range want.sets {
		if _, ok := last.sets[name]; !ok {
			addAffinitySet(tx, name, timeout)
		}
	}
	for _, name := range sortedKeys(want.chains) {
		if old, ok := last.chains[name]; !ok || !slices.Equal(old, want.chains[name]) {
			writeChain(tx, name, want.chains[name])
		}
	}
	for m, elems := range want.elements {
		old := last.elements[m]
		for _, k := range sortedKeys(old) {
			if v, ok := elems[k]; !ok || v != old[k] {
				tx.Delete(element(m, k, old[k]))
			}
		}
		for _, k := range sortedKeys(elems) {
			if v, ok := old[k]; !ok || v != elems[k] {
				tx.Add(element(m, k, elems[k]))
			}
		}
	}
	// Chains no longer wanted go last, once nothing refers to them.
	var gone []string
	for name := range last.chains {
		if _, ok := want.chains[name]; !ok {
			gone = append(gone, name)
		}
	}
	sort.Strings(gone)
	for _, name := range gone {
		tx.Flush(&knftables.Chain{Name: name})
	}
	for _, name := range gone {
		tx.Delete(&knftables.Chain{Name: name})
	}
	for name := range last.sets {
		if _, ok := want.sets[name]; !ok {
			tx.Delete(&knftables.Set{Name: name})
		}
	}
}

func writeChain(tx *knftables.Transaction, name string, rules []string) {
	tx.Add(&knftables.Chain{Name: name})
	tx.Flush(&knftables.Chain{Name: name})
	for _, r := range rules {
		tx.Add(&knftables.Rule{Chain: name, Rule: r})
	}
}

func addAffinitySet(tx *knftables.Transaction, name string, timeout int32) {
	d := time.Duration(timeout) * time.Second
	tx.Add(&knftables.Set{Name: name, Type: "ipv4_addr", Flags: []knftables.SetFlag{knftables.DynamicFlag, knftables.TimeoutFlag}, Timeout: &d})
}

func element(m, key, verdict string) *knftables.Element {
	return &knftables.Element{Map: m, Key: strings.Split(key, " . "), Value: []string{verdict}}
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// build computes the wanted chains and elements.
func (p *Proxy) build(services []*core.Service, eps []*discovery.EndpointSlice) *ruleset {
	rs := newRuleset()
	bySvc := map[string][]*discovery.EndpointSlice{}
	for _, s := range eps {
		if name := s.Labels[discovery.LabelServiceName]; name != "" {
			bySvc[s.Namespace+"/"+name] = append(bySvc[s.Namespace+"/"+name], s)
		}
	}
	for _, svc := range services {
		ip := svc.Spec.ClusterIP
		if ip == "" || ip == core.ClusterIPNone || svc.Spec.Type == core.ServiceTypeExternalName {
			continue
		}
		for _, sp := range svc.Spec.Ports {
			all := readyEndpoints(bySvc[svc.Namespace+"/"+svc.Name], sp)
			proto := strings.ToLower(string(sp.Protocol))
			base := fmt.Sprintf("%s/%s/%s/%s", svc.Namespace, svc.Name, proto, portName(sp))
			internal := all
			if svc.Spec.InternalTrafficPolicy != nil && *svc.Spec.InternalTrafficPolicy == core.TrafficLocal {
				internal = p.local(all)
			}
			key := fmt.Sprintf("%s . %s . %d", ip, proto, sp.Port)
			if sp.Protocol == core.ProtocolUDP {
				rs.udp[udpDest{ip, sp.Port}] = addrsOf(internal)
			}
			if len(internal) == 0 {
				rs.elements[noEndpointServicesMap][key] = "goto " + rejectChain
			} else {
				rs.elements[serviceIPsMap][key] = "goto " + p.loadBalance(rs, "service-"+hash(base)+"-"+base, base, svc, sp, internal)
			}
			if svc.Spec.Type != core.ServiceTypeNodePort || sp.NodePort == 0 {
				continue
			}
			npKey := fmt.Sprintf("%s . %d", proto, sp.NodePort)
			external, localOnly := all, svc.Spec.ExternalTrafficPolicy == core.TrafficLocal
			if localOnly {
				external = p.local(all)
			}
			if sp.Protocol == core.ProtocolUDP {
				rs.udp[udpDest{"", sp.NodePort}] = addrsOf(external)
			}
			if len(external) == 0 {
				rs.elements[noEndpointNodePorts][npKey] = "goto " + rejectChain
				continue
			}
			lb := p.loadBalance(rs, "external-"+hash(base)+"-"+base, base, svc, sp, external)
			if !localOnly {
				// Cluster policy: the reply must come back through this
				// node, wherever the endpoint is.
				rs.chains[lb] = append([]string{"jump " + markChain}, rs.chains[lb]...)
			}
			rs.elements[serviceNodePortsMap][npKey] = "goto " + lb
		}
	}
	return rs
}

// loadBalance adds the chain that picks one of eps (and their endpoint
// chains) and returns its name.
func (p *Proxy) loadBalance(rs *ruleset, chain, base string, svc *core.Service, sp core.ServicePort, eps []endpoint) string {
	affinity := svc.Spec.SessionAffinity == core.ServiceAffinityClientIP
	timeout := core.DefaultClientIPServiceAffinitySeconds
	if c := svc.Spec.SessionAffinityConfig; c != nil && c.ClientIP != nil && c.ClientIP.TimeoutSeconds != nil {
		timeout = *c.ClientIP.TimeoutSeconds
	}
	var rules, picks []string
	for i, e := range eps {
		epName := fmt.Sprintf("%s__%s/%d", base, e.ip, e.port)
		epChain := "endpoint-" + hash(epName) + "-" + epName
		var epRules []string
		if e.node == p.cfg.NodeName && p.cfg.PodCIDR != "" {
			// A pod of this node reaching an endpoint of this node (itself
			// included: hairpin): masquerade, so the reply returns through
			// the node instead of straight across the bridge.
			epRules = append(epRules, fmt.Sprintf("ip saddr %s jump %s", p.cfg.PodCIDR, markChain))
		}
		if affinity {
			set := "affinity-" + hash(epName)
			rs.sets[set] = timeout
			epRules = append(epRules, fmt.Sprintf("update @%s { ip saddr }", set))
			rules = append(rules, fmt.Sprintf("ip saddr @%s goto %s", set, epChain))
		}
		epRules = append(epRules, fmt.Sprintf("meta l4proto %s dnat to %s:%d", strings.ToLower(string(sp.Protocol)), e.ip, e.port))
		rs.chains[epChain] = epRules
		// Endpoint i of n is taken with probability 1/(n-i) among those
		// left, so each gets 1/n (what kube-proxy's iptables mode does with
		// -m statistic). Not `numgen random mod n vmap { … }`: every such
		// rule makes an anonymous set, and the kernel's cost of adding
		// anonymous sets grows with the number already there (10,000
		// Services took a minute to load; these rules take seconds).
		if left := len(eps) - i; left > 1 {
			picks = append(picks, fmt.Sprintf("numgen random mod %d 0 goto %s", left, epChain))
		} else {
			picks = append(picks, "goto "+epChain)
		}
	}
	rules = append(rules, picks...)
	rs.chains[chain] = rules
	return chain
}

func addrsOf(eps []endpoint) []string {
	out := make([]string, len(eps))
	for i, e := range eps {
		out[i] = e.ip
	}
	return out
}

func (p *Proxy) local(eps []endpoint) []endpoint {
	var out []endpoint
	for _, e := range eps {
		if e.node == p.cfg.NodeName {
			out = append(out, e)
		}
	}
	return out
}

// readyEndpoints are the ready endpoints of the slices for one Service
// port (matched by name and protocol), each address once, sorted.
func readyEndpoints(slices []*discovery.EndpointSlice, sp core.ServicePort) []endpoint {
	seen := map[string]bool{}
	var out []endpoint
	for _, s := range slices {
		var port int32
		for _, p := range s.Ports {
			if p.Name != nil && *p.Name == sp.Name && p.Port != nil && (p.Protocol == nil || *p.Protocol == sp.Protocol) {
				port = *p.Port
			}
		}
		if port == 0 {
			continue
		}
		for _, e := range s.Endpoints {
			if e.Conditions.Ready != nil && !*e.Conditions.Ready {
				continue
			}
			for _, a := range e.Addresses {
				key := fmt.Sprintf("%s:%d", a, port)
				if seen[key] {
					continue
				}
				seen[key] = true
				ep := endpoint{ip: a, port: port}
				if e.NodeName != nil {
					ep.node = *e.NodeName
				}
				out = append(out, ep)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return fmt.Sprint(out[i].ip, out[i].port) < fmt.Sprint(out[j].ip, out[j].port) })
	return out
}

func portName(sp core.ServicePort) string {
	if sp.Name != "" {
		return sp.Name
	}
	return fmt.Sprint(sp.Port)
}

// hash makes chain names unique whatever the readable part holds, as
// kube-proxy does (the first 8 characters of a base32 SHA-256).
func hash(s string) string {
	h := sha256.Sum256([]byte(s))
	return base32.StdEncoding.EncodeToString(h[:])[:8]
}
