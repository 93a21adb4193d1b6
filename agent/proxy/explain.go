package proxy

import (
	"context"
	"fmt"
	"net"
	"os/exec"
	"regexp"
	"slices"
	"strings"

	"sigs.k8s.io/knftables"
)

// Hop is one step of a packet's way through the node's table, as the
// kernel has it now (`kobectl explain-path`).
type Hop struct {
	// Object is the map or chain ("map service-ips", "chain service-…").
	Object string
	// Lines are the map element or the chain's rules, as nft prints them.
	Lines []string
	// Explain says what the step does to this packet.
	Explain string
}

// ChainText reads the rules of a chain of the proxy's table as nft
// prints them. knftables' ListRules gives only handles and comments (nft's
// JSON has no rule text), so the real one runs `nft list chain`.
type ChainText func(ctx context.Context, chain string) ([]string, error)

// NFTChainText runs `nft list chain ip kobune-proxy <chain>`.
func NFTChainText(ctx context.Context, chain string) ([]string, error) {
	out, err := exec.CommandContext(ctx, "nft", "list", "chain", "ip", Table, chain).CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("nft list chain %s: %v: %s", chain, err, strings.TrimSpace(string(out)))
	}
	var rules []string
	in := false
	for _, l := range strings.Split(string(out), "\n") {
		l = strings.TrimSpace(l)
		switch {
		case strings.HasPrefix(l, "chain "):
			in = true
		case !in || l == "" || l == "}" || strings.HasPrefix(l, "type ") || strings.HasPrefix(l, "comment "):
		default:
			rules = append(rules, l)
		}
	}
	return rules, nil
}

var (
	dnatTo    = regexp.MustCompile(`dnat to ([0-9.]+):([0-9]+)`)
	affinityS = regexp.MustCompile(`update @(affinity-[A-Z2-7]+)`)
	mapPick   = regexp.MustCompile(`numgen random mod ([0-9]+) map @([a-z-]+)`)
	localMasq = regexp.MustCompile(`ip saddr ([0-9./]+) ip daddr ([0-9./]+) ct status dnat jump ` + markChain)
	// Pods of this node to an endpoint outside the cluster's pod range.
	outsideMasq = regexp.MustCompile(`ip saddr ([0-9./]+) ip daddr != ([0-9./]+) ct status dnat jump ` + markChain)
)

