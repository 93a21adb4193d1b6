package servicealloc

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kobune/kobune/api/core"
	v "github.com/kobune/kobune/api/validation"
	"github.com/kobune/kobune/apiserver/admission"
	"github.com/kobune/kobune/apiserver/storage"
)

// Service allocation, as kube-apiserver's service REST storage does it:
// a Service of type ClusterIP or NodePort gets a cluster IP from
// --service-cluster-ip-range (unless it is headless or names one), and a
// NodePort Service a node port from --service-node-port-range for each port
// that names none. Each IP and port is a claim (storage/claims.go) written
// in the same etcd transaction as the Service, so two Services never get
// the same one, however many API servers create at once; deleting the
// Service releases them in the same write. Kubernetes keeps allocated
// addresses as IPAddress objects the same way. Repair
// re-derives the claims from the Services at start and every few minutes.

// DNSOffset is the kube-dns Service's address in the range: the tenth,
// 10.96.0.10 by default, as kubeadm gives it. Allocation never hands it
// out, so the DNS Service can always have it.
const DNSOffset = 9

// Ranges are the cluster IP and node port ranges.
type Ranges struct {
	cidr            *net.IPNet
	first, size     uint32 // first usable address (network + 1) and how many
	portLo, portHi  int32
	cidrText, ports string
	pendingMu       sync.Mutex
	pending         map[string]time.Time // claims picked by creates in flight here
	KubernetesIP    string               // the first address: the kubernetes Service
}

// ParseRanges reads --service-cluster-ip-range and --service-node-port-range.
func ParseRanges(cidr, ports string) (*Ranges, error) {
	_, n, err := net.ParseCIDR(cidr)
	if err != nil || n.IP.To4() == nil {
		return nil, fmt.Errorf("--service-cluster-ip-range %q: must be an IPv4 CIDR such as 10.96.0.0/16", cidr)
	}
	ones, bits := n.Mask.Size()
	if bits-ones < 2 || bits-ones > 24 {
		return nil, fmt.Errorf("--service-cluster-ip-range %q: the prefix must be between /8 and /30", cidr)
	}
	lo, hi, ok := strings.Cut(ports, "-")
	plo, err1 := strconv.Atoi(lo)
	phi, err2 := strconv.Atoi(hi)
	if !ok || err1 != nil || err2 != nil || plo < 1 || phi > 65535 || plo > phi {
		return nil, fmt.Errorf("--service-node-port-range %q: must be LOW-HIGH, such as 30000-32767", ports)
	}
	r := &Ranges{cidr: n, first: binary.BigEndian.Uint32(n.IP.To4()) + 1, size: 1<<(bits-ones) - 2,
		portLo: int32(plo), portHi: int32(phi), cidrText: n.String(), ports: ports, pending: map[string]time.Time{}}
	r.KubernetesIP = r.IP(0)
	return r, nil
}

// CIDR is --service-cluster-ip-range, in canonical form.
func (r *Ranges) CIDR() string { return r.cidrText }

// IP is the range's i-th usable address.
func (r *Ranges) IP(i uint32) string { return nthIP(r.first, i) }

// contains reports whether ip is a usable address of the range (not the
// network or broadcast address).
func (r *Ranges) contains(ip string) bool {
	p := net.ParseIP(ip).To4()
	if p == nil || !r.cidr.Contains(p) {
		return false
	}
	n := binary.BigEndian.Uint32(p)
	return n >= r.first && n < r.first+r.size
}

// Allocation is the admission step that fills a Service's cluster
// IP and node ports (after defaulting, before validation). On update it
// keeps what the Service holds when the new object leaves it out (as
// Kubernetes' patchAllocatedValues does, so that `kobectl replace` of a
// manifest without clusterIP works) and releases what the new type no
// longer needs.
type Allocation struct {
	Ranges *Ranges
	Store  *storage.Store
	// ServiceCIDRs, when set, lists the ranges of the ServiceCIDR objects
	// not being deleted (the default's among them): a cluster IP a Service
	// names may be in any of them, and when the default range is full the
	// others are allocated from, in the order given (kube-apiserver's
	// MultiCIDRServiceAllocator).
	ServiceCIDRs func(ctx context.Context) ([]netip.Prefix, error)
}

