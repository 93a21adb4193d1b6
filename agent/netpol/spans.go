package netpol

import (
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"sort"
	"strings"
)

// span is an inclusive range of numbers: IPv4 addresses, protocols,
// ports.
type span struct{ lo, hi uint32 }

var (
	allAddrs  = span{0, 1<<32 - 1}
	allProtos = span{0, 255}
	allPorts  = span{0, 65535}
)

func (s span) addrString() string {
	if s.lo == s.hi {
		return addr(s.lo).String()
	}
	return addr(s.lo).String() + "-" + addr(s.hi).String()
}

func (s span) portString() string {
	if s.lo == s.hi {
		return fmt.Sprint(s.lo)
	}
	return fmt.Sprintf("%d-%d", s.lo, s.hi)
}

// protoString names TCP, UDP and SCTP as nft does; others by number.
func (s span) protoString() string {
	if s.lo == s.hi {
		switch s.lo {
		case 6:
			return "tcp"
		case 17:
			return "udp"
		case 132:
			return "sctp"
		}
	}
	return s.portString()
}

func (s span) contains(x span) bool { return s.lo <= x.lo && x.hi <= s.hi }

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

// normalize sorts and merges overlapping and adjacent spans.
func normalize(in []span) []span {
	in = append([]span(nil), in...)
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

// box is what one rule allows one pod: peer addresses × protocols ×
// ports, and the rule it comes from.
type box struct {
	peer, proto, port span
	rule              string
}

// element is one element of an allowed set: disjoint from every other of
// the same pod (the kernel refuses overlapping elements in a set of
// concatenated ranges).
type element struct {
	peer, proto, port span
	rules             []string
}

// disjoint turns boxes that may overlap into elements that do not and
// cover the same: the protocols are cut where any box's protocols start
// or end, then the ports within each protocol piece likewise, and the
// peers of the boxes over each (protocol, port) piece are merged; port
// pieces next to each other with the same peers are joined again.
func disjoint(boxes []box) []element {
	var out []element
	for _, ps := range pieces(boxes, func(b box) span { return b.proto }) {
		var inProto []box
		for _, b := range boxes {
			if b.proto.contains(ps) {
				inProto = append(inProto, b)
			}
		}
		var last []element // the previous port piece's elements
		for _, pt := range pieces(inProto, func(b box) span { return b.port }) {
			var over []box // the boxes over this piece
			var peers []span
			for _, b := range inProto {
				if b.port.contains(pt) {
					over = append(over, b)
					peers = append(peers, b.peer)
				}
			}
			var cur []element
			for _, p := range normalize(peers) {
				rules := map[string]bool{}
				for _, b := range over {
					if b.peer.lo <= p.hi && p.lo <= b.peer.hi {
						rules[b.rule] = true
					}
				}
				cur = append(cur, element{peer: p, proto: ps, port: pt, rules: slices.Sorted(maps.Keys(rules))})
			}
			if len(last) == len(cur) && len(cur) > 0 && last[0].port.hi+1 == pt.lo && samePeers(last, cur) {
				for i := range last {
					el := &out[len(out)-len(last)+i]
					el.port.hi = pt.hi
					el.rules = union(el.rules, cur[i].rules)
					last[i].port.hi = pt.hi
				}
				continue
			}
			out = append(out, cur...)
			last = cur
		}
	}
	return out
}

// pieces cuts the union of the boxes' spans (what dim picks) at every
// start and end into pieces no span starts or ends inside of; pieces no
// box covers are left out.
func pieces(boxes []box, dim func(box) span) []span {
	var cuts []uint64
	for _, b := range boxes {
		s := dim(b)
		cuts = append(cuts, uint64(s.lo), uint64(s.hi)+1)
	}
	sort.Slice(cuts, func(i, j int) bool { return cuts[i] < cuts[j] })
	var out []span
	for i := 0; i+1 < len(cuts); i++ {
		if cuts[i] == cuts[i+1] {
			continue
		}
		p := span{uint32(cuts[i]), uint32(cuts[i+1] - 1)}
		for _, b := range boxes {
			if dim(b).contains(p) {
				out = append(out, p)
				break
			}
		}
	}
	return out
}

func samePeers(a, b []element) bool {
	for i := range a {
		if a[i].peer != b[i].peer {
			return false
		}
	}
	return true
}

func union(a, b []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range append(append([]string(nil), a...), b...) {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	sort.Strings(out)
	return out
}

// comment is an element's comment: the rules it comes from, within nft's
// 128 bytes ("; " between them: nft lists elements with commas).
func comment(rules []string) string {
	c := strings.Join(rules, "; ")
	if len(c) > 120 {
		c = c[:117] + "..."
	}
	return c
}