// Explain follows a packet to ip:port/proto (sent from source, when set)
// through the live table: the verdict map entry, the Service port's chain
// with its endpoints and their DNAT, and the masquerade of this node's
// pods reaching this node's endpoints. text reads chain rules
// (NFTChainText on a node).
func (p *Proxy) Explain(ctx context.Context, text ChainText, ip, proto string, port int32, source string) ([]Hop, error) {
	proto = strings.ToLower(proto)
	key := fmt.Sprintf("%s . %s . %d", ip, proto, port)
	verdict, err := p.element(ctx, serviceIPsMap, key)
	if err != nil {
		return nil, err
	}
	if verdict == "" {
		if v, err := p.element(ctx, noEndpointServicesMap, key); err != nil {
			return nil, err
		} else if v != "" {
			return []Hop{{Object: "map " + noEndpointServicesMap, Lines: []string{key + " : " + v},
				Explain: "no ready endpoint on this node's rules: the connection is refused at once (TCP reset), not left to time out"}}, nil
		}
		return []Hop{{Object: "map " + serviceIPsMap, Explain: fmt.Sprintf("no element %s: this node's proxy does not know this Service port (not a cluster IP, or not synced yet)", key)}}, nil
	}
	hops := []Hop{{Object: "map " + serviceIPsMap, Lines: []string{key + " : " + verdict},
		Explain: "every packet to a Service is looked up once here (chain services, rule `ip daddr . meta l4proto . th dport vmap @service-ips`): one lookup, whatever the number of Services"}}
	svcChain := strings.TrimPrefix(verdict, "goto ")
	rules, err := text(ctx, svcChain)
	if err != nil {
		return nil, err
	}
	var eps, pinned []string
	affinity := false
	lines := rules
	for _, r := range rules {
		if m := mapPick.FindStringSubmatch(r); m != nil {
			// The endpoints are elements of the map: key . index.
			picked, els, err := p.mapEndpoints(ctx, m[2], key)
			if err != nil {
				return nil, err
			}
			eps = append(eps, picked...)
			lines = append(lines, els...)
			continue
		}
		m := dnatTo.FindStringSubmatch(r)
		if m == nil {
			continue
		}
		ep := m[1] + ":" + m[2]
		if strings.HasPrefix(r, "ip saddr @affinity-") {
			affinity = true
			if a := affinityS.FindStringSubmatch(r); a != nil && source != "" {
				if in, _ := p.inSet(ctx, a[1], source); in {
					pinned = append(pinned, ep)
				}
			}
			continue
		}
		if !slices.Contains(eps, ep) {
			eps = append(eps, ep)
		}
	}
	dnats := make([]string, len(eps))
	for i, ep := range eps {
		dnats[i] = "DNAT to " + ep
	}
	explain := fmt.Sprintf("picks one of %d endpoints at random for each new connection (numgen random, an index into the endpoints map): %s", len(eps), strings.Join(dnats, ", "))
	if affinity {
		explain = fmt.Sprintf("sessionAffinity ClientIP: a client seen recently goes to the endpoint whose set (affinity-…) remembers it; otherwise one of %d at random: %s", len(eps), strings.Join(dnats, ", "))
		if len(pinned) > 0 {
			explain += fmt.Sprintf("; %s is pinned to %s", source, strings.Join(pinned, ", "))
		}
	}
	hops = append(hops, Hop{Object: "chain " + svcChain, Lines: lines, Explain: explain})

	// The masquerade after the DNAT, for this node's pods reaching this
	// node's endpoints.
	masq, err := text(ctx, masqChain)
	if err != nil {
		return nil, err
	}
	for _, r := range masq {
		if m := outsideMasq.FindStringSubmatch(r); m != nil {
			_, cluster, err := net.ParseCIDR(m[2])
			if err != nil {
				continue
			}
			var outside []string
			for _, ep := range eps {
				if host, _, _ := net.SplitHostPort(ep); !cluster.Contains(net.ParseIP(host)) {
					outside = append(outside, ep)
				}
			}
			if len(outside) > 0 {
				hops = append(hops, Hop{Object: "chain " + masqChain, Lines: []string{r}, Explain: fmt.Sprintf(
					"masqueraded to this node's address when sent from this node's pods (%s), after DNAT to %s: outside the cluster's pod range %s (the API server on its host, say), which routes no pod addresses back",
					m[1], strings.Join(outside, ", "), m[2])})
			}
			continue
		}
		m := localMasq.FindStringSubmatch(r)
		if m == nil {
			continue
		}
		_, cidr, err := net.ParseCIDR(m[1])
		if err != nil {
			continue
		}
		var local []string
		for _, ep := range eps {
			if host, _, _ := net.SplitHostPort(ep); cidr.Contains(net.ParseIP(host)) {
				local = append(local, ep)
			}
		}
		switch {
		case len(local) == 0:
		case source != "" && cidr.Contains(net.ParseIP(source)):
			hops = append(hops, Hop{Object: "chain " + masqChain, Lines: []string{r}, Explain: fmt.Sprintf(
				"masqueraded after DNAT to %s: %s is a pod of this node and that endpoint is on this node too, so the reply must come back through the node", strings.Join(local, ", "), source)})
		case source == "":
			hops = append(hops, Hop{Object: "chain " + masqChain, Lines: []string{r}, Explain: fmt.Sprintf(
				"masqueraded when sent from this node's pods (%s), after DNAT to %s (an endpoint on this node)", m[1], strings.Join(local, ", "))})
		}
	}
	return hops, nil
}

// mapEndpoints are the endpoints ("ip:port") of a Service port's key in
// an endpoints map, in index order, and those elements as nft prints
// them.
func (p *Proxy) mapEndpoints(ctx context.Context, m, key string) ([]string, []string, error) {
	els, err := p.nft.ListElements(ctx, "map", m)
	if err != nil {
		return nil, nil, err
	}
	byIndex := map[int]*knftables.Element{}
	for _, e := range els {
		if len(e.Key) < 2 || strings.Join(e.Key[:len(e.Key)-1], " . ") != key || len(e.Value) != 2 {
			continue
		}
		var i int
		if _, err := fmt.Sscanf(e.Key[len(e.Key)-1], "%d", &i); err == nil {
			byIndex[i] = e
		}
	}
	var eps, lines []string
	for i := 0; byIndex[i] != nil; i++ {
		e := byIndex[i]
		eps = append(eps, e.Value[0]+":"+e.Value[1])
		lines = append(lines, fmt.Sprintf("map %s: %s : %s", m, strings.Join(e.Key, " . "), strings.Join(e.Value, " . ")))
	}
	return eps, lines, nil
}

// element is the verdict of a map element, "" when there is none.
func (p *Proxy) element(ctx context.Context, m, key string) (string, error) {
	els, err := p.nft.ListElements(ctx, "map", m)
	if err != nil {
		if knftables.IsNotFound(err) {
			return "", fmt.Errorf("this node has no table %s (is its proxy running?): %w", Table, err)
		}
		return "", err
	}
	for _, e := range els {
		if strings.Join(e.Key, " . ") == key {
			return strings.Join(e.Value, " "), nil
		}
	}
	return "", nil
}

func (p *Proxy) inSet(ctx context.Context, set, ip string) (bool, error) {
	els, err := p.nft.ListElements(ctx, "set", set)
	if err != nil {
		return false, err
	}
	for _, e := range els {
		if len(e.Key) == 1 && e.Key[0] == ip {
			return true, nil
		}
	}
	return false, nil
}
