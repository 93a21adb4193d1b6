package proxy

import (
	"encoding/binary"
	"fmt"
	"net"
	"strings"

	"github.com/google/nftables/expr"
	"golang.org/x/sys/unix"
)

// rule is one rule of a Service port's chain, in the two forms the proxy
// writes it in: nft's syntax (full syncs go through the nft binary, and
// `nft list` prints the rule so) and the netlink expressions the kernel
// stores (incremental syncs send those straight to the kernel). Both are
// made here, together, from the same values; TestNetlinkRulesListAsTheirText
// loads both into a kernel and checks that nft lists them alike.
type rule struct {
	text  string
	exprs []expr.Any
}

func (r rule) String() string { return r.text }

// jumpRule is `jump <chain>`.
func jumpRule(chain string) rule {
	return rule{"jump " + chain, []expr.Any{&expr.Verdict{Kind: expr.VerdictJump, Chain: chain}}}
}

// dnatRule DNATs a new connection to ip:port. Before it, in this order and
// each only when set:
//   - match: `ip saddr @<match>`, a client the affinity set remembers;
//   - pick > 1: `numgen random mod <pick> 0`, taken one time in pick;
//   - update: `update @<update> { ip saddr }`, remember the client (and
//     restart its timeout).
func dnatRule(match string, pick int, update, proto, ip string, port int32) rule {
	var text []string
	var ex []expr.Any
	saddr := &expr.Payload{DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: 12, Len: 4}
	if match != "" {
		text = append(text, "ip saddr @"+match)
		ex = append(ex, saddr, &expr.Lookup{SourceRegister: 1, SetName: match})
	}
	if pick > 1 {
		text = append(text, fmt.Sprintf("numgen random mod %d 0", pick))
		ex = append(ex, &expr.Numgen{Register: 1, Modulus: uint32(pick), Type: unix.NFT_NG_RANDOM},
			&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{0, 0, 0, 0}})
	}
	if update != "" {
		text = append(text, fmt.Sprintf("update @%s { ip saddr }", update))
		ex = append(ex, saddr, &expr.Dynset{SrcRegKey: 1, SetName: update, Operation: unix.NFT_DYNSET_OP_UPDATE})
	}
	text = append(text, fmt.Sprintf("meta l4proto %s dnat to %s:%d", proto, ip, port))
	ex = append(ex,
		&expr.Meta{Key: expr.MetaKeyL4PROTO, Register: 1},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{protoNumber(proto)}},
		&expr.Immediate{Register: 1, Data: net.ParseIP(ip).To4()},
		&expr.Immediate{Register: 2, Data: binary.BigEndian.AppendUint16(nil, uint16(port))},
		&expr.NAT{Type: expr.NATTypeDestNAT, Family: unix.NFPROTO_IPV4, RegAddrMin: 1, RegProtoMin: 2, Specified: true})
	return rule{strings.Join(text, " "), ex}
}

// protoNumber is the IP protocol number of a Service port's protocol, as
// the proxy writes it (lower case).
func protoNumber(proto string) byte {
	switch proto {
	case "udp":
		return unix.IPPROTO_UDP
	case "sctp":
		return unix.IPPROTO_SCTP
	}
	return unix.IPPROTO_TCP
}

// mapDNATRule DNATs a new connection to one of n endpoints, picked at
// random, through a data map: the Service port's endpoints are elements
// of m keyed by the packet's own destination and a random index, so a
// changed endpoint is a changed element — the rule stays, and the kernel
// does not re-validate the whole table (a rule change makes it walk every
// chain reachable from the hooks: tens of milliseconds with 10,000
// Services). m is endpointsMap (keyed by cluster IP . protocol . port .
// index) or nodePortEndpointsMap (protocol . node port . index).
func mapDNATRule(m, proto string, n int) rule {
	key := "meta l4proto . " + proto + " dport"
	ex := []expr.Any{
		&expr.Meta{Key: expr.MetaKeyL4PROTO, Register: 1},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{protoNumber(proto)}},
	}
	// The key is built in consecutive 32-bit registers (1 names the
	// first of them, 9, 10 and 11 the next), as nft lays out a
	// concatenation.
	regs := []uint32{1, 9, 10}
	if m == endpointsMap {
		key = "ip daddr . " + key
		ex = append(ex, &expr.Payload{DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: 16, Len: 4})
		regs = []uint32{9, 10, 11}
	}
	ex = append(ex,
		&expr.Meta{Key: expr.MetaKeyL4PROTO, Register: regs[0]},
		&expr.Payload{DestRegister: regs[1], Base: expr.PayloadBaseTransportHeader, Offset: 2, Len: 2},
		&expr.Numgen{Register: regs[2], Modulus: uint32(n), Type: unix.NFT_NG_RANDOM},
		&expr.Lookup{SourceRegister: 1, DestRegister: 1, IsDestRegSet: true, SetName: m},
		&expr.NAT{Type: expr.NATTypeDestNAT, Family: unix.NFPROTO_IPV4, RegAddrMin: 1, RegProtoMin: 9})
	return rule{fmt.Sprintf("meta l4proto %s dnat to %s . numgen random mod %d map @%s", proto, key, n, m), ex}
}

// field is one part of a map element's key or value.
type field int

const (
	fieldAddr  field = iota // ipv4_addr: 4 bytes, network order
	fieldProto              // inet_proto: 1 byte
	fieldPort               // inet_service: 2 bytes, network order
	fieldIndex              // numgen's result: 4 bytes, host order
)

// layouts are the key and value parts of the proxy's maps (no value
// parts: a verdict map).
var layouts = map[string][2][]field{
	serviceIPsMap:         {{fieldAddr, fieldProto, fieldPort}},
	noEndpointServicesMap: {{fieldAddr, fieldProto, fieldPort}},
	serviceNodePortsMap:   {{fieldProto, fieldPort}},
	noEndpointNodePorts:   {{fieldProto, fieldPort}},
	endpointsMap:          {{fieldAddr, fieldProto, fieldPort, fieldIndex}, {fieldAddr, fieldPort}},
	nodePortEndpointsMap:  {{fieldProto, fieldPort, fieldIndex}, {fieldAddr, fieldPort}},
}

// encode is a map element's key or value ("a . b . c") in the kernel's
// form: each part padded to 4 bytes, as nft lays out a concatenation.
func encode(fields []field, s string) ([]byte, error) {
	parts := strings.Split(s, " . ")
	if len(parts) != len(fields) {
		return nil, fmt.Errorf("map element %q: %d parts, want %d", s, len(parts), len(fields))
	}
	var out []byte
	for i, part := range parts {
		var b [4]byte
		switch fields[i] {
		case fieldAddr:
			ip := net.ParseIP(part).To4()
			if ip == nil {
				return nil, fmt.Errorf("map element %q: %q is no IPv4 address", s, part)
			}
			copy(b[:], ip)
		case fieldProto:
			b[0] = protoNumber(part)
		case fieldPort, fieldIndex:
			var n uint32
			if _, err := fmt.Sscanf(part, "%d", &n); err != nil {
				return nil, fmt.Errorf("map element %q: %q is no number", s, part)
			}
			if fields[i] == fieldPort {
				binary.BigEndian.PutUint16(b[:2], uint16(n))
			} else {
				binary.NativeEndian.PutUint32(b[:], n)
			}
		}
		out = append(out, b[:]...)
	}
	return out, nil
}
