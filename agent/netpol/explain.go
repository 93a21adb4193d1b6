package netpol

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
)

// Hop is one step of a pod's policy rules as the kernel has them now
// (`kobectl explain-path pod/A --to pod/B`).
type Hop struct {
	Object  string   // "map egress-pods", "chain egress-…"
	Lines   []string // the element or the chain's rules, as nft prints them
	Explain string
}

// ListText runs nft to list one object of the table ("map egress-pods",
// "chain np-in-…") and returns its lines (elements or rules, with their
// counters and comments) as nft prints them.
type ListText func(ctx context.Context, object string) ([]string, error)

// NFTListText runs `nft list <object kind> ip kobune-netpol <name>`.
func NFTListText(ctx context.Context, object string) ([]string, error) {
	kind, name, _ := strings.Cut(object, " ")
	out, err := exec.CommandContext(ctx, "nft", "list", kind, "ip", Table, name).CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("nft list %s: %v: %s", object, err, strings.TrimSpace(string(out)))
	}
	return parseList(string(out)), nil
}

// parseList keeps the elements or rules of nft's listing of one object.
func parseList(out string) []string {
	var lines []string
	depth := 0
	for _, l := range strings.Split(out, "\n") {
		l = strings.TrimSpace(l)
		switch {
		case strings.HasSuffix(l, "{"):
			depth++
		case l == "}":
			depth--
		case depth < 2 || l == "" || strings.HasPrefix(l, "type ") || strings.HasPrefix(l, "comment ") || strings.HasPrefix(l, "flags "):
		default:
			l = strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(l, ","), "}"), " ")
			lines = append(lines, strings.TrimPrefix(l, "elements = { "))
		}
	}
	return lines
}

// Explain reads the rules this node applies to the pod at ip for the
// direction ("ingress" or "egress"): the verdict map's element, the pod's
// chain (with the drop's counter: packets this pod's isolation dropped)
// and each selecting policy's chain, rule by rule with the rule it comes
// from.
func Explain(ctx context.Context, list ListText, ip, direction string) ([]Hop, error) {
	if direction != "ingress" && direction != "egress" {
		return nil, fmt.Errorf("direction %q: ingress or egress", direction)
	}
	m := direction + "-pods"
	elems, err := list(ctx, "map "+m)
	if err != nil {
		return nil, err
	}
	var chain string
	for _, l := range elems {
		for _, e := range strings.Split(l, ", ") {
			if k, v, ok := strings.Cut(strings.TrimSpace(e), " : "); ok && k == ip {
				chain = strings.TrimPrefix(v, "jump ")
			}
		}
	}
	if chain == "" {
		return []Hop{{Object: "map " + m, Explain: fmt.Sprintf("%s has no element here: no NetworkPolicy selects the pod for %s on this node, so this node lets all its %s traffic pass", ip, direction, direction)}}, nil
	}
	hops := []Hop{{Object: "map " + m, Lines: []string{ip + " : jump " + chain}, Explain: "the pod is isolated for " + direction + ": its packets go through the chain of its policies"}}
	rules, err := list(ctx, "chain "+chain)
	if err != nil {
		return nil, err
	}
	hops = append(hops, Hop{Object: "chain " + chain, Lines: rules, Explain: "each selecting policy's chain in turn; a packet none of them accepts is dropped (the counter counts them)"})
	for _, r := range rules {
		policy, ok := strings.CutPrefix(r, "jump ")
		if !ok {
			continue
		}
		prules, err := list(ctx, "chain "+policy)
		if err != nil {
			return nil, err
		}
		hops = append(hops, Hop{Object: "chain " + policy, Lines: prules, Explain: "a rule per allowed peers-and-port pair of one policy; the comment names the rule"})
	}
	return hops, nil
}
