// Package netpol is kobune-agent's NetworkPolicy enforcement (what a
// Kubernetes network plugin such as Calico or Cilium does on each node):
// it turns the NetworkPolicies that select this node's pods into one
// nftables table, `ip kobune-netpol`, in the node's network namespace,
// following the semantics api/networking.Decide specifies (the model the
// tests hold the kernel to).
//
// Where a packet is judged: in the forward hook (traffic between pods,
// on one node's bridge — br_netfilter hands bridged IPv4 to these hooks —
// or across nodes), after the node proxy's DNAT, so a connection to a
// Service is judged against the pod it was sent to, and before the
// proxy's masquerade, so the source is still the client pod; and in the
// input hook for a pod's connections to its own node (the cluster DNS the
// agent serves). Connections the node itself opens to its pods (probes)
// pass, as Kubernetes requires. Replies and related packets of an allowed
// connection pass by connection tracking, before any policy is looked at.
//
// The table's shape: two verdict maps keyed by the address of a local pod
// that some policy isolates (`ingress-pods`, `egress-pods`) jump to a
// chain per distinct set of selecting policies, which jumps to each
// policy's chain and drops what none of them accepted. A policy's chain
// has a rule per allowed (rule, port) pair, with the rule's peers in an
// interval set of addresses (pods the selectors choose, ipBlocks less
// their exceptions), so the number of rules does not grow with the number
// of peers; named ports are looked up in sets of address . protocol .
// port of every pod that has a container port of that name.
//
// Every sync computes the whole table and, when it differs from what was
// loaded last, replaces it in one nft transaction (the kernel swaps it
// atomically; established connections are not touched). At teaching scale
// this takes a few milliseconds of nft; the proxy's incremental netlink
// path is not needed here.
package netpol

import (
	"context"
	"crypto/sha256"
	"encoding/base32"
	"fmt"
	"net/netip"
	"os"
	"sort"
	"strings"

	"sigs.k8s.io/knftables"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/discovery"
	"github.com/kobune/kobune/api/networking"
)

// Table is the nftables table the agent's policy enforcement owns.
const Table = "kobune-netpol"

// Names of the table's fixed objects.
const (
	ingressPods  = "ingress-pods"
	egressPods   = "egress-pods"
	chainIngress = "ingress"        // forward hook: to a local pod
	chainEgress  = "egress"         // forward hook: from a local pod
	chainToNode  = "egress-to-node" // input hook: from a local pod to this node
)

// State is what the rules are computed from.
type State struct {
	// Pods are all the cluster's pods (peers are chosen among them;
	// those on this node are the ones the table isolates).
	Pods       []*core.Pod
	Namespaces []*core.Namespace
	Policies   []*networking.NetworkPolicy
	// Extra are endpoints that count as pods for peer selection without
	// being pods: the cluster DNS each agent serves on its node's
	// address, as kube-system pods labelled k8s-app=kube-dns (see
	// DNSEndpoints).
	Extra []networking.Endpoint
}

// Enforcer programs one node's policy table.
type Enforcer struct {
	node string
	nft  knftables.Interface
	// loaded is the text of the last transaction the kernel took; ""
	// after a start or a failure: the next sync loads in any case.
	loaded string
	// Last is the ruleset of the last successful sync (explain reads it).
	Last *Ruleset
}

// New returns an enforcer for node over nft
// (knftables.New(knftables.IPv4Family, Table, ...)).
func New(node string, nft knftables.Interface) *Enforcer { return &Enforcer{node: node, nft: nft} }

// Sync makes the kernel's table match the state.
func (e *Enforcer) Sync(ctx context.Context, st State) error {
	rs := Build(e.node, st)
	tx := e.nft.NewTransaction()
	rs.write(tx)
	text := tx.String()
	if text == e.loaded {
		e.Last = rs
		return nil
	}
	if err := e.nft.Run(ctx, tx); err != nil {
		e.loaded = ""
		return fmt.Errorf("nftables: %w", err)
	}
	e.loaded, e.Last = text, rs
	return nil
}

