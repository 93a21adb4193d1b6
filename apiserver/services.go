package apiserver

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/discovery"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/api/scheme"
	v "github.com/kobune/kobune/api/validation"
	"github.com/kobune/kobune/apiserver/admission"
	"github.com/kobune/kobune/apiserver/registry"
	"github.com/kobune/kobune/apiserver/servicealloc"
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
// addresses as IPAddress objects the same way. repairServiceClaims
// re-derives the claims from the Services at start and every few minutes.

// serviceRanges are the cluster IP and node port ranges.
type serviceRanges struct {
	cidr             *net.IPNet
	first, size      uint32 // first usable address (network + 1) and how many
	portLo, portHi   int32
	cidrText, ports  string
	pendingMu        sync.Mutex
	pending          map[string]time.Time // claims picked by creates in flight here
	kubernetesIP     string               // the first address: the kubernetes Service
	kubernetesTarget int32
}

func parseServiceRanges(cidr, ports string) (*serviceRanges, error) {
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
	r := &serviceRanges{cidr: n, first: binary.BigEndian.Uint32(n.IP.To4()) + 1, size: 1<<(bits-ones) - 2,
		portLo: int32(plo), portHi: int32(phi), cidrText: n.String(), ports: ports, pending: map[string]time.Time{}}
	r.kubernetesIP = r.ip(0)
	return r, nil
}

func (r *serviceRanges) ip(i uint32) string {
	b := make([]byte, 4)
	binary.BigEndian.PutUint32(b, r.first+i)
	return net.IP(b).String()
}

// contains reports whether ip is a usable address of the range (not the
// network or broadcast address).
func (r *serviceRanges) contains(ip string) bool {
	p := net.ParseIP(ip).To4()
	if p == nil || !r.cidr.Contains(p) {
		return false
	}
	n := binary.BigEndian.Uint32(p)
	return n >= r.first && n < r.first+r.size
}

// serviceAllocation is the admission step that fills a Service's cluster
// IP and node ports (after defaulting, before validation). On update it
// keeps what the Service holds when the new object leaves it out (as
// Kubernetes' patchAllocatedValues does, so that `kobectl replace` of a
// manifest without clusterIP works) and releases what the new type no
// longer needs.
type serviceAllocation struct {
	ranges *serviceRanges
	store  *storage.Store
}

// Name implements admission.Mutator.
func (serviceAllocation) Name() string { return "ServiceAllocation" }

