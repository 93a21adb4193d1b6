// Package proxy is kobune-agent's node proxy (kube-proxy in its nftables
// mode): it turns Services and their EndpointSlices into one nftables table,
// `ip kobune-proxy`, in the node's network namespace. Full syncs go
// through sigs.k8s.io/knftables (kube-proxy's own library, which drives the
// `nft` binary in atomic transactions); incremental ones straight to the
// kernel over netlink (github.com/google/nftables, Netlink), because nft
// reads the table into its cache before it applies anything.
//
// A packet to a Service is looked up once in a verdict map keyed by
// destination IP . protocol . port (`service-ips`; NodePorts in
// `service-nodeports`, keyed by protocol . port on the node's own
// addresses), so the first packet's cost does not grow with the number of
// Services. The map sends it to the chain shared by all Service ports with
// as many endpoints (`lb-tcp-5`), which picks a random index below that
// number and DNATs to the endpoint the map `service-endpoints` holds for
// the packet's destination and that index; a ClientIP-affinity Service
// port has a chain of its own instead, with a rule per endpoint that also
// remembers the client. Connections from the node's own pods to an
// endpoint on this node, and NodePort connections under
// externalTrafficPolicy Cluster, are masqueraded, so replies come back
// through the node (pods on one bridge would otherwise answer each other
// directly, around the NAT). A Service port with no endpoint is rejected
// at once (`no-endpoint-services`), not left to time out.
//
// Sync rebuilds only the Services whose resourceVersions (their own or
// their slices') moved, and writes only the chains and map elements that
// differ, in one batch. The first sync after a start replaces the whole
// table's contents in one atomic transaction, so rules left by a previous
// agent keep working until then, with no gap.
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

	"golang.org/x/sys/unix"
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
	endpointsMap          = "service-endpoints"
	nodePortEndpointsMap  = "nodeport-endpoints"
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
	// ClusterCIDR is every node's pod range (kube-proxy's --cluster-cidr):
	// connections from this node's pods, through a Service, to an endpoint
	// outside it — the API server on its host, behind the kubernetes
	// Service — are masqueraded to the node's address, so the reply finds
	// its way back (the lab's hosts route no pod addresses).
	ClusterCIDR string
}

