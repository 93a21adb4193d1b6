package apiserver

import (
	"context"
	"fmt"
	"net"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/api/networking"
	"github.com/kobune/kobune/api/scheme"
	"github.com/kobune/kobune/apiserver/registry"
	"github.com/kobune/kobune/apiserver/servicealloc"
	"github.com/kobune/kobune/apiserver/storage"
)

// systemServices keeps the Services every cluster has — kubernetes (the
// API server itself) and kube-dns — and the Service allocations repaired,
// as kube-apiserver's bootstrap controllers do
// (pkg/controlplane/controller/kubernetesservice).
type systemServices struct {
	cfg       Config
	registry  *registry.Registry
	store     *storage.Store
	ranges    *servicealloc.Ranges
	listeners []net.Listener
}

// run repeats housekeeping every interval until ctx ends.
func (s *systemServices) run(ctx context.Context, interval time.Duration) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(interval):
		}
		s.housekeeping(ctx)
	}
}

// housekeeping repairs the allocations and makes sure the kubernetes and
// kube-dns Services exist; failures are logged and tried again later.
func (s *systemServices) housekeeping(ctx context.Context) {
	if n, err := servicealloc.Repair(ctx, s.store, s.cfg.Logf); err != nil && ctx.Err() == nil {
		s.cfg.Logf("service allocation repair: %v (trying again in %v)", err, s.cfg.ServiceRepairInterval)
	} else if n > 0 {
		s.cfg.Logf("service allocation repair: fixed %d claims", n)
	}
	if err := s.ensureDefaultServiceCIDR(ctx); err != nil && ctx.Err() == nil {
		s.cfg.Logf("%v (trying again in %v)", err, s.cfg.ServiceRepairInterval)
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
const DNSServiceOffset = servicealloc.DNSOffset

// ensureDNSService creates kube-system/kube-dns, the cluster DNS Service
// pods' resolv.conf names. It has no selector: every kobune-agent serves
// DNS itself and publishes its own address as an endpoint, and
// internalTrafficPolicy Local sends each pod's questions to its own
// node's agent (node-local DNS, without a DaemonSet).
func (s *systemServices) ensureDNSService(ctx context.Context) error {
	k, _ := scheme.ByResource("services")
	local := core.TrafficLocal
	svc := &core.Service{ObjectMeta: meta.ObjectMeta{Name: "kube-dns", Namespace: "kube-system",
		Labels: map[string]string{"k8s-app": "kube-dns", "kubernetes.io/name": "CoreDNS"}},
		Spec: core.ServiceSpec{ClusterIP: s.ranges.IP(DNSServiceOffset), InternalTrafficPolicy: &local, Ports: []core.ServicePort{
			{Name: "dns", Protocol: core.ProtocolUDP, Port: 53}, {Name: "dns-tcp", Protocol: core.ProtocolTCP, Port: 53}}}}
	if _, err := s.registry.CreateObject(ctx, k, svc); err != nil && !registry.IsAlreadyExists(err) {
		return fmt.Errorf("create the kube-dns Service (%s): %w", svc.Spec.ClusterIP, err)
	}
	return nil
}

// ensureKubernetesService creates the kubernetes Service in default with
// the range's first address, port 443 (https) to the API server's port,
// and its Endpoints: the advertised addresses of the API servers alive
// (endpointleases.go).
func (s *systemServices) ensureKubernetesService(ctx context.Context) error {
	r := s.ranges
	svcKind, _ := scheme.ByResource("services")
	_, port := s.advertised()
	svc := &core.Service{ObjectMeta: meta.ObjectMeta{Name: "kubernetes", Namespace: "default",
		Labels: map[string]string{"component": "apiserver", "provider": "kubernetes"}},
		Spec: core.ServiceSpec{ClusterIP: r.KubernetesIP, Ports: []core.ServicePort{{Name: "https", Protocol: core.ProtocolTCP, Port: 443, TargetPort: meta.FromInt(port)}}}}
	if _, err := s.registry.CreateObject(ctx, svcKind, svc); err != nil && !registry.IsAlreadyExists(err) {
		return fmt.Errorf("create the kubernetes Service (%s): %w", r.KubernetesIP, err)
	}
	return s.reconcileEndpoints(ctx)
}

// advertised is the address and port other hosts and pods reach this API
// server at: --advertise-address, else the last listen address that is
// neither loopback nor unspecified (the lab's bridge address), else the
// first one's.
func (s *systemServices) advertised() (string, int32) {
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

// ensureDefaultServiceCIDR creates the ServiceCIDR "kubernetes" for
// --service-cluster-ip-range, Ready, with the finalizer that keeps it
// while addresses in it are in use (kube-apiserver's defaultservicecidr
// controller). One that exists is left as it is: if its range differs from
// the flag's, that is said, and the flag's range is still allocated from.
func (s *systemServices) ensureDefaultServiceCIDR(ctx context.Context) error {
	k, _ := scheme.ByResource("servicecidrs")
	have, err := registry.GetStored[*networking.ServiceCIDR](ctx, s.store, "servicecidrs", "", networking.DefaultServiceCIDRName)
	if err == nil {
		if len(have.Spec.CIDRs) != 1 || have.Spec.CIDRs[0] != s.ranges.CIDR() {
			s.cfg.Logf("the default ServiceCIDR has %v, not --service-cluster-ip-range %s: both are allocated from", have.Spec.CIDRs, s.ranges.CIDR())
		}
		if have.DeletionTimestamp != nil || readyCondition(have.Status.Conditions) {
			return nil
		}
	} else if status.Code(err) != codes.NotFound {
		return fmt.Errorf("read the default ServiceCIDR: %w", err)
	} else {
		sc := &networking.ServiceCIDR{ObjectMeta: meta.ObjectMeta{Name: networking.DefaultServiceCIDRName, Finalizers: []string{networking.ServiceCIDRFinalizer}},
			Spec: networking.ServiceCIDRSpec{CIDRs: []string{s.ranges.CIDR()}}}
		b, err := s.registry.CreateObject(ctx, k, sc)
		if err != nil && !registry.IsAlreadyExists(err) {
			return fmt.Errorf("create the default ServiceCIDR (%s): %w", s.ranges.CIDR(), err)
		}
		if err != nil {
			return nil // another API server made it
		}
		o, err := k.Decode(b)
		if err != nil {
			return err
		}
		have = o.(*networking.ServiceCIDR)
	}
	have.Status.Conditions = []meta.Condition{{Type: networking.ServiceCIDRReady, Status: meta.ConditionTrue, Reason: "ServiceCIDRReady",
		Message: "Kubernetes default Service CIDR is ready", LastTransitionTime: meta.Now()}}
	if _, err := s.registry.UpdateObjectStatus(ctx, k, have); err != nil && ctx.Err() == nil {
		return fmt.Errorf("mark the default ServiceCIDR Ready: %w", err)
	}
	return nil
}

func readyCondition(cs []meta.Condition) bool {
	for _, c := range cs {
		if c.Type == networking.ServiceCIDRReady {
			return c.Status == meta.ConditionTrue
		}
	}
	return false
}