// Ruleset is the table's variable part.
type Ruleset struct {
	// Chains: name → rules, in order. Pod chains end with a drop.
	Chains map[string][]Rule
	// Sets: name → elements; interval sets of addresses ("peers-…") or
	// address . protocol . port ("port-…").
	Sets map[string][]string
	// Ingress, Egress: local pod address → the chain that judges it.
	Ingress, Egress map[string]string
}

// Rule is one rule in nft's syntax, with a comment naming where it comes
// from ("namespace/policy ingress[0]").
type Rule struct {
	Text    string
	Comment string
}

// Build computes the node's ruleset.
func Build(node string, st State) *Ruleset {
	rs := &Ruleset{Chains: map[string][]Rule{}, Sets: map[string][]string{}, Ingress: map[string]string{}, Egress: map[string]string{}}
	nsLabels := map[string]map[string]string{}
	for _, n := range st.Namespaces {
		nsLabels[n.Name] = n.Labels
	}
	var all, local []networking.Endpoint
	for _, p := range st.Pods {
		if !policyPod(p) {
			continue
		}
		e := networking.PodEndpoint(p)
		if !e.IP.Is4() {
			continue
		}
		all = append(all, e)
		if p.Spec.NodeName == node {
			local = append(local, e)
		}
	}
	all = append(all, st.Extra...)
	policies := append([]*networking.NetworkPolicy(nil), st.Policies...)
	sort.Slice(policies, func(i, j int) bool {
		return policies[i].Namespace+"/"+policies[i].Name < policies[j].Namespace+"/"+policies[j].Name
	})
	named := map[string]bool{} // named-port sets in use
	for _, dir := range []string{networking.PolicyTypeIngress, networking.PolicyTypeEgress} {
		podChains := map[string][]string{} // local pod IP → its policies' chains
		for _, np := range policies {
			if !networking.HasType(np, dir) {
				continue
			}
			var selected []string
			for _, e := range local {
				if networking.SelectsPod(np, e) {
					selected = append(selected, e.IP.String())
				}
			}
			if len(selected) == 0 {
				continue // selects nothing here: no chain on this node
			}
			chain := policyChain(np, dir)
			rs.Chains[chain] = policyRules(rs, np, dir, all, nsLabels, named)
			for _, ip := range selected {
				podChains[ip] = append(podChains[ip], chain)
			}
		}
		verdicts := rs.Ingress
		if dir == networking.PolicyTypeEgress {
			verdicts = rs.Egress
		}
		for ip, chains := range podChains {
			name := strings.ToLower(dir) + "-" + hash(strings.Join(chains, ","))
			if _, ok := rs.Chains[name]; !ok {
				var rules []Rule
				for _, c := range chains {
					rules = append(rules, Rule{Text: "jump " + c})
				}
				rules = append(rules, Rule{Text: "counter drop", Comment: "isolated for " + strings.ToLower(dir) + ": no policy allows this"})
				rs.Chains[name] = rules
			}
			verdicts[ip] = name
		}
	}
	for set := range named {
		proto, name, _ := strings.Cut(strings.TrimPrefix(set, "port-"), "-")
		var elems []string
		seen := map[string]bool{}
		for _, e := range all {
			for _, p := range e.Ports {
				if p.Name == name && strings.EqualFold(p.Protocol, proto) {
					el := fmt.Sprintf("%s . %s . %d", e.IP, proto, p.Port)
					if !seen[el] {
						seen[el] = true
						elems = append(elems, el)
					}
				}
			}
		}
		sort.Strings(elems)
		rs.Sets[set] = elems
	}
	return rs
}

// policyPod: a pod policies apply to and select as a peer — one with its
// own network (host-network pods share their node's address, which
// Kubernetes leaves outside policy) that has not finished (a finished
// pod's address may already be another's).
func policyPod(p *core.Pod) bool {
	return !p.Spec.HostNetwork && p.Status.PodIP != "" && p.Status.Phase != core.PodSucceeded && p.Status.Phase != core.PodFailed
}

func policyChain(np *networking.NetworkPolicy, dir string) string {
	return fmt.Sprintf("np-%s-%s", strings.ToLower(dir)[:2], hash(np.Namespace+"/"+np.Name))
}

