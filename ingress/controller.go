// Package ingress is kobune-ingress, Kobune's ingress controller (what
// ingress-nginx or Traefik is to Kubernetes): it serves the Ingresses of
// its IngressClasses (spec.controller kobune.io/ingress-controller) as an
// HTTP and HTTPS reverse proxy. It is written on Kobune's own client
// library and runs as a DaemonSet on the nodes' host network with a
// ServiceAccount of its own, as third-party controllers do — it holds no
// privilege the API does not give it.
//
// From its informers (Ingresses, IngressClasses, Services, EndpointSlices,
// Secrets) it builds, on every change, an immutable routing table
// (api/networking.BuildRoutes, which `kobectl explain-path ingress/NAME`
// reads too: host and path rules, the default backend, TLS hosts), the ready
// endpoints of every backend and the certificates of the TLS Secrets,
// and swaps it in atomically; requests never wait for the API. A request
// is matched to a backend (404 when nothing matches), sent to one of the
// backend's ready endpoints in turn (503 when there is none; a connection
// refused is retried on the next endpoint, as nginx's proxy_next_upstream
// does, so a pod going away between two table updates loses no request),
// and logged (one access log line per request). HTTPS picks the
// certificate by SNI from the kubernetes.io/tls Secrets the Ingresses
// name. Every served Ingress gets status.loadBalancer set to the
// addresses of the nodes its controller pods run on.
//
// The proxy is Go's net/http/httputil.ReverseProxy: it streams bodies,
// handles hop-by-hop headers, X-Forwarded-* and upgrades (WebSocket), and
// at teaching scale its speed is not what anyone measures; a proxy of its
// own would be more code to read for nothing (docs/ingress.md).
package ingress

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/discovery"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/api/networking"
	"github.com/kobune/kobune/client"
)

// DefaultControllerName is the spec.controller of the IngressClasses
// kobune-ingress serves.
const DefaultControllerName = "kobune.io/ingress-controller"

// Config is what the controller needs.
type Config struct {
	// ControllerName selects the IngressClasses served (DefaultControllerName).
	ControllerName string
	// Namespace and PodSelector find the controller's own pods (the
	// DaemonSet's): the addresses of their nodes go into the served
	// Ingresses' status. Without a selector, PublishAddresses are used.
	Namespace, PodSelector string
	// PublishAddresses are the addresses written into status when no
	// PodSelector is set (a controller outside the cluster, in tests).
	PublishAddresses []string
	Logf             func(format string, args ...any)
	// AccessLog receives one line per request (nil: Logf).
	AccessLog func(line string)
}

// Controller serves the Ingresses.
type Controller struct {
	cfg     Config
	c       *client.Client
	metrics *Metrics

	ingresses *client.Informer[*networking.Ingress]
	classes   *client.Informer[*networking.IngressClass]
	services  *client.Informer[*core.Service]
	slices    *client.Informer[*discovery.EndpointSlice]
	secrets   *client.Informer[*core.Secret]
	pods      *client.Informer[*core.Pod]
	nodes     *client.Informer[*core.Node]

	state  atomic.Pointer[state]
	dirty  chan struct{}
	certMu sync.Mutex
	certs  map[string]cachedCert // namespace/secret → parsed, by resourceVersion
	// next is each backend's round-robin counter.
	next      sync.Map // backend key → *atomic.Uint64
	transport *http.Transport
	proxy     http.Handler
	fallback  *tls.Certificate // served when no Ingress names the host
}

// state is what requests read: built whole on every change.
type state struct {
	table *networking.Routes
	// endpoints: Backend.String() → ready "ip:port"s.
	endpoints map[string][]string
	// certs: TLS host (exact or *.domain) → certificate.
	certs map[string]*tls.Certificate
	// served are the Ingresses in the table (namespace/name).
	served []*networking.Ingress
}

type cachedCert struct {
	version string
	cert    *tls.Certificate
	err     error
}