// extra is the ranges of ServiceCIDRs other than the default range.
func (a Allocation) extra(ctx context.Context) ([]netip.Prefix, error) {
	if a.ServiceCIDRs == nil {
		return nil, nil
	}
	all, err := a.ServiceCIDRs(ctx)
	if err != nil {
		return nil, status.Errorf(codes.Unavailable, "list the ServiceCIDRs: %v", err)
	}
	var out []netip.Prefix
	for _, p := range all {
		if p.String() != a.Ranges.cidrText && p.Addr().Is4() && p.Bits() <= 30 {
			out = append(out, p)
		}
	}
	return out, nil
}

// usable reports whether ip is an address of p other than its network and
// broadcast addresses.
func usable(p netip.Prefix, ip string) bool {
	addr, err := netip.ParseAddr(ip)
	if err != nil || !p.Contains(addr) {
		return false
	}
	first, size := bounds(p)
	n := binary.BigEndian.Uint32(addr.AsSlice())
	return n >= first && n < first+size
}

// bounds is p's first usable address (the network address + 1) and how
// many usable addresses it has.
func bounds(p netip.Prefix) (first, size uint32) {
	b := p.Masked().Addr().As4()
	return binary.BigEndian.Uint32(b[:]) + 1, 1<<(32-p.Bits()) - 2
}

func nthIP(first, i uint32) string {
	b := make([]byte, 4)
	binary.BigEndian.PutUint32(b, first+i)
	return net.IP(b).String()
}

// Name implements admission.Mutator.
func (Allocation) Name() string { return "ServiceAllocation" }

// Admit implements admission.Mutator.
func (a Allocation) Admit(ctx context.Context, at *admission.Attributes) error {
	s, ok := at.Object.(*core.Service)
	if !ok {
		return nil
	}
	var old *core.Service
	if at.OldObject != nil {
		old = at.OldObject.(*core.Service)
	}
	holder := storage.Key("services", s.Namespace, s.Name)
	var errs v.ErrorList
	sp := v.NewPath("spec")
	needsIP := s.Spec.Type != core.ServiceTypeExternalName
	switch {
	case !needsIP:
		s.Spec.ClusterIP, s.Spec.ClusterIPs = "", nil
		if s.Spec.Type == core.ServiceTypeExternalName {
			s.Spec.IPFamilies, s.Spec.IPFamilyPolicy, s.Spec.InternalTrafficPolicy = nil, nil, nil
		}
	case s.Spec.ClusterIP == "" && old != nil && old.Spec.ClusterIP != "" && old.Spec.Type != core.ServiceTypeExternalName:
		s.Spec.ClusterIP, s.Spec.ClusterIPs = old.Spec.ClusterIP, old.Spec.ClusterIPs
	case s.Spec.ClusterIP == core.ClusterIPNone:
		s.Spec.ClusterIPs = []string{core.ClusterIPNone}
	case s.Spec.ClusterIP == "":
		ip, err := a.pickIP(ctx)
		if err != nil {
			return err
		}
		s.Spec.ClusterIP, s.Spec.ClusterIPs = ip, []string{ip}
	default:
		s.Spec.ClusterIPs = []string{s.Spec.ClusterIP}
		if old == nil || old.Spec.ClusterIP != s.Spec.ClusterIP {
			path := sp.Child("clusterIPs").Index(0)
			inRange := a.Ranges.contains(s.Spec.ClusterIP)
			var valid []string
			if !inRange && net.ParseIP(s.Spec.ClusterIP) != nil {
				extra, err := a.extra(ctx)
				if err != nil {
					return err
				}
				valid = append(valid, a.Ranges.cidrText)
				for _, p := range extra {
					inRange = inRange || usable(p, s.Spec.ClusterIP)
					valid = append(valid, p.String())
				}
			}
			if net.ParseIP(s.Spec.ClusterIP) != nil && !inRange {
				errs = append(errs, v.NewInvalid(path, s.Spec.ClusterIP, fmt.Sprintf("provided IP is not in the valid range. The range of valid IPs is %s", strings.Join(valid, ", "))))
			} else if h, err := a.Store.Holder(ctx, IPClaim(s.Spec.ClusterIP)); err == nil && h != "" && h != holder {
				errs = append(errs, v.NewInvalid(path, s.Spec.ClusterIP, "provided IP is already allocated"))
			}
		}
	}
	if !s.Spec.HasNodePorts() {
		// No longer on node ports (another type, or a LoadBalancer
		// without them): the ones it had are released. One named anew is
		// refused: Kobune allocates a node port only with the others.
		for i := range s.Spec.Ports {
			p := &s.Spec.Ports[i]
			if p.NodePort != 0 && old != nil && old.Spec.HasNodePorts() && hadNodePort(old, p.NodePort) {
				p.NodePort = 0
			} else if p.NodePort != 0 && s.Spec.Type == core.ServiceTypeLoadBalancer { // other types: ValidateService says why
				errs = append(errs, v.NewForbidden(sp.Child("ports").Index(i).Child("nodePort"),
					"may not be used when `allocateLoadBalancerNodePorts` is false (Kobune allocates node ports for all of a Service's ports or none)"))
			}
		}
	} else {
		errs = append(errs, a.nodePorts(ctx, s, old, holder)...)
	}
	if len(errs) > 0 {
		return status.Error(codes.InvalidArgument, fmt.Sprintf("Service %q is invalid: %v", s.Name, errs.ToError()))
	}
	return nil
}