// policyRules are a policy's rules for one direction: per rule, per port
// entry (or once without ports), the peers' set and the port, accept.
func policyRules(rs *Ruleset, np *networking.NetworkPolicy, dir string, all []networking.Endpoint, nsLabels map[string]map[string]string, named map[string]bool) []Rule {
	key := np.Namespace + "/" + np.Name
	addr := "ip saddr" // ingress: the peer is the source
	if dir == networking.PolicyTypeEgress {
		addr = "ip daddr"
	}
	type rule struct {
		ports []networking.NetworkPolicyPort
		peers []networking.NetworkPolicyPeer
	}
	var rules []rule
	if dir == networking.PolicyTypeIngress {
		for _, r := range np.Spec.Ingress {
			rules = append(rules, rule{r.Ports, r.From})
		}
	} else {
		for _, r := range np.Spec.Egress {
			rules = append(rules, rule{r.Ports, r.To})
		}
	}
	var out []Rule
	for i, r := range rules {
		comment := fmt.Sprintf("%s %s[%d]", key, strings.ToLower(dir), i)
		peer := ""
		if len(r.peers) > 0 {
			set := fmt.Sprintf("peers-%s", hash(comment))
			rs.Sets[set] = peerRanges(r.peers, np.Namespace, all, nsLabels)
			peer = addr + " @" + set + " "
		}
		if len(r.ports) == 0 {
			out = append(out, Rule{Text: peer + "accept", Comment: comment})
			continue
		}
		for _, p := range r.ports {
			out = append(out, Rule{Text: peer + portMatch(p, named) + " accept", Comment: comment})
		}
	}
	return out
}

// portMatch is one port entry as nft matches it: a protocol, a port or a
// range, or a named port's set (the destination's own ports).
func portMatch(p networking.NetworkPolicyPort, named map[string]bool) string {
	proto := "tcp"
	if p.Protocol != nil {
		proto = strings.ToLower(*p.Protocol)
	}
	switch {
	case p.Port == nil:
		return "meta l4proto " + proto
	case p.Port.IsString:
		set := "port-" + proto + "-" + p.Port.StrVal
		named[set] = true
		return "ip daddr . meta l4proto . th dport @" + set
	case p.EndPort != nil:
		return fmt.Sprintf("meta l4proto %s th dport %d-%d", proto, p.Port.IntVal, *p.EndPort)
	}
	return fmt.Sprintf("meta l4proto %s th dport %d", proto, p.Port.IntVal)
}

// peerRanges are the addresses a rule's peers choose, as disjoint sorted
// ranges ("a" or "a-b"): the selected pods and the ipBlocks without their
// exceptions (IPv4 only; the table is IPv4's).
func peerRanges(peers []networking.NetworkPolicyPeer, policyNS string, all []networking.Endpoint, nsLabels map[string]map[string]string) []string {
	var rs []span
	for _, p := range peers {
		if p.IPBlock != nil {
			cidr, err := netip.ParsePrefix(p.IPBlock.CIDR)
			if err != nil || !cidr.Addr().Is4() {
				continue
			}
			block := []span{spanOf(cidr)}
			for _, ex := range p.IPBlock.Except {
				if e, err := netip.ParsePrefix(ex); err == nil && e.Addr().Is4() {
					block = subtract(block, spanOf(e))
				}
			}
			rs = append(rs, block...)
			continue
		}
		for _, e := range all {
			if networking.PeerSelectsPod(p, policyNS, e, nsLabels) {
				a := u32(e.IP)
				rs = append(rs, span{a, a})
			}
		}
	}
	rs = normalize(rs)
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.String()
	}
	return out
}

// span is an inclusive range of IPv4 addresses.
type span struct{ lo, hi uint32 }

func (s span) String() string {
	if s.lo == s.hi {
		return addr(s.lo).String()
	}
	return addr(s.lo).String() + "-" + addr(s.hi).String()
}

func u32(a netip.Addr) uint32 {
	b := a.As4()
	return uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
}

func addr(n uint32) netip.Addr {
	return netip.AddrFrom4([4]byte{byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)})
}

