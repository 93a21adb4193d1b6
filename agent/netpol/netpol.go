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
// The table's shape: per direction, one set of everything allowed,
// `ingress-allowed` with elements pod . peer addresses . protocols .
// ports (ranges, each element commented with the rules it comes from),
// looked up once per new connection whatever the number of policies,
// pods or peers; what it does not accept and goes to a pod that some
// policy isolates is dropped by that pod's chain (`ip daddr vmap
// @ingress-pods`: one lookup), whose counter counts the drops. The
// elements of a pod are made disjoint first (the kernel refuses
// overlapping ranges in such a set): the rules' peers, protocols and
// ports are cut into pieces and the peers of each piece merged.
//
// Every sync computes the whole table and, when it differs from what was
// loaded last, replaces it in one nft transaction (the kernel swaps it
// atomically; established connections are not touched). At teaching scale
// this takes milliseconds of nft; the proxy's incremental netlink path is
// not needed here.
package netpol

import (
	"context"
	"crypto/sha256"
	"encoding/base32"
	"fmt"
	"maps"
	"net/netip"
	"os"
	"slices"
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
	chainForward = "forward"       // forward hook: between pods (of this node or across nodes)
	chainToNode  = "input"         // input hook: from a local pod to this node
	chainIngress = "ingress-check" // the destination's part
)

// Directions, as the sets and maps are named.
const (
	dirIngress = "ingress"
	dirEgress  = "egress"
)

// State is what the rules are computed from.
type State struct {
	// Pods are all the cluster's pods (peers are chosen among them;
	// those on this node are the ones the table isolates).
	Pods       []*core.Pod
	Namespaces []*core.Namespace
	Policies   []*networking.NetworkPolicy
	// PseudoPods are endpoints that count as pods for peer selection without
	// being pods: the cluster DNS each agent serves on its node's
	// address, as kube-system pods labelled k8s-app=kube-dns (see
	// DNSEndpoints).
	PseudoPods []networking.Endpoint
}

// Enforcer programs one node's policy table.
type Enforcer struct {
	node string
	nft  knftables.Interface
	// loaded is the text of the last transaction the kernel took; ""
	// after a start or a failure: the next sync loads in any case.
	loaded string
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
		return nil
	}
	if err := e.nft.Run(ctx, tx); err != nil {
		e.loaded = ""
		return fmt.Errorf("nftables: %w", err)
	}
	e.loaded = text
	return nil
}

// Ruleset is the table's variable part, per direction ("ingress",
// "egress").
type Ruleset struct {
	// Allowed are the elements of <direction>-allowed: "pod . peers .
	// protocols . ports", each with the rules it comes from.
	Allowed map[string][]Element
	// Isolated: pod address → its chain (<direction>-pods' elements),
	// which counts and drops what Allowed does not accept.
	Isolated map[string]map[string]string
	// Chains are the isolated pods' chains.
	Chains map[string]string // chain → its comment (the pod and its policies)
}

// Element is an allowed set's element and the rules it comes from.
type Element struct {
	Key     string
	Comment string
}