// Admit implements admission.Mutator.
func (a serviceAllocation) Admit(ctx context.Context, at *admission.Attributes) error {
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
	needsIP := s.Spec.Type == core.ServiceTypeClusterIP || s.Spec.Type == core.ServiceTypeNodePort
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
			if net.ParseIP(s.Spec.ClusterIP) != nil && !a.ranges.contains(s.Spec.ClusterIP) {
				errs = append(errs, v.NewInvalid(path, s.Spec.ClusterIP, fmt.Sprintf("provided IP is not in the valid range. The range of valid IPs is %s", a.ranges.cidrText)))
			} else if h, err := a.store.Holder(ctx, servicealloc.IPClaim(s.Spec.ClusterIP)); err == nil && h != "" && h != holder {
				errs = append(errs, v.NewInvalid(path, s.Spec.ClusterIP, "provided IP is already allocated"))
			}
		}
	}
	if s.Spec.Type != core.ServiceTypeNodePort {
		for i := range s.Spec.Ports {
			if old != nil && old.Spec.Type == core.ServiceTypeNodePort {
				s.Spec.Ports[i].NodePort = 0 // no longer a NodePort: released
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

// nodePorts keeps old node ports where the new object names none, checks
// the named ones and picks free ones for the rest.
func (a serviceAllocation) nodePorts(ctx context.Context, s, old *core.Service, holder string) v.ErrorList {
	var errs v.ErrorList
	used := map[int32]bool{}
	for i := range s.Spec.Ports {
		p := &s.Spec.Ports[i]
		if p.NodePort == 0 && old != nil && old.Spec.Type == core.ServiceTypeNodePort {
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
		if p.NodePort < a.ranges.portLo || p.NodePort > a.ranges.portHi {
			errs = append(errs, v.NewInvalid(path, p.NodePort, fmt.Sprintf("provided port is not in the valid range. The range of valid ports is %s", a.ranges.ports)))
		} else if h, err := a.store.Holder(ctx, servicealloc.NodePortClaim(p.NodePort)); err == nil && h != "" && h != holder {
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
func (a serviceAllocation) pickIP(ctx context.Context) (string, error) {
	r := a.ranges
	for range 64 {
		ip := r.ip(1 + rand.Uint32N(r.size-1))
		if ip == r.ip(DNSServiceOffset) {
			continue // the kube-dns Service's
		}
		if ok, err := a.tryPick(ctx, servicealloc.IPClaim(ip)); err != nil {
			return "", err
		} else if ok {
			return ip, nil
		}
	}
	taken, err := a.store.Claims(ctx, "services/ip/")
	if err != nil {
		return "", status.Errorf(codes.Unavailable, "list allocated service IPs: %v", err)
	}
	for i := uint32(1); i < r.size; i++ {
		if i == DNSServiceOffset {
			continue
		}
		ip := r.ip(i)
		if _, held := taken[servicealloc.IPClaim(ip)]; !held && a.reserve(servicealloc.IPClaim(ip)) {
			return ip, nil
		}
	}
	return "", status.Errorf(codes.ResourceExhausted, "Internal error occurred: failed to allocate a serviceIP: range is full (%s has %d addresses)", r.cidrText, r.size)
}

func (a serviceAllocation) pickPort(ctx context.Context, used map[int32]bool) (int32, error) {
	r := a.ranges
	n := r.portHi - r.portLo + 1
	for range 64 {
		p := r.portLo + rand.Int32N(n)
		if used[p] {
			continue
		}
		if ok, err := a.tryPick(ctx, servicealloc.NodePortClaim(p)); err != nil {
			return 0, err
		} else if ok {
			return p, nil
		}
	}
	taken, err := a.store.Claims(ctx, "services/nodeport/")
	if err != nil {
		return 0, err
	}
	for p := r.portLo; p <= r.portHi; p++ {
		if _, held := taken[servicealloc.NodePortClaim(p)]; !held && !used[p] && a.reserve(servicealloc.NodePortClaim(p)) {
			return p, nil
		}
	}
	return 0, fmt.Errorf("failed to allocate a nodePort: range %s is full", r.ports)
}

func (a serviceAllocation) tryPick(ctx context.Context, claim string) (bool, error) {
	h, err := a.store.Holder(ctx, claim)
	if err != nil {
		return false, status.Errorf(codes.Unavailable, "read %s: %v", claim, err)
	}
	return h == "" && a.reserve(claim), nil
}

// reserve keeps a picked claim from this server's other creates for a few
// seconds, until the create that picked it has written (or failed).
func (a serviceAllocation) reserve(claim string) bool {
	r := a.ranges
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

// repairServiceClaims makes the claims agree with the Services (the job of
// kube-apiserver's repair controllers): a claim whose holder is gone or no
// longer holds it is released, a Service's missing claim is taken. Claims
// are written with their Services, so this finds work only after a crash
// of an older version or a hand edit of etcd; it reports what it fixed.
func (s *Server) repairServiceClaims(ctx context.Context) (fixed int, err error) {
	kvs, _, err := s.store.List(ctx, storage.ListPrefix("services", ""))
	if err != nil {
		return 0, err
	}
	want := map[string]string{} // claim → holder
	for _, kv := range kvs {
		for _, c := range servicealloc.Claims(kv.Value) {
			want[c] = kv.Key
		}
	}
	have, err := s.store.Claims(ctx, "services/")
	if err != nil {
		return 0, err
	}
	for c, holder := range have {
		if want[c] != holder {
			if err := s.store.DropClaim(ctx, c, holder); err != nil {
				return fixed, err
			}
			s.cfg.Logf("service allocation repair: released %s (held by %s, which no longer holds it)", c, strings.TrimPrefix(holder, storage.Prefix))
			fixed++
		}
	}
	for c, holder := range want {
		if have[c] == holder {
			continue
		}
		ok, err := s.store.PutClaim(ctx, c, holder)
		if err != nil {
			return fixed, err
		}
		if ok {
			s.cfg.Logf("service allocation repair: %s is held by %s again", c, strings.TrimPrefix(holder, storage.Prefix))
			fixed++
		} else if h, _ := s.store.Holder(ctx, c); h != holder {
			s.cfg.Logf("service allocation repair: %s and %s both have %s; fix one of them", strings.TrimPrefix(holder, storage.Prefix), strings.TrimPrefix(h, storage.Prefix), c)
		}
	}
	return fixed, nil
}

// runServiceRepair repeats serviceHousekeeping every interval until ctx ends.
func (s *Server) runServiceRepair(ctx context.Context, interval time.Duration) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(interval):
		}
		s.serviceHousekeeping(ctx)
	}
}

// serviceHousekeeping repairs the allocations and makes sure the
// kubernetes Service exists; failures are logged and tried again later.
func (s *Server) serviceHousekeeping(ctx context.Context) {
	if n, err := s.repairServiceClaims(ctx); err != nil && ctx.Err() == nil {
		s.cfg.Logf("service allocation repair: %v (trying again in %v)", err, s.cfg.ServiceRepairInterval)
	} else if n > 0 {
		s.cfg.Logf("service allocation repair: fixed %d claims", n)
	}
	if err := s.ensureKubernetesService(ctx); err != nil && ctx.Err() == nil {
		s.cfg.Logf("%v (trying again in %v)", err, s.cfg.ServiceRepairInterval)
	}
	if err := s.ensureDNSService(ctx); err != nil && ctx.Err() == nil {
		s.cfg.Logf("%v (trying again in %v)", err, s.cfg.ServiceRepairInterval)
	}
}

// DNSServiceOffset is the kube-dns Service's address in the range: the
// tenth, 10.96.0.10 by default, as kubeadm gives it.
const DNSServiceOffset = 9

// ensureDNSService creates kube-system/kube-dns, the cluster DNS Service
// pods' resolv.conf names. It has no selector: every kobune-agent serves
// DNS itself and publishes its own address as an endpoint, and
// internalTrafficPolicy Local sends each pod's questions to its own
// node's agent (node-local DNS, without a DaemonSet).
func (s *Server) ensureDNSService(ctx context.Context) error {
	k, _ := scheme.ByResource("services")
	local := core.TrafficLocal
	svc := &core.Service{ObjectMeta: meta.ObjectMeta{Name: "kube-dns", Namespace: "kube-system",
		Labels: map[string]string{"k8s-app": "kube-dns", "kubernetes.io/name": "CoreDNS"}},
		Spec: core.ServiceSpec{ClusterIP: s.serviceRanges.ip(DNSServiceOffset), InternalTrafficPolicy: &local, Ports: []core.ServicePort{
			{Name: "dns", Protocol: core.ProtocolUDP, Port: 53}, {Name: "dns-tcp", Protocol: core.ProtocolTCP, Port: 53}}}}
	if _, err := s.registry.CreateObject(ctx, k, svc); err != nil && !registry.IsAlreadyExists(err) {
		return fmt.Errorf("create the kube-dns Service (%s): %w", svc.Spec.ClusterIP, err)
	}
	return nil
}

// ensureKubernetesService creates the kubernetes Service in default with
// the range's first address, port 443 (https) to the API server's port,
// and its Endpoints: the API server's advertised address, as
// kube-apiserver does at start.
func (s *Server) ensureKubernetesService(ctx context.Context) error {
	r := s.serviceRanges
	svcKind, _ := scheme.ByResource("services")
	epKind, _ := scheme.ByResource("endpoints")
	ip, port := s.advertised()
	svc := &core.Service{ObjectMeta: meta.ObjectMeta{Name: "kubernetes", Namespace: "default",
		Labels: map[string]string{"component": "apiserver", "provider": "kubernetes"}},
		Spec: core.ServiceSpec{ClusterIP: r.kubernetesIP, Ports: []core.ServicePort{{Name: "https", Protocol: core.ProtocolTCP, Port: 443, TargetPort: meta.FromInt(port)}}}}
	if _, err := s.registry.CreateObject(ctx, svcKind, svc); err != nil && !registry.IsAlreadyExists(err) {
		return fmt.Errorf("create the kubernetes Service (%s): %w", r.kubernetesIP, err)
	}
	ep := &core.Endpoints{ObjectMeta: meta.ObjectMeta{Name: "kubernetes", Namespace: "default",
		Labels: map[string]string{"endpointslice.kubernetes.io/skip-mirror": "true"}},
		Subsets: []core.EndpointSubset{{Addresses: []core.EndpointAddress{{IP: ip}}, Ports: []core.EndpointPort{{Name: "https", Port: port, Protocol: core.ProtocolTCP}}}}}
	if err := s.registry.CreateOrReplace(ctx, epKind, ep); err != nil {
		return fmt.Errorf("the kubernetes Endpoints: %w", err)
	}
	// And its EndpointSlice, which the node proxies follow (kube-apiserver
	// writes both): pods reach the API at https://kubernetes.default.svc.
	sliceKind, _ := scheme.ByResource("endpointslices")
	ready, name, proto := true, "https", core.ProtocolTCP
	slice := &discovery.EndpointSlice{ObjectMeta: meta.ObjectMeta{Name: "kubernetes", Namespace: "default",
		Labels: map[string]string{discovery.LabelServiceName: "kubernetes", discovery.LabelManagedBy: "kobune-apiserver"}},
		AddressType: discovery.AddressTypeIPv4, Endpoints: []discovery.Endpoint{{Addresses: []string{ip}, Conditions: discovery.EndpointConditions{Ready: &ready}}},
		Ports: []discovery.EndpointPort{{Name: &name, Protocol: &proto, Port: &port}}}
	if err := s.registry.CreateOrReplace(ctx, sliceKind, slice); err != nil {
		return fmt.Errorf("the kubernetes EndpointSlice: %w", err)
	}
	return nil
}

// advertised is the address and port other hosts and pods reach this API
// server at: --advertise-address, else the last listen address that is
// neither loopback nor unspecified (the lab's bridge address), else the
// first one's.
func (s *Server) advertised() (string, int32) {
	var host string
	var port int32
	for _, l := range s.listeners {
		a := l.Addr().(*net.TCPAddr)
		if port == 0 {
			host, port = a.IP.String(), int32(a.Port)
		}
		if !a.IP.IsLoopback() && !a.IP.IsUnspecified() {
			host, port = a.IP.String(), int32(a.Port)
		}
	}
	if s.cfg.AdvertiseAddress != "" {
		host = s.cfg.AdvertiseAddress
	}
	if ip := net.ParseIP(host); ip == nil || ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	return host, port
}