func spanOf(p netip.Prefix) span {
	p = p.Masked()
	lo := u32(p.Addr())
	size := uint64(1) << (32 - p.Bits())
	return span{lo, uint32(uint64(lo) + size - 1)}
}

// subtract removes x from every span.
func subtract(in []span, x span) []span {
	var out []span
	for _, s := range in {
		if x.hi < s.lo || x.lo > s.hi {
			out = append(out, s)
			continue
		}
		if x.lo > s.lo {
			out = append(out, span{s.lo, x.lo - 1})
		}
		if x.hi < s.hi {
			out = append(out, span{x.hi + 1, s.hi})
		}
	}
	return out
}

// normalize sorts and merges overlapping and adjacent spans (nft refuses
// overlapping elements in an interval set).
func normalize(in []span) []span {
	sort.Slice(in, func(i, j int) bool { return in[i].lo < in[j].lo })
	var out []span
	for _, s := range in {
		if n := len(out); n > 0 && uint64(s.lo) <= uint64(out[n-1].hi)+1 {
			if s.hi > out[n-1].hi {
				out[n-1].hi = s.hi
			}
			continue
		}
		out = append(out, s)
	}
	return out
}

// write adds the whole table to tx: the table is deleted and made again in
// the one transaction, which the kernel applies atomically.
func (rs *Ruleset) write(tx *knftables.Transaction) {
	tx.Add(&knftables.Table{})
	tx.Delete(&knftables.Table{})
	tx.Add(&knftables.Table{Comment: knftables.PtrTo("kobune-agent's NetworkPolicy rules")})
	tx.Add(&knftables.Map{Name: ingressPods, Type: "ipv4_addr : verdict", Comment: knftables.PtrTo("local pods isolated for ingress")})
	tx.Add(&knftables.Map{Name: egressPods, Type: "ipv4_addr : verdict", Comment: knftables.PtrTo("local pods isolated for egress")})
	for _, name := range sortedKeys(rs.Sets) {
		typ := "ipv4_addr . inet_proto . inet_service"
		var flags []knftables.SetFlag
		if strings.HasPrefix(name, "peers-") {
			typ, flags = "ipv4_addr", []knftables.SetFlag{knftables.IntervalFlag}
		}
		tx.Add(&knftables.Set{Name: name, Type: typ, Flags: flags})
		for _, el := range rs.Sets[name] {
			tx.Add(&knftables.Element{Set: name, Key: strings.Split(el, " . ")})
		}
	}
	// Policy and pod chains first: the maps' verdicts and the hooks name
	// them.
	for _, name := range sortedKeys(rs.Chains) {
		tx.Add(&knftables.Chain{Name: name})
	}
	for _, name := range sortedKeys(rs.Chains) {
		for _, r := range rs.Chains[name] {
			var c *string
			if r.Comment != "" {
				c = knftables.PtrTo(r.Comment)
			}
			tx.Add(&knftables.Rule{Chain: name, Rule: r.Text, Comment: c})
		}
	}
	for _, m := range []struct {
		name  string
		elems map[string]string
	}{{ingressPods, rs.Ingress}, {egressPods, rs.Egress}} {
		for _, ip := range sortedKeys(m.elems) {
			tx.Add(&knftables.Element{Map: m.name, Key: []string{ip}, Value: []string{"jump " + m.elems[ip]}})
		}
	}
	hook := func(name string, h knftables.BaseChainHook, prio knftables.BaseChainPriority, rules ...string) {
		typ := knftables.FilterType
		tx.Add(&knftables.Chain{Name: name, Type: &typ, Hook: &h, Priority: &prio})
		for _, r := range rules {
			tx.Add(&knftables.Rule{Chain: name, Rule: r})
		}
	}
	established := "ct state established,related accept"
	// Egress and ingress are two base chains on the forward hook: an
	// accept ends only its own chain, so a connection must pass the
	// source pod's egress and then the destination pod's ingress.
	hook(chainEgress, knftables.ForwardHook, knftables.FilterPriority, established, "ip saddr vmap @"+egressPods)
	hook(chainIngress, knftables.ForwardHook, knftables.FilterPriority+"+10", established, "ip daddr vmap @"+ingressPods)
	hook(chainToNode, knftables.InputHook, knftables.FilterPriority, established, "ip saddr vmap @"+egressPods)
}