// Build computes the node's ruleset.
func Build(node string, st State) *Ruleset {
	rs := &Ruleset{Allowed: map[string][]Element{}, Isolated: map[string]map[string]string{dirIngress: {}, dirEgress: {}}, Chains: map[string]string{}}
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
	all = append(all, st.PseudoPods...)
	policies := append([]*networking.NetworkPolicy(nil), st.Policies...)
	sort.Slice(policies, func(i, j int) bool {
		return policies[i].Namespace+"/"+policies[i].Name < policies[j].Namespace+"/"+policies[j].Name
	})
	sort.Slice(local, func(i, j int) bool { return local[i].IP.Less(local[j].IP) })
	for _, dir := range []string{dirIngress, dirEgress} {
		typ := networking.PolicyTypeIngress
		if dir == dirEgress {
			typ = networking.PolicyTypeEgress
		}
		for _, self := range local {
			var names []string
			var boxes []box
			for _, np := range policies {
				if !networking.HasType(np, typ) || !networking.SelectsPod(np, self) {
					continue
				}
				names = append(names, np.Namespace+"/"+np.Name)
				boxes = append(boxes, policyBoxes(np, dir, self, all, nsLabels)...)
			}
			if len(names) == 0 {
				continue // not isolated in this direction: nothing to do
			}
			chain := fmt.Sprintf("%s-%s", dir, hash(self.Namespace+"/"+self.Name))
			rs.Isolated[dir][self.IP.String()] = chain
			rs.Chains[chain] = comment([]string{fmt.Sprintf("%s/%s isolated for %s by %s", self.Namespace, self.Name, dir, strings.Join(names, ", "))})
			for _, el := range disjoint(boxes) {
				rs.Allowed[dir] = append(rs.Allowed[dir], Element{
					Key:     fmt.Sprintf("%s . %s . %s . %s", self.IP, el.peer.addrString(), el.proto.protoString(), el.port.portString()),
					Comment: comment(el.rules)})
			}
		}
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

// policyBoxes is what one policy's rules for one direction allow pod
// self: per rule, its peers' addresses (everyone, without peers) times
// each port entry's protocol and ports (every protocol and port, without
// ports). A named port is the destination's: for ingress self's own
// port of that name, for egress each peer pod's.
func policyBoxes(np *networking.NetworkPolicy, dir string, self networking.Endpoint, all []networking.Endpoint, nsLabels map[string]map[string]string) []box {
	type rule struct {
		ports []networking.NetworkPolicyPort
		peers []networking.NetworkPolicyPeer
	}
	var rules []rule
	if dir == dirIngress {
		for _, r := range np.Spec.Ingress {
			rules = append(rules, rule{r.Ports, r.From})
		}
	} else {
		for _, r := range np.Spec.Egress {
			rules = append(rules, rule{r.Ports, r.To})
		}
	}
	var out []box
	for i, r := range rules {
		name := fmt.Sprintf("%s/%s %s[%d]", np.Namespace, np.Name, dir, i)
		peers := []span{allAddrs}
		if len(r.peers) > 0 {
			peers = peerSpans(r.peers, np.Namespace, all, nsLabels)
		}
		add := func(proto, port span) {
			for _, p := range peers {
				out = append(out, box{peer: p, proto: proto, port: port, rule: name})
			}
		}
		if len(r.ports) == 0 {
			add(allProtos, allPorts)
			continue
		}
		for _, p := range r.ports {
			proto := "TCP"
			if p.Protocol != nil {
				proto = *p.Protocol
			}
			pn := span{uint32(protoNumber(proto)), uint32(protoNumber(proto))}
			switch {
			case p.Port == nil:
				add(pn, allPorts)
			case !p.Port.IsString && p.EndPort != nil:
				add(pn, span{uint32(p.Port.IntVal), uint32(*p.EndPort)})
			case !p.Port.IsString:
				add(pn, span{uint32(p.Port.IntVal), uint32(p.Port.IntVal)})
			case dir == dirIngress:
				if port, ok := namedPort(self, p.Port.StrVal, proto); ok {
					add(pn, span{port, port})
				}
			default: // egress: the port of that name on each peer pod
				for _, e := range all {
					port, ok := namedPort(e, p.Port.StrVal, proto)
					if !ok {
						continue
					}
					a := u32(e.IP)
					for _, s := range peers {
						if s.contains(span{a, a}) {
							out = append(out, box{peer: span{a, a}, proto: pn, port: span{port, port}, rule: name})
							break
						}
					}
				}
			}
		}
	}
	return out
}

func namedPort(e networking.Endpoint, name, proto string) (uint32, bool) {
	for _, p := range e.Ports {
		if p.Name == name && strings.EqualFold(p.Protocol, proto) {
			return uint32(p.Port), true
		}
	}
	return 0, false
}

func protoNumber(proto string) uint8 {
	switch strings.ToUpper(proto) {
	case "UDP":
		return 17
	case "SCTP":
		return 132
	}
	return 6
}

// peerSpans are the addresses a rule's peers choose, merged: the selected
// pods and the ipBlocks without their exceptions (IPv4 only; the table is
// IPv4's).
func peerSpans(peers []networking.NetworkPolicyPeer, policyNS string, all []networking.Endpoint, nsLabels map[string]map[string]string) []span {
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
	return normalize(rs)
}

// write adds the whole table to tx: the table is deleted and made again in
// the one transaction, which the kernel applies atomically.
func (rs *Ruleset) write(tx *knftables.Transaction) {
	tx.Add(&knftables.Table{})
	tx.Delete(&knftables.Table{})
	tx.Add(&knftables.Table{Comment: knftables.PtrTo("kobune-agent's NetworkPolicy rules")})
	if len(rs.Isolated[dirIngress]) == 0 && len(rs.Isolated[dirEgress]) == 0 {
		return // no pod here is isolated: no hook, no cost per packet
	}
	// Each isolated pod's allowed set: peers . protocols . ports (the
	// pod's own address is implied by the chain that reads it; fewer
	// fields make the kernel's lookup cheaper).
	for _, dir := range []string{dirIngress, dirEgress} {
		for _, ip := range slices.Sorted(maps.Keys(rs.Isolated[dir])) {
			tx.Add(&knftables.Set{Name: allowedSet(rs.Isolated[dir][ip]), Type: "ipv4_addr . inet_proto . inet_service", Flags: []knftables.SetFlag{knftables.IntervalFlag},
				Comment: knftables.PtrTo("peers . protocols . ports the " + dir + " policies of " + ip + " allow")})
		}
		for _, el := range rs.Allowed[dir] {
			ip, key, _ := strings.Cut(el.Key, " . ")
			e := &knftables.Element{Set: allowedSet(rs.Isolated[dir][ip]), Key: strings.Split(key, " . ")}
			if el.Comment != "" {
				e.Comment = knftables.PtrTo(el.Comment)
			}
			tx.Add(e)
		}
	}
	tx.Add(&knftables.Chain{Name: chainIngress, Comment: knftables.PtrTo("the destination's ingress, once the source's egress passed")})
	for _, dir := range []string{dirIngress, dirEgress} {
		// An isolated pod's chain: what its set allows passes on (egress:
		// to the destination's ingress check; ingress: accepted), the
		// rest is counted and dropped.
		peer, allowed := "ip saddr", "accept"
		if dir == dirEgress {
			peer, allowed = "ip daddr", "goto "+chainIngress
		}
		for _, ip := range slices.Sorted(maps.Keys(rs.Isolated[dir])) {
			name := rs.Isolated[dir][ip]
			tx.Add(&knftables.Chain{Name: name, Comment: knftables.PtrTo(rs.Chains[name])})
			tx.Add(&knftables.Rule{Chain: name, Rule: peer + " . meta l4proto . th dport @" + allowedSet(name) + " " + allowed})
			tx.Add(&knftables.Rule{Chain: name, Rule: "counter drop"})
		}
		m := dir + "-pods"
		tx.Add(&knftables.Map{Name: m, Type: "ipv4_addr : verdict", Comment: knftables.PtrTo("pods of this node isolated for " + dir)})
		for _, ip := range slices.Sorted(maps.Keys(rs.Isolated[dir])) {
			tx.Add(&knftables.Element{Map: m, Key: []string{ip}, Value: []string{"goto " + rs.Isolated[dir][ip]}})
		}
	}
	tx.Add(&knftables.Rule{Chain: chainIngress, Rule: "ip daddr vmap @ingress-pods"})
	typ, filter := knftables.FilterType, knftables.FilterPriority
	for _, h := range []struct {
		name string
		hook knftables.BaseChainHook
	}{{chainForward, knftables.ForwardHook}, {chainToNode, knftables.InputHook}} {
		tx.Add(&knftables.Chain{Name: h.name, Type: &typ, Hook: &h.hook, Priority: &filter})
		// Replies pass; a new connection goes through the source's
		// egress (when it is an isolated pod of this node), then the
		// destination's ingress (likewise); a pod no policy isolates
		// costs a lookup in each map, whatever the number of policies.
		tx.Add(&knftables.Rule{Chain: h.name, Rule: "ct state established,related accept"})
		tx.Add(&knftables.Rule{Chain: h.name, Rule: "ip saddr vmap @egress-pods"})
		tx.Add(&knftables.Rule{Chain: h.name, Rule: "goto " + chainIngress})
	}
}

// allowedSet names the set an isolated pod's chain looks up.
func allowedSet(chain string) string { return "allow-" + chain }

// String is the ruleset as a stable text (tests compare it).
func (rs *Ruleset) String() string {
	var b strings.Builder
	for _, dir := range []string{dirIngress, dirEgress} {
		for _, el := range rs.Allowed[dir] {
			fmt.Fprintf(&b, "%s-allowed %s  # %s\n", dir, el.Key, el.Comment)
		}
		for _, ip := range slices.Sorted(maps.Keys(rs.Isolated[dir])) {
			chain := rs.Isolated[dir][ip]
			fmt.Fprintf(&b, "%s-pods %s → %s  # %s\n", dir, ip, chain, rs.Chains[chain])
		}
	}
	return b.String()
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