// New returns a controller on c.
func New(cfg Config, c *client.Client, m *Metrics) (*Controller, error) {
	if cfg.ControllerName == "" {
		cfg.ControllerName = DefaultControllerName
	}
	if cfg.Logf == nil {
		cfg.Logf = func(string, ...any) {}
	}
	if cfg.AccessLog == nil {
		cfg.AccessLog = func(l string) { cfg.Logf("%s", l) }
	}
	fallback, err := selfSigned("kobune-ingress default certificate")
	if err != nil {
		return nil, err
	}
	ic := &Controller{cfg: cfg, c: c, metrics: m, dirty: make(chan struct{}, 1), certs: map[string]cachedCert{}, fallback: fallback,
		transport: &http.Transport{
			DialContext:         (&net.Dialer{Timeout: 2 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
			MaxIdleConnsPerHost: 64, IdleConnTimeout: 60 * time.Second, ForceAttemptHTTP2: false,
		}}
	ic.proxy = newProxy(ic.transport, m)
	ic.ingresses = client.NewInformer(client.For[*networking.Ingress](c), "", client.ListOptions{})
	ic.classes = client.NewInformer(client.For[*networking.IngressClass](c), "", client.ListOptions{})
	ic.services = client.NewInformer(client.For[*core.Service](c), "", client.ListOptions{})
	ic.slices = client.NewInformer(client.For[*discovery.EndpointSlice](c), "", client.ListOptions{})
	ic.secrets = client.NewInformer(client.For[*core.Secret](c), "", client.ListOptions{})
	if cfg.PodSelector != "" {
		ic.pods = client.NewInformer(client.For[*core.Pod](c), cfg.Namespace, client.ListOptions{LabelSelector: cfg.PodSelector})
		ic.nodes = client.NewInformer(client.For[*core.Node](c), "", client.ListOptions{})
	}
	ic.state.Store(&state{table: networking.BuildRoutes(nil), endpoints: map[string][]string{}, certs: map[string]*tls.Certificate{}})
	return ic, nil
}

// Run runs the informers and rebuilds the state on every change until ctx
// ends. Ready reports whether the first state is built.
func (ic *Controller) Run(ctx context.Context) {
	mark := func() {
		select {
		case ic.dirty <- struct{}{}:
		default:
		}
	}
	synced := []func() bool{}
	runInf := func(run func(context.Context), has func() bool) {
		go run(ctx)
		synced = append(synced, has)
	}
	addHandler(ic.ingresses, mark)
	addHandler(ic.classes, mark)
	addHandler(ic.services, mark)
	addHandler(ic.slices, mark)
	addHandler(ic.secrets, mark)
	runInf(ic.ingresses.Run, ic.ingresses.HasSynced)
	runInf(ic.classes.Run, ic.classes.HasSynced)
	runInf(ic.services.Run, ic.services.HasSynced)
	runInf(ic.slices.Run, ic.slices.HasSynced)
	runInf(ic.secrets.Run, ic.secrets.HasSynced)
	if ic.pods != nil {
		addHandler(ic.pods, mark)
		addHandler(ic.nodes, mark)
		runInf(ic.pods.Run, ic.pods.HasSynced)
		runInf(ic.nodes.Run, ic.nodes.HasSynced)
	}
	if !client.WaitForSync(ctx, synced...) {
		return
	}
	mark()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ic.dirty:
		}
		ic.rebuild(ctx)
		// Coalesce bursts (a rollout changes slices many times a second).
		select {
		case <-ctx.Done():
			return
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// Synced reports whether the first table is in place.
func (ic *Controller) Synced() bool { return ic.state.Load().served != nil }

func addHandler[T meta.Object](inf *client.Informer[T], mark func()) {
	inf.AddHandler(client.Handler[T]{OnAdd: func(T) { mark() }, OnUpdate: func(_, _ T) { mark() }, OnDelete: func(T) { mark() }})
}

// rebuild computes the state from the caches, swaps it in and brings the
// served Ingresses' status up to date.
func (ic *Controller) rebuild(ctx context.Context) {
	served := ic.servedIngresses()
	t := networking.BuildRoutes(served)
	st := &state{table: t, endpoints: map[string][]string{}, certs: map[string]*tls.Certificate{}, served: served}
	if st.served == nil {
		st.served = []*networking.Ingress{}
	}
	for _, b := range t.Backends() {
		st.endpoints[b.String()] = ic.readyEndpoints(b)
	}
	for host, secret := range t.TLS {
		cert, fresh, err := ic.certificate(secret)
		if err != nil {
			if fresh { // said once per version of the Secret, not on every rebuild
				ic.cfg.Logf("TLS for host %s: secret %s: %v (serving the default certificate)", host, secret, err)
			}
			continue
		}
		st.certs[host] = cert
	}
	ic.state.Store(st)
	if ic.metrics != nil {
		ic.metrics.Ingresses.Set(float64(len(served)))
	}
	ic.updateStatus(ctx, served)
}

// servedIngresses are the Ingresses of this controller's classes: their
// ingressClassName names an IngressClass whose controller is ours, or they
// name none and one of ours is the default class.
func (ic *Controller) servedIngresses() []*networking.Ingress {
	ours, defaultOurs := map[string]bool{}, false
	for _, cl := range ic.classes.List() {
		if cl.Spec.Controller == ic.cfg.ControllerName {
			ours[cl.Name] = true
			if cl.Annotations[networking.DefaultClassAnnotation] == "true" {
				defaultOurs = true
			}
		}
	}
	var out []*networking.Ingress
	for _, in := range ic.ingresses.List() {
		if in.DeletionTimestamp != nil {
			continue
		}
		if c := in.Spec.IngressClassName; (c != nil && ours[*c]) || (c == nil && defaultOurs) {
			out = append(out, in)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Namespace+"/"+out[i].Name < out[j].Namespace+"/"+out[j].Name })
	return out
}

// readyEndpoints are "ip:port" of the backend's ready endpoints: the
// Service port the backend names (by number or name), then that port's
// number in each EndpointSlice of the Service.
func (ic *Controller) readyEndpoints(b networking.RouteBackend) []string {
	svc, ok := ic.services.Get(b.Namespace, b.Service)
	if !ok {
		return nil
	}
	var portName string
	found := false
	for _, p := range svc.Spec.Ports {
		if (b.Port.Name != "" && p.Name == b.Port.Name) || (b.Port.Name == "" && p.Port == b.Port.Number) {
			portName, found = p.Name, true
		}
	}
	if !found {
		return nil
	}
	var out []string
	seen := map[string]bool{}
	for _, s := range ic.slices.ByIndex(client.IndexNamespace, b.Namespace) {
		if s.Labels[discovery.LabelServiceName] != b.Service {
			continue
		}
		var port int32
		for _, p := range s.Ports {
			if p.Port != nil && ((p.Name == nil && portName == "") || (p.Name != nil && *p.Name == portName)) {
				port = *p.Port
			}
		}
		if port == 0 {
			continue
		}
		for _, e := range s.Endpoints {
			if e.Conditions.Ready != nil && !*e.Conditions.Ready {
				continue
			}
			for _, a := range e.Addresses {
				hp := net.JoinHostPort(a, fmt.Sprint(port))
				if !seen[hp] {
					seen[hp] = true
					out = append(out, hp)
				}
			}
		}
	}
	sort.Strings(out)
	return out
}

// updateStatus writes status.loadBalancer.ingress of each served Ingress
// when it differs from the addresses it should have. Every replica
// computes the same list, so they agree without electing a leader.
func (ic *Controller) updateStatus(ctx context.Context, served []*networking.Ingress) {
	addrs := ic.publishAddresses()
	if len(addrs) == 0 {
		return
	}
	want := make([]networking.IngressLoadBalancerIngress, len(addrs))
	for i, a := range addrs {
		want[i] = networking.IngressLoadBalancerIngress{IP: a}
	}
	for _, in := range served {
		if sameLB(in.Status.LoadBalancer.Ingress, want) {
			continue
		}
		cp := *in
		cp.Status.LoadBalancer.Ingress = want
		if _, err := client.For[*networking.Ingress](ic.c).UpdateStatus(ctx, &cp); err != nil && !client.IsConflict(err) && !client.IsNotFound(err) {
			ic.cfg.Logf("status of ingress %s/%s: %s", in.Namespace, in.Name, client.Message(err))
		}
	}
}

// publishAddresses are the InternalIPs of the nodes running a ready
// controller pod, sorted (or the configured ones).
func (ic *Controller) publishAddresses() []string {
	if ic.pods == nil {
		return ic.cfg.PublishAddresses
	}
	seen := map[string]bool{}
	var out []string
	for _, p := range ic.pods.List() {
		if p.Spec.NodeName == "" || !core.PodIsReady(p) {
			continue
		}
		n, ok := ic.nodes.Get("", p.Spec.NodeName)
		if !ok {
			continue
		}
		for _, a := range n.Status.Addresses {
			if a.Type == "InternalIP" && !seen[a.Address] {
				seen[a.Address] = true
				out = append(out, a.Address)
			}
		}
	}
	sort.Strings(out)
	return out
}

func sameLB(a, b []networking.IngressLoadBalancerIngress) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// certificate parses a kubernetes.io/tls Secret, cached by its
// resourceVersion; fresh says it was parsed now (not taken from the
// cache).
func (ic *Controller) certificate(key string) (cert *tls.Certificate, fresh bool, err error) {
	ns, name, _ := strings.Cut(key, "/")
	s, ok := ic.secrets.Get(ns, name)
	ic.certMu.Lock()
	defer ic.certMu.Unlock()
	if !ok {
		c, seen := ic.certs[key]
		ic.certs[key] = cachedCert{err: errors.New("not found")}
		return nil, !seen || c.err == nil || c.version != "", errors.New("not found")
	}
	if c, ok := ic.certs[key]; ok && c.version == s.ResourceVersion && s.ResourceVersion != "" {
		return c.cert, false, c.err
	}
	err = fmt.Errorf("type %q, want kubernetes.io/tls", s.Type)
	if s.Type == "kubernetes.io/tls" {
		var c tls.Certificate
		c, err = tls.X509KeyPair(s.Data["tls.crt"], s.Data["tls.key"])
		if err == nil {
			cert = &c
		}
	}
	ic.certs[key] = cachedCert{version: s.ResourceVersion, cert: cert, err: err}
	return cert, true, err
}

// GetCertificate picks the certificate for a TLS handshake by SNI: the
// host's own, else its wildcard's, else the default (self-signed) one.
func (ic *Controller) GetCertificate(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
	st := ic.state.Load()
	name := strings.ToLower(hello.ServerName)
	if c, ok := st.certs[name]; ok {
		return c, nil
	}
	if i := strings.IndexByte(name, '.'); i > 0 {
		if c, ok := st.certs["*"+name[i:]]; ok {
			return c, nil
		}
	}
	return ic.fallback, nil
}