// Proxy programs one node's Service rules.
type Proxy struct {
	cfg Config
	nft knftables.Interface
	// synced: the kernel has what fragments (every Service's part of the
	// table) describe; false (at the start, after a failed sync): unknown,
	// the next sync rewrites everything.
	synced    bool
	fragments map[serviceID]*fragment
	shared    map[string][]rule // the shared chains the fragments use
	// LastSync describes the last sync (the benchmark reads it).
	LastSync SyncStats
	// Netlink, when set, writes incremental syncs straight to the kernel
	// (NewNetlink); nil: through nft, as full syncs always are.
	Netlink *Netlink
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

// New returns a proxy over nft (knftables.New(knftables.IPv4Family, Table,
// knftables.UseNetlink): listing chains and sets over netlink, not with
// nft, which would read every map element first;
// or knftables.NewFake in tests).
func New(cfg Config, nft knftables.Interface) *Proxy { return &Proxy{cfg: cfg, nft: nft} }

// ruleset is the table's variable part: chains and map elements.
type ruleset struct {
	chains   map[string][]rule            // chain → rules
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
	rs := &ruleset{chains: map[string][]rule{}, elements: map[string]map[string]string{}, sets: map[string]int32{}, udp: map[udpDest][]string{}}
	for _, m := range []string{serviceIPsMap, serviceNodePortsMap, noEndpointServicesMap, noEndpointNodePorts, endpointsMap, nodePortEndpointsMap} {
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
	start := time.Now()
	next := p.fragmentsFor(services, slices)
	var last, want *ruleset
	var shared map[string][]rule
	var err error
	var ops int
	if !p.synced {
		want, shared = merge(next, nil, true), sharedChains(next)
	} else {
		last, want, shared = p.changed(next)
	}
	built := time.Since(start)
	switch {
	case !p.synced:
		tx := p.nft.NewTransaction()
		if err = p.full(ctx, tx, want); err == nil {
			err = p.nft.Run(ctx, tx)
		}
		ops = tx.NumOperations()
	case p.Netlink != nil:
		w := p.Netlink.batch()
		incremental(w, last, want)
		if ops = w.ops; ops > 0 {
			err = w.run()
		}
	default:
		w := &nftWriter{tx: p.nft.NewTransaction()}
		incremental(w, last, want)
		if ops = w.tx.NumOperations(); ops > 0 {
			err = p.nft.Run(ctx, w.tx)
		}
	}
	p.LastSync = SyncStats{Full: !p.synced, Operations: ops, Build: built, Total: time.Since(start)}
	if err != nil {
		p.synced = false // unknown now: the next sync rewrites everything
		return fmt.Errorf("nftables: %w", err)
	}
	p.fragments, p.shared, p.synced = next, shared, true
	return p.flushUDP(ctx, last, want)
}

// SyncStats describe a sync: full or incremental, the operations it sent,
// the time taken to compute them from the objects, and in all.
type SyncStats struct {
	Full         bool
	Operations   int
	Build, Total time.Duration
}

// changed is the part of the last sync and of next that differs: the
// fragments of the Services that changed, came or went (the others are
// the same objects in both and need nothing written), and the shared
// chains that lost their last user (in last, so they are deleted) or got
// their first (in want, so they are made). shared are next's shared
// chains.
func (p *Proxy) changed(next map[serviceID]*fragment) (last, want *ruleset, shared map[string][]rule) {
	var before, after []*fragment
	for id, f := range next {
		if old := p.fragments[id]; old != f {
			if old != nil {
				before = append(before, old)
			}
			after = append(after, f)
		}
	}
	for id, old := range p.fragments {
		if _, ok := next[id]; !ok {
			before = append(before, old)
		}
	}
	last, want = merge(nil, before, false), merge(nil, after, false)
	shared = sharedChains(next)
	for name, rules := range p.shared {
		if _, ok := shared[name]; !ok {
			last.chains[name] = rules
		}
	}
	for name, rules := range shared {
		if _, ok := p.shared[name]; !ok {
			want.chains[name] = rules
		}
	}
	return last, want, shared
}

// sharedChains are the shared chains the fragments use.
func sharedChains(frags map[serviceID]*fragment) map[string][]rule {
	out := map[string][]rule{}
	for _, f := range frags {
		for name, rules := range f.shared {
			out[name] = rules
		}
	}
	return out
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
	tx.Add(&knftables.Map{Name: endpointsMap, TypeOf: "ip daddr . meta l4proto . tcp dport . numgen random mod 1 : ip daddr . tcp dport"})
	tx.Add(&knftables.Map{Name: nodePortEndpointsMap, TypeOf: "meta l4proto . tcp dport . numgen random mod 1 : ip daddr . tcp dport"})
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
	var masq []string
	if p.cfg.PodCIDR != "" {
		// A pod of this node reaching, through a Service, an endpoint of
		// this node (itself included: hairpin): masquerade, so the reply
		// returns through the node instead of straight across the bridge
		// around the NAT. Decided here, after the DNAT, from the
		// connection's addresses, so the Service chains need no chain per
		// endpoint.
		masq = append(masq, fmt.Sprintf("ip saddr %s ip daddr %s ct status dnat jump %s", p.cfg.PodCIDR, p.cfg.PodCIDR, markChain))
		if p.cfg.ClusterCIDR != "" {
			masq = append(masq, fmt.Sprintf("ip saddr %s ip daddr != %s ct status dnat jump %s", p.cfg.PodCIDR, p.cfg.ClusterCIDR, markChain))
		}
	}
	masq = append(masq, "meta mark & "+masqMark+" == 0 return", "meta mark set meta mark ^ "+masqMark, "masquerade fully-random")
	chain(masqChain, masq...)
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
	if err != nil && !notFound(err) {
		return fmt.Errorf("nftables: list chains: %w", err)
	}
	existingSets, err := p.nft.List(ctx, "set")
	if err != nil && !notFound(err) {
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

// writer is where an incremental sync writes its changes: an nft
// transaction (nftWriter) or a netlink batch (Netlink).
type writer interface {
	addSet(name string, timeout int32)
	writeChain(name string, rules []rule) // create or replace
	addElement(m, key, verdict string)
	deleteElement(m, key string)
	flushChain(name string)
	deleteChain(name string) // once flushed
	deleteSet(name string)
}

// notFound: there is no table yet, as nft says it or netlink's ENOENT
// (which google/nftables passes on as text only).
func notFound(err error) bool {
	return knftables.IsNotFound(err) || errors.Is(err, unix.ENOENT) || strings.HasSuffix(err.Error(), unix.ENOENT.Error())
}

// incremental writes the differences from last to want.
func incremental(w writer, last, want *ruleset) {
	for name, timeout := range want.sets {
		if _, ok := last.sets[name]; !ok {
			w.addSet(name, timeout)
		}
	}
	for _, name := range sortedKeys(want.chains) {
		if old, ok := last.chains[name]; !ok || !sameRules(old, want.chains[name]) {
			w.writeChain(name, want.chains[name])
		}
	}
	for _, m := range sortedKeys(want.elements) {
		elems, old := want.elements[m], last.elements[m]
		for _, k := range sortedKeys(old) {
			if v, ok := elems[k]; !ok || v != old[k] {
				w.deleteElement(m, k)
			}
		}
		for _, k := range sortedKeys(elems) {
			if v, ok := old[k]; !ok || v != elems[k] {
				w.addElement(m, k, elems[k])
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
		w.flushChain(name)
	}
	for _, name := range gone {
		w.deleteChain(name)
	}
	var goneSets []string
	for name := range last.sets {
		if _, ok := want.sets[name]; !ok {
			goneSets = append(goneSets, name)
		}
	}
	sort.Strings(goneSets)
	for _, name := range goneSets {
		w.deleteSet(name)
	}
}

// sameRules: a chain built from a cached fragment shares its rules'
// array with the last sync's, which makes the common case cheap.
func sameRules(a, b []rule) bool {
	if len(a) != len(b) {
		return false
	}
	if len(a) == 0 || &a[0] == &b[0] {
		return true
	}
	for i := range a {
		if a[i].text != b[i].text {
			return false
		}
	}
	return true
}

// nftWriter writes an incremental sync as an nft transaction.
type nftWriter struct{ tx *knftables.Transaction }

func (w *nftWriter) addSet(name string, timeout int32)    { addAffinitySet(w.tx, name, timeout) }
func (w *nftWriter) writeChain(name string, rules []rule) { writeChain(w.tx, name, rules) }
func (w *nftWriter) addElement(m, key, verdict string)    { w.tx.Add(element(m, key, verdict)) }
func (w *nftWriter) deleteElement(m, key string) {
	w.tx.Delete(&knftables.Element{Map: m, Key: strings.Split(key, " . ")})
}
func (w *nftWriter) flushChain(name string)  { w.tx.Flush(&knftables.Chain{Name: name}) }
func (w *nftWriter) deleteChain(name string) { w.tx.Delete(&knftables.Chain{Name: name}) }
func (w *nftWriter) deleteSet(name string)   { w.tx.Delete(&knftables.Set{Name: name}) }

func writeChain(tx *knftables.Transaction, name string, rules []rule) {
	tx.Add(&knftables.Chain{Name: name})
	tx.Flush(&knftables.Chain{Name: name})
	for _, r := range rules {
		tx.Add(&knftables.Rule{Chain: name, Rule: r.text})
	}
}

// affinitySetSize is the number of clients an affinity set remembers (the
// size nft gives a dynamic set it is not told one).
const affinitySetSize = 65535

func addAffinitySet(tx *knftables.Transaction, name string, timeout int32) {
	d := time.Duration(timeout) * time.Second
	size := uint64(affinitySetSize)
	tx.Add(&knftables.Set{Name: name, Type: "ipv4_addr", Flags: []knftables.SetFlag{knftables.DynamicFlag, knftables.TimeoutFlag}, Timeout: &d, Size: &size})
}

func element(m, key, value string) *knftables.Element {
	return &knftables.Element{Map: m, Key: strings.Split(key, " . "), Value: strings.Split(value, " . ")}
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// fragment is what one Service adds to the ruleset. Fragments are kept
// between syncs, keyed by the resourceVersions of the Service and its
// slices, so a sync rebuilds only the Services that changed.
type fragment struct {
	// serviceVersion and sliceVersions (slice name and version, sorted
	// by name) are the resourceVersions the fragment was computed from.
	serviceVersion string
	sliceVersions  []sliceVersion
	chains         map[string][]rule
	// shared are the chains the fragment uses that other Services' may
	// use too (lb-…): they exist while one fragment uses them.
	shared   map[string][]rule
	elements map[string]map[string]string
	sets     map[string]int32
	udp      map[udpDest][]string
}

// build computes the whole wanted ruleset.
func (p *Proxy) build(services []*core.Service, eps []*discovery.EndpointSlice) *ruleset {
	return merge(p.fragmentsFor(services, eps), nil, true)
}

// serviceID names a Service (a map key that costs no allocation).
type serviceID struct{ namespace, name string }

type sliceVersion struct{ name, version string }

// fragmentsFor computes every Service's fragment, reusing the last sync's
// where the Service and its slices did not change.
func (p *Proxy) fragmentsFor(services []*core.Service, eps []*discovery.EndpointSlice) map[serviceID]*fragment {
	bySvc := make(map[serviceID][]*discovery.EndpointSlice, len(services))
	for _, s := range eps {
		if name := s.Labels[discovery.LabelServiceName]; name != "" {
			id := serviceID{s.Namespace, name}
			bySvc[id] = append(bySvc[id], s)
		}
	}
	out := make(map[serviceID]*fragment, len(services))
	for _, svc := range services {
		id := serviceID{svc.Namespace, svc.Name}
		slices := bySvc[id]
		f := p.fragments[id]
		if f == nil || !f.current(svc, slices) {
			f = p.fragment(svc, slices)
			f.remember(svc, slices)
		}
		out[id] = f
	}
	return out
}

// merge adds up fragments (those of a map and a list) into a ruleset,
// with their shared chains or without.
func merge(m map[serviceID]*fragment, list []*fragment, withShared bool) *ruleset {
	rs := newRuleset()
	add := func(f *fragment) {
		for name, rules := range f.chains {
			rs.chains[name] = rules
		}
		if withShared {
			for name, rules := range f.shared {
				rs.chains[name] = rules
			}
		}
		for m, elems := range f.elements {
			for k, v := range elems {
				rs.elements[m][k] = v
			}
		}
		for name, timeout := range f.sets {
			rs.sets[name] = timeout
		}
		for d, ips := range f.udp {
			rs.udp[d] = ips
		}
	}
	for _, f := range m {
		add(f)
	}
	for _, f := range list {
		add(f)
	}
	return rs
}

func (f *fragment) element(m, key, value string) {
	if f.elements[m] == nil {
		f.elements[m] = map[string]string{}
	}
	f.elements[m][key] = value
}

// remember notes the resourceVersions f was computed from.
func (f *fragment) remember(svc *core.Service, slices []*discovery.EndpointSlice) {
	f.serviceVersion = svc.ResourceVersion
	f.sliceVersions = make([]sliceVersion, len(slices))
	for i, s := range slices {
		f.sliceVersions[i] = sliceVersion{s.Name, s.ResourceVersion}
	}
	sort.Slice(f.sliceVersions, func(i, j int) bool { return f.sliceVersions[i].name < f.sliceVersions[j].name })
}

// current: f was computed from these versions of svc and its slices.
// Objects without resourceVersion (made by hand, in tests) are never
// current.
func (f *fragment) current(svc *core.Service, slices []*discovery.EndpointSlice) bool {
	if svc.ResourceVersion == "" || svc.ResourceVersion != f.serviceVersion || len(slices) != len(f.sliceVersions) {
		return false
	}
	for _, s := range slices {
		i := sort.Search(len(f.sliceVersions), func(i int) bool { return f.sliceVersions[i].name >= s.Name })
		if s.ResourceVersion == "" || i == len(f.sliceVersions) || f.sliceVersions[i] != (sliceVersion{s.Name, s.ResourceVersion}) {
			return false
		}
	}
	return true
}

// fragment computes one Service's chains and elements.
func (p *Proxy) fragment(svc *core.Service, slices []*discovery.EndpointSlice) *fragment {
	f := &fragment{chains: map[string][]rule{}, shared: map[string][]rule{}, elements: map[string]map[string]string{}, sets: map[string]int32{}, udp: map[udpDest][]string{}}
	ip := svc.Spec.ClusterIP
	if ip == "" || ip == core.ClusterIPNone || svc.Spec.Type == core.ServiceTypeExternalName {
		return f
	}
	for _, sp := range svc.Spec.Ports {
		all := readyEndpoints(slices, sp)
		proto := strings.ToLower(string(sp.Protocol))
		base := fmt.Sprintf("%s/%s/%s/%s", svc.Namespace, svc.Name, proto, portName(sp))
		internal := all
		if svc.Spec.InternalTrafficPolicy != nil && *svc.Spec.InternalTrafficPolicy == core.TrafficLocal {
			internal = p.local(all)
		}
		key := fmt.Sprintf("%s . %s . %d", ip, proto, sp.Port)
		if sp.Protocol == core.ProtocolUDP {
			f.udp[udpDest{ip, sp.Port}] = addrsOf(internal)
		}
		if len(internal) == 0 {
			f.element(noEndpointServicesMap, key, "goto "+rejectChain)
		} else {
			f.element(serviceIPsMap, key, "goto "+p.loadBalance(f, "service-"+hash(base)+"-"+base, base, svc, proto, endpointsMap, key, internal, false))
		}
		if !svc.Spec.ReachableFromOutside() || sp.NodePort == 0 {
			continue
		}
		npKey := fmt.Sprintf("%s . %d", proto, sp.NodePort)
		external, localOnly := all, svc.Spec.ExternalTrafficPolicy == core.TrafficLocal
		if localOnly {
			external = p.local(all)
		}
		if sp.Protocol == core.ProtocolUDP {
			f.udp[udpDest{"", sp.NodePort}] = addrsOf(external)
		}
		if len(external) == 0 {
			f.element(noEndpointNodePorts, npKey, "goto "+rejectChain)
			continue
		}
		// Cluster policy: the reply must come back through this node,
		// wherever the endpoint is, so the connection is masqueraded.
		f.element(serviceNodePortsMap, npKey, "goto "+p.loadBalance(f, "external-"+hash(base)+"-"+base, base, svc, proto, nodePortEndpointsMap, npKey, external, !localOnly))
	}
	return f
}

// loadBalance adds the chain that picks one of eps for a new connection
// and DNATs to it, and returns its name. key is the Service port's key in
// m (the endpoints map its chain reads); masquerade marks the connection
// for masquerading first.
//
// Without affinity the chain is shared: lb-<proto>-<n> (with
// -nodeport or -nodeport-local for node ports) picks a random index
// below n and looks the endpoint up in m by the packet's destination and
// that index. One chain serves every Service port with n endpoints, so
// the maps have few users (the kernel checks each map element added
// against every rule that reads the map), and a changed endpoint is a
// changed element, not a changed rule.
func (p *Proxy) loadBalance(f *fragment, own, base string, svc *core.Service, proto, m, key string, eps []endpoint, masquerade bool) string {
	var rules []rule
	if masquerade {
		rules = append(rules, jumpRule(markChain))
	}
	if svc.Spec.SessionAffinity != core.ServiceAffinityClientIP {
		for i, e := range eps {
			f.element(m, fmt.Sprintf("%s . %d", key, i), fmt.Sprintf("%s . %d", e.ip, e.port))
		}
		chain := fmt.Sprintf("lb-%s-%d", proto, len(eps))
		switch {
		case m == nodePortEndpointsMap && masquerade:
			chain += "-nodeport"
		case m == nodePortEndpointsMap:
			chain += "-nodeport-local"
		}
		f.shared[chain] = append(rules, mapDNATRule(m, proto, len(eps)))
		return chain
	}
	// ClientIP affinity: the rule that picks an endpoint must also
	// remember the client in that endpoint's set, so the Service port has
	// a chain of its own with rules for each endpoint. A client seen
	// recently goes where it went, and is remembered again.
	timeout := core.DefaultClientIPServiceAffinitySeconds
	if c := svc.Spec.SessionAffinityConfig; c != nil && c.ClientIP != nil && c.ClientIP.TimeoutSeconds != nil {
		timeout = *c.ClientIP.TimeoutSeconds
	}
	var picks []rule
	for i, e := range eps {
		set := "affinity-" + hash(fmt.Sprintf("%s__%s/%d", base, e.ip, e.port))
		f.sets[set] = timeout
		rules = append(rules, dnatRule(set, 0, set, proto, e.ip, e.port))
		// Endpoint i of n is taken with probability 1/(n-i) among those
		// left, so each gets 1/n (what kube-proxy's iptables mode does with
		// -m statistic). Not `numgen random mod n vmap { … }`: every such
		// rule makes an anonymous set, and the kernel's cost of adding
		// anonymous sets grows with the number already there (10,000
		// Services took a minute to load).
		picks = append(picks, dnatRule("", len(eps)-i, set, proto, e.ip, e.port))
	}
	f.chains[own] = append(rules, picks...)
	return own
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
