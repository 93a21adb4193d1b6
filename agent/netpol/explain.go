package netpol

import (
	"context"
	"fmt"
	"os/exec"
	"strings"

	"github.com/kobune/kobune/agent/proxy"
)

// Hop is one step of a pod's policy rules as the kernel has them now
// (`kobectl explain-path pod/A --to pod/B`), in the node proxy's form.
type Hop = proxy.Hop

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
// direction ("ingress" or "egress"): the elements of the allowed set for
// the pod (each with the rules it comes from) and, when the pod is
// isolated, the verdict map's element and the pod's chain with its
// counter of dropped connections.
func Explain(ctx context.Context, list ListText, ip, direction string) ([]Hop, error) {
	if direction != dirIngress && direction != dirEgress {
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
				chain = strings.TrimPrefix(strings.TrimPrefix(v, "goto "), "jump ")
			}
		}
	}
	if chain == "" {
		return []Hop{{Object: "map " + m, Explain: fmt.Sprintf("%s has no element here: no NetworkPolicy selects the pod for %s on this node, so this node lets all its %s traffic pass", ip, direction, direction)}}, nil
	}
	set := "allow-" + chain
	all, err := list(ctx, "set "+set)
	if err != nil {
		return nil, err
	}
	var mine []string
	for _, l := range all {
		mine = append(mine, splitElements(l)...)
	}
	const maxLines = 20
	if len(mine) > maxLines {
		mine = append(mine[:maxLines], fmt.Sprintf("... and %d more", len(mine)-maxLines))
	}
	what := "nothing: the selecting policies allow no " + direction + " at all"
	if len(mine) > 0 {
		what = "what the selecting policies allow, as peers . protocols . ports (one lookup for every new connection; a match passes)"
	}
	rules, err := list(ctx, "chain "+chain)
	if err != nil {
		return nil, err
	}
	return []Hop{
		{Object: "set " + set, Lines: mine, Explain: what},
		{Object: "map " + m, Lines: []string{ip + " : goto " + chain}, Explain: "the pod is isolated for " + direction + ": what the set did not accept goes to its chain"},
		{Object: "chain " + chain, Lines: rules, Explain: "dropped (the counter counts the connections this pod's isolation stopped)"},
	}, nil
}

// splitElements splits a line of a set's listing at the commas between
// elements (comments hold none: Kobune writes "; " between rules).
func splitElements(l string) []string {
	var out []string
	for _, e := range strings.Split(l, ",") {
		if e = strings.TrimSpace(e); e != "" {
			out = append(out, e)
		}
	}
	return out
}