// hadNodePort: the old Service had node port n.
func hadNodePort(old *core.Service, n int32) bool {
	for _, p := range old.Spec.Ports {
		if p.NodePort == n {
			return true
		}
	}
	return false
}

// nodePorts keeps old node ports where the new object names none, checks
// the named ones and picks free ones for the rest.
func (a Allocation) nodePorts(ctx context.Context, s, old *core.Service, holder string) v.ErrorList {
	var errs v.ErrorList
	used := map[int32]bool{}
	for i := range s.Spec.Ports {
		p := &s.Spec.Ports[i]
		if p.NodePort == 0 && old != nil && old.Spec.HasNodePorts() {
			for _, op := range old.Spec.Ports {
				if op.Port == p.Port && op.Protocol == p.Protocol {
					p.NodePort = op.NodePort
				}
			}
		}
		if p.NodePort == 0 {
			continue
		}
		used[p.NodePort] = true
		path := v.NewPath("spec", "ports").Index(i).Child("nodePort")
		if p.NodePort < a.Ranges.portLo || p.NodePort > a.Ranges.portHi {
			errs = append(errs, v.NewInvalid(path, p.NodePort, fmt.Sprintf("provided port is not in the valid range. The range of valid ports is %s", a.Ranges.ports)))
		} else if h, err := a.Store.Holder(ctx, NodePortClaim(p.NodePort)); err == nil && h != "" && h != holder {
			errs = append(errs, v.NewInvalid(path, p.NodePort, "provided port is already allocated"))
		}
	}
	for i := range s.Spec.Ports {
		p := &s.Spec.Ports[i]
		if p.NodePort != 0 {
			continue
		}
		// One node port serves a port number over TCP and UDP alike.
		for _, q := range s.Spec.Ports[:i] {
			if q.Port == p.Port && q.NodePort != 0 {
				p.NodePort = q.NodePort
			}
		}
		if p.NodePort != 0 {
			continue
		}
		port, err := a.pickPort(ctx, used)
		if err != nil {
			errs = append(errs, v.NewInvalid(v.NewPath("spec", "ports").Index(i).Child("nodePort"), 0, err.Error()))
			continue
		}
		p.NodePort, used[port] = port, true
	}
	return errs
}

