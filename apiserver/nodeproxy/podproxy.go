package nodeproxy

import (
	"context"
	"crypto/tls"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/apiserver/registry"
	"github.com/kobune/kobune/apiserver/request"
)

// pods/NAME/proxy and services/NAME/proxy: the API server relays an HTTP
// request to a pod, or to a ready endpoint of a Service, itself — not
// through the node — as kube-apiserver does (the ResourceLocation of its
// pod and service storage). NAME is [scheme:]name[:port]: scheme http
// (the default) or https (the pod's certificate is not checked), port a
// number for a pod (its first declared port when absent), a Service
// port's name or number for a Service.

// Locate is where a pods/proxy or services/proxy request goes: the
// scheme and host:port of the pod, or of a ready endpoint of the Service
// that is a pod's address (chosen at random).
func (s *Proxy) Locate(ctx context.Context, namespace, resource, id string) (*url.URL, error) {
	sch, name, port, ok := request.SplitSchemeNamePort(id)
	if !ok {
		return nil, status.Errorf(codes.FailedPrecondition, "invalid %s request %q: want [http|https:]name[:port]", resource, id)
	}
	if sch == "" {
		sch = "http"
	}
	var host string
	var err error
	if resource == "pods" {
		host, err = s.podHost(ctx, namespace, name, port)
	} else {
		host, err = s.serviceHost(ctx, namespace, name, port)
	}
	if err != nil {
		return nil, err
	}
	return &url.URL{Scheme: sch, Host: host}, nil
}

func (s *Proxy) podHost(ctx context.Context, namespace, name, port string) (string, error) {
	pod, err := registry.GetStored[*core.Pod](ctx, s.store, "pods", namespace, name)
	if err != nil {
		return "", err
	}
	if port == "" {
		for _, c := range pod.Spec.Containers {
			if len(c.Ports) > 0 {
				port = strconv.Itoa(int(c.Ports[0].ContainerPort))
				break
			}
		}
	}
	if err := proxyableIP(pod.Status.PodIP); err != nil {
		return "", status.Errorf(status.Code(err), "pod %s: %s", name, status.Convert(err).Message())
	}
	if port == "" {
		return pod.Status.PodIP, nil
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return "", status.Errorf(codes.FailedPrecondition, "pod %s: port %q is no port number", name, port)
	}
	return net.JoinHostPort(pod.Status.PodIP, port), nil
}

// serviceHost picks a ready endpoint of the Service's port (by name, or
// the name of the Service port with that number) whose address is the IP
// of the pod it names: an Endpoints object cannot send the API server
// anywhere else.
func (s *Proxy) serviceHost(ctx context.Context, namespace, name, port string) (string, error) {
	if n, err := strconv.Atoi(port); err == nil {
		svc, err := registry.GetStored[*core.Service](ctx, s.store, "services", namespace, name)
		if err != nil {
			return "", err
		}
		found := false
		for _, p := range svc.Spec.Ports {
			if int(p.Port) == n {
				port, found = p.Name, true
				break
			}
		}
		if !found {
			return "", status.Errorf(codes.Unavailable, "no service port %d found for service %q", n, name)
		}
	}
	eps, err := registry.GetStored[*core.Endpoints](ctx, s.store, "endpoints", namespace, name)
	if err != nil {
		if status.Code(err) == codes.NotFound {
			return "", status.Errorf(codes.Unavailable, "no endpoints available for service %q", name)
		}
		return "", err
	}
	for _, si := range rand.Perm(len(eps.Subsets)) {
		ss := eps.Subsets[si]
		for _, p := range ss.Ports {
			if p.Name != port {
				continue
			}
			for _, ai := range rand.Perm(len(ss.Addresses)) {
				a := ss.Addresses[ai]
				if s.isPodAddress(ctx, namespace, a) && proxyableIP(a.IP) == nil {
					return net.JoinHostPort(a.IP, strconv.Itoa(int(p.Port))), nil
				}
			}
		}
	}
	return "", status.Errorf(codes.Unavailable, "no endpoints available for service %q", name)
}

// isPodAddress: the address names a pod that has that IP.
func (s *Proxy) isPodAddress(ctx context.Context, namespace string, a core.EndpointAddress) bool {
	r := a.TargetRef
	if r == nil || r.Kind != "Pod" {
		return false
	}
	ns := r.Namespace
	if ns == "" {
		ns = namespace
	}
	pod, err := registry.GetStored[*core.Pod](ctx, s.store, "pods", ns, r.Name)
	if err != nil {
		return false
	}
	for _, ip := range pod.Status.PodIPs {
		if ip.IP == a.IP {
			return true
		}
	}
	return pod.Status.PodIP == a.IP
}

// proxyableIP refuses what kube-apiserver refuses to proxy to: no
// address, loopback and link-local ones (the API server's own machine and
// a cloud's metadata service are not a pod).
func proxyableIP(s string) error {
	ip := net.ParseIP(s)
	switch {
	case ip == nil:
		return errNoAddress
	case ip.IsLoopback(), ip.IsLinkLocalUnicast(), ip.IsLinkLocalMulticast(), ip.IsInterfaceLocalMulticast(), ip.IsUnspecified():
		return errAddressNotAllowed
	}
	return nil
}

var (
	errNoAddress         = status.Error(codes.Unavailable, "the pod has no IP address yet (it is not running: kobectl describe pod)")
	errAddressNotAllowed = status.Error(codes.FailedPrecondition, "address not allowed") // a 400, as in Kubernetes
)

// Transport is how the API server sends a proxied request to a pod: dial
// (nil: the network) reaches host:port, an https pod's certificate is not
// checked, and a pod that does not answer within 30 s fails the request.
func Transport(dial func(ctx context.Context, network, addr string) (net.Conn, error)) *http.Transport {
	if dial == nil {
		dial = (&net.Dialer{Timeout: 10 * time.Second}).DialContext
	}
	return &http.Transport{DialContext: dial, TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // as kube-apiserver's pod proxy
		ResponseHeaderTimeout: 30 * time.Second, MaxIdleConnsPerHost: 2, IdleConnTimeout: 30 * time.Second, ForceAttemptHTTP2: false}
}