// String is the ruleset as a stable text (tests compare it).
func (rs *Ruleset) String() string {
	var b strings.Builder
	for _, name := range sortedKeys(rs.Chains) {
		fmt.Fprintf(&b, "chain %s\n", name)
		for _, r := range rs.Chains[name] {
			fmt.Fprintf(&b, "  %s", r.Text)
			if r.Comment != "" {
				fmt.Fprintf(&b, "  # %s", r.Comment)
			}
			b.WriteString("\n")
		}
	}
	for _, name := range sortedKeys(rs.Sets) {
		fmt.Fprintf(&b, "set %s { %s }\n", name, strings.Join(rs.Sets[name], ", "))
	}
	for _, ip := range sortedKeys(rs.Ingress) {
		fmt.Fprintf(&b, "ingress %s → %s\n", ip, rs.Ingress[ip])
	}
	for _, ip := range sortedKeys(rs.Egress) {
		fmt.Fprintf(&b, "egress %s → %s\n", ip, rs.Egress[ip])
	}
	return b.String()
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// hash makes a short unique name part (base32 of SHA-256, as the proxy's
// chain names).
func hash(s string) string {
	h := sha256.Sum256([]byte(s))
	return strings.ToLower(base32.StdEncoding.EncodeToString(h[:])[:10])
}

// DNSEndpoints are the cluster DNS servers the agents run, as policy
// peers: each address of the kube-system/kube-dns EndpointSlices the
// agents publish counts as a pod of kube-system labelled
// k8s-app=kube-dns, with the slice's named ports (dns, dns-tcp). So the
// egress rule Kubernetes users write for CoreDNS (namespaceSelector
// kube-system and podSelector k8s-app=kube-dns) allows Kobune's DNS too.
// Such a rule without ports allows every connection to that node address.
func DNSEndpoints(slices []*discovery.EndpointSlice, managedBy string) []networking.Endpoint {
	var out []networking.Endpoint
	for _, s := range slices {
		if s.Namespace != "kube-system" || s.Labels[discovery.LabelServiceName] != "kube-dns" || s.Labels[discovery.LabelManagedBy] != managedBy {
			continue
		}
		var ports []networking.NamedPort
		for _, p := range s.Ports {
			if p.Name != nil && p.Port != nil {
				proto := "TCP"
				if p.Protocol != nil {
					proto = string(*p.Protocol)
				}
				ports = append(ports, networking.NamedPort{Name: *p.Name, Protocol: proto, Port: *p.Port})
			}
		}
		for _, ep := range s.Endpoints {
			for _, a := range ep.Addresses {
				ip, err := netip.ParseAddr(a)
				if err != nil || !ip.Is4() {
					continue
				}
				out = append(out, networking.Endpoint{Pod: true, Namespace: "kube-system", Name: s.Name, IP: ip,
					Labels: map[string]string{"k8s-app": "kube-dns"}, Ports: ports})
			}
		}
	}
	return out
}

// bridgeNetfilter is the switch that hands bridged IPv4 to the IPv4 hooks.
const bridgeNetfilter = "/proc/sys/net/bridge/bridge-nf-call-iptables"

// CheckBridgeNetfilter says what to do when pods on one bridge would
// bypass the rules: without br_netfilter (or with it switched off in this
// network namespace) packets between two pods of the node never reach the
// forward hook, and policies hold only between nodes.
func CheckBridgeNetfilter() error {
	b, err := os.ReadFile(bridgeNetfilter)
	if err != nil {
		return fmt.Errorf("NetworkPolicy between pods of this node is not enforced: %s is missing (load the module: modprobe br_netfilter)", bridgeNetfilter)
	}
	if strings.TrimSpace(string(b)) != "1" {
		return fmt.Errorf("NetworkPolicy between pods of this node is not enforced: %s is 0 (sysctl -w net.bridge.bridge-nf-call-iptables=1)", bridgeNetfilter)
	}
	return nil
}