// pickIP chooses a free address at random (as Kubernetes does), skipping
// the first (the kubernetes Service's) and those picked by creates still
// in flight here; the transaction that stores the Service decides.
func (a Allocation) pickIP(ctx context.Context) (string, error) {
	r := a.Ranges
	for range 64 {
		ip := r.IP(1 + rand.Uint32N(r.size-1))
		if ip == r.IP(DNSOffset) {
			continue // the kube-dns Service's
		}
		if ok, err := a.tryPick(ctx, IPClaim(ip)); err != nil {
			return "", err
		} else if ok {
			return ip, nil
		}
	}
	taken, err := a.Store.Claims(ctx, "services/ip/")
	if err != nil {
		return "", status.Errorf(codes.Unavailable, "list allocated service IPs: %v", err)
	}
	for i := uint32(1); i < r.size; i++ {
		if i == DNSOffset {
			continue
		}
		ip := r.IP(i)
		if _, held := taken[IPClaim(ip)]; !held && a.reserve(IPClaim(ip)) {
			return ip, nil
		}
	}
	// The default range is full: the other ServiceCIDRs, in turn.
	extra, err := a.extra(ctx)
	if err != nil {
		return "", err
	}
	ranges := []string{fmt.Sprintf("%s has %d addresses", r.cidrText, r.size)}
	for _, p := range extra {
		first, size := bounds(p)
		for range 16 {
			ip := nthIP(first, rand.Uint32N(size))
			if _, held := taken[IPClaim(ip)]; !held {
				if ok, err := a.tryPick(ctx, IPClaim(ip)); err != nil {
					return "", err
				} else if ok {
					return ip, nil
				}
			}
		}
		for i := range size {
			ip := nthIP(first, i)
			if _, held := taken[IPClaim(ip)]; !held && a.reserve(IPClaim(ip)) {
				return ip, nil
			}
		}
		ranges = append(ranges, fmt.Sprintf("%s has %d", p, size))
	}
	return "", status.Errorf(codes.ResourceExhausted, "Internal error occurred: failed to allocate a serviceIP: range is full (%s)", strings.Join(ranges, "; "))
}

func (a Allocation) pickPort(ctx context.Context, used map[int32]bool) (int32, error) {
	r := a.Ranges
	n := r.portHi - r.portLo + 1
	for range 64 {
		p := r.portLo + rand.Int32N(n)
		if used[p] {
			continue
		}
		if ok, err := a.tryPick(ctx, NodePortClaim(p)); err != nil {
			return 0, err
		} else if ok {
			return p, nil
		}
	}
	taken, err := a.Store.Claims(ctx, "services/nodeport/")
	if err != nil {
		return 0, err
	}
	for p := r.portLo; p <= r.portHi; p++ {
		if _, held := taken[NodePortClaim(p)]; !held && !used[p] && a.reserve(NodePortClaim(p)) {
			return p, nil
		}
	}
	return 0, fmt.Errorf("failed to allocate a nodePort: range %s is full", r.ports)
}

func (a Allocation) tryPick(ctx context.Context, claim string) (bool, error) {
	h, err := a.Store.Holder(ctx, claim)
	if err != nil {
		return false, status.Errorf(codes.Unavailable, "read %s: %v", claim, err)
	}
	return h == "" && a.reserve(claim), nil
}

// reserve keeps a picked claim from this server's other creates for a few
// seconds, until the create that picked it has written (or failed).
func (a Allocation) reserve(claim string) bool {
	r := a.Ranges
	r.pendingMu.Lock()
	defer r.pendingMu.Unlock()
	now := time.Now()
	for c, at := range r.pending {
		if now.Sub(at) > 10*time.Second {
			delete(r.pending, c)
		}
	}
	if _, ok := r.pending[claim]; ok {
		return false
	}
	r.pending[claim] = now
	return true
}
