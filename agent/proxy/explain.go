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
	chainRef = regexp.MustCompile(`(?:goto|jump) ([^\s,}]+)`)
	dnatTo   = regexp.MustCompile(`dnat to ([0-9.]+):([0-9]+)`)
	saddrNet = regexp.MustCompile(`ip saddr ([0-9./]+) jump ` + markChain)
)

// Explain follows a packet to ip:port/proto (sent from source, when set)
// through the live table: the verdict map entry, the Service port's
// chain, the endpoint chains and their DNAT and masquerade. text reads
// chain rules (NFTChainText on a node).
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
	var eps []string
	affinity := false
	for _, r := range rules {
		for _, m := range chainRef.FindAllStringSubmatch(r, -1) {
			if strings.HasPrefix(m[1], "endpoint-") && !slices.Contains(eps, m[1]) {
				eps = append(eps, m[1])
			}
		}
		affinity = affinity || strings.Contains(r, "ip saddr @affinity-")
	}
	explain := fmt.Sprintf("picks one of %d endpoints at random for each new connection (numgen random)", len(eps))
	if affinity {
		explain = fmt.Sprintf("sessionAffinity ClientIP: a client seen recently goes to the endpoint that remembers it (set affinity-…); otherwise one of %d at random", len(eps))
	}
	hops = append(hops, Hop{Object: "chain " + svcChain, Lines: rules, Explain: explain})
	for _, ep := range eps {
		rules, err := text(ctx, ep)
		if err != nil {
			return nil, err
		}
		var dnat string
		var parts []string
		for _, r := range rules {
			if m := dnatTo.FindStringSubmatch(r); m != nil {
				dnat = fmt.Sprintf("DNAT to %s:%s", m[1], m[2])
			}
			if m := saddrNet.FindStringSubmatch(r); m != nil {
				_, cidr, err := net.ParseCIDR(m[1])
				switch {
				case err != nil:
				case source != "" && cidr.Contains(net.ParseIP(source)):
					parts = append(parts, fmt.Sprintf("masqueraded: %s is a pod of this node and the endpoint is on this node too, so the reply must come back through the node", source))
				case source == "":
					parts = append(parts, fmt.Sprintf("masqueraded when sent from this node's pods (%s): the endpoint is on this node", m[1]))
				}
			}
			if strings.HasPrefix(r, "update @affinity-") && source != "" {
				if pinned, _ := p.inSet(ctx, strings.Fields(strings.TrimPrefix(r, "update @"))[0], source); pinned {
					parts = append(parts, source+" is pinned to this endpoint (affinity)")
				}
			}
		}
		hops = append(hops, Hop{Object: "chain " + ep, Lines: rules, Explain: strings.Join(append([]string{dnat}, parts...), "; ")})
	}
	return hops, nil
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
