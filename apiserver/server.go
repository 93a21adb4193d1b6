package apiserver

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"github.com/kobune/kobune/apiserver/apiextensions"
	"github.com/kobune/kobune/apiserver/dynamicadmission"
	"log"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/networking"
	"github.com/kobune/kobune/api/node"
	"github.com/kobune/kobune/api/scheduling"
	"github.com/kobune/kobune/api/scheme"
	storagev1 "github.com/kobune/kobune/api/storage"
	"github.com/kobune/kobune/api/version"
	"github.com/kobune/kobune/apiserver/admission"
	"github.com/kobune/kobune/apiserver/audit"
	"github.com/kobune/kobune/apiserver/authentication"
	"github.com/kobune/kobune/apiserver/authorization"
	"github.com/kobune/kobune/apiserver/etcd"
	"github.com/kobune/kobune/apiserver/filters"
	"github.com/kobune/kobune/apiserver/flowcontrol"
	"github.com/kobune/kobune/apiserver/nodeproxy"
	"github.com/kobune/kobune/apiserver/registry"
	"github.com/kobune/kobune/apiserver/servicealloc"
	"github.com/kobune/kobune/apiserver/storage"
)

// Version is the Kobune version the server reports.
const Version = version.Kobune

// Config configures an API server.
type Config struct {
	// Listen is one or more comma-separated gRPC addresses (the lab adds the
	// bridge address so that nodes in network namespaces can reach it).
	Listen string
	// MetricsListen serves /healthz, /readyz and /metrics over HTTP; empty disables it.
	MetricsListen string
	// DataDir holds the embedded etcd's data; ignored with EtcdServers.
	DataDir string
	// EtcdServers, when set, are the URLs of an external etcd cluster;
	// EtcdCAFile, EtcdCertFile and EtcdKeyFile its TLS (https:// servers).
	EtcdServers                           string
	EtcdCAFile, EtcdCertFile, EtcdKeyFile string
	// CompactionInterval is how often history older than one interval is
	// compacted (Kubernetes: 5 minutes).
	CompactionInterval time.Duration
	// DefaultTolerationSeconds is how long new pods tolerate a not-ready or
	// unreachable node before eviction (0: Kubernetes' 300).
	DefaultTolerationSeconds int64
	// BookmarkInterval is how often watches that allow bookmarks get one.
	BookmarkInterval time.Duration
	// MaxRequestsInflight and MaxMutatingRequestsInflight bound the reads
	// and the writes that run at once (kube-apiserver's flags, 400 and 200
	// by default; negative: no limit); MaxWatchesPerUser the watches one
	// user may hold open (2000; negative: no limit). apiserver/inflight.go.
	MaxRequestsInflight, MaxMutatingRequestsInflight, MaxWatchesPerUser int
	// DisablePriorityAndFairness turns API Priority and Fairness off
	// (kube-apiserver's --enable-priority-and-fairness=false): the two
	// in-flight limits then apply as plain limits. With it on (the
	// default), their sum is the seats the priority levels share
	// (apiserver/flowcontrol).
	DisablePriorityAndFairness bool
	// RequestTimeout bounds a request that is not long-running (1 minute,
	// kube-apiserver's --request-timeout): past it the request's context
	// ends, whatever it was doing stops, and the client gets 504.
	// Watches, logs, exec, attach and port-forward are not bounded by it.
	RequestTimeout time.Duration
	// QueueWaitLimit is how long a request may wait in a priority level's
	// queue (a quarter of RequestTimeout, as kube-apiserver's).
	QueueWaitLimit time.Duration
	// EtcdLogLevel is the embedded etcd's log level.
	EtcdLogLevel string
	// EtcdQuotaBytes is etcd's backend quota: the embedded etcd's setting,
	// and what an external one is assumed to have (2 GiB, etcd's default).
	EtcdQuotaBytes int64
	// SpaceCheckInterval is how often etcd's NOSPACE alarm is checked (10 s).
	SpaceCheckInterval time.Duration
	// ServiceClusterIPRange is where Services' cluster IPs come from
	// (10.96.0.0/16; the first address is the kubernetes Service's).
	ServiceClusterIPRange string
	// ServiceNodePortRange is where node ports come from (30000-32767).
	ServiceNodePortRange string
	// AdvertiseAddress is the address the kubernetes Service's endpoint
	// points at ("": the last listen address that is not loopback).
	AdvertiseAddress string
	// EndpointReconcileInterval is how often this API server renews its
	// Lease and writes the kubernetes Service's endpoints from the Leases
	// of all (10 s); EndpointLeaseDuration is how long a Lease not renewed
	// keeps its server there (15 s), as kube-apiserver's lease reconciler.
	EndpointReconcileInterval, EndpointLeaseDuration time.Duration
	// ServiceRepairInterval is how often Service allocations are checked
	// against the Services (3 min, as kube-apiserver's repair loops).
	ServiceRepairInterval time.Duration
	// TLSCertFile and TLSPrivateKeyFile make the API TLS 1.3 only (with
	// the serving certificate); ClientCAFile authenticates clients by
	// their certificates (CN the user, O the groups), and then anonymous
	// callers are refused unless AnonymousAuth.
	TLSCertFile, TLSPrivateKeyFile, ClientCAFile string
	AnonymousAuth                                bool
	// InsecurePlaintext serves the API without TLS — and so without
	// authentication: everyone is anonymous and allowed. Without TLS files
	// the server refuses to start unless it is set (--insecure-plaintext),
	// so nobody runs an open API by leaving a flag out.
	InsecurePlaintext bool
	// AuditPolicyFile and AuditLogPath turn the audit log on
	// (apiserver/audit): an audit.k8s.io/v1 Policy, and the file its
	// events go to ("-": standard output), rotated at AuditLogMaxBytes
	// (100 MiB by default; the old file becomes <path>.1).
	AuditPolicyFile  string
	AuditLogPath     string
	AuditLogMaxBytes int64
	// EncryptionProviderConfig is an EncryptionConfiguration file: which
	// resources are encrypted in etcd, with which keys (apiserver/encryption;
	// "": stored as they are).
	EncryptionProviderConfig string
	// AuthorizationMode is the comma-separated authorizers (AlwaysAllow,
	// Node, RBAC); "" is Node,RBAC with ClientCAFile and AlwaysAllow
	// without. Members of system:masters are always allowed.
	AuthorizationMode string
	// KubeletClientCertFile and KubeletClientKeyFile are the API server's
	// client certificate towards the agents' node API, and
	// KubeletCertificateAuthority the CA their serving certificates must
	// be signed by, for the node's name (kube-apiserver's --kubelet-*
	// flags); without them the node API is dialled in plaintext.
	KubeletClientCertFile, KubeletClientKeyFile, KubeletCertificateAuthority string
	// PodDial is how pods/proxy and services/proxy reach a pod's host:port
	// (nil: the network, as a real server does; tests point it at a local
	// server, since the API server refuses to proxy to loopback addresses).
	PodDial func(ctx context.Context, network, addr string) (net.Conn, error)
	// ServiceAccountSigningKeyFile signs ServiceAccount tokens and
	// ServiceAccountKeyFiles verify them (kube-apiserver's flags; kobectl
	// pki init writes sa.key and sa.pub); ServiceAccountIssuer is their
	// iss ("" DefaultServiceAccountIssuer) and APIAudiences the audiences
	// this server accepts (default: the issuer).
	ServiceAccountSigningKeyFile string
	ServiceAccountKeyFiles       []string
	ServiceAccountIssuer         string
	APIAudiences                 []string
	// Logf logs server events; nil uses the standard logger.
	Logf func(format string, args ...any)
}

func (c *Config) setDefaults() {
	if c.Listen == "" {
		c.Listen = "127.0.0.1:6443"
	}
	if c.DefaultTolerationSeconds == 0 {
		c.DefaultTolerationSeconds = 300
	}
	if c.CompactionInterval == 0 {
		c.CompactionInterval = 5 * time.Minute
	}
	if c.RequestTimeout == 0 {
		c.RequestTimeout = time.Minute
	}
	if c.QueueWaitLimit == 0 {
		c.QueueWaitLimit = c.RequestTimeout / 4
	}
	if c.BookmarkInterval == 0 {
		c.BookmarkInterval = 10 * time.Second
	}
	if c.MaxRequestsInflight == 0 {
		c.MaxRequestsInflight = 400
	}
	if c.MaxMutatingRequestsInflight == 0 {
		c.MaxMutatingRequestsInflight = 200
	}
	if c.MaxWatchesPerUser == 0 {
		c.MaxWatchesPerUser = 2000
	}
	if c.EtcdQuotaBytes == 0 {
		c.EtcdQuotaBytes = etcd.DefaultQuotaBytes
	}
	if c.SpaceCheckInterval == 0 {
		c.SpaceCheckInterval = 10 * time.Second
	}
	if c.ServiceClusterIPRange == "" {
		c.ServiceClusterIPRange = "10.96.0.0/16"
	}
	if c.ServiceNodePortRange == "" {
		c.ServiceNodePortRange = "30000-32767"
	}
	if c.EndpointReconcileInterval == 0 {
		c.EndpointReconcileInterval = 10 * time.Second
	}
	if c.EndpointLeaseDuration == 0 {
		c.EndpointLeaseDuration = 15 * time.Second
	}
	if c.ServiceRepairInterval == 0 {
		c.ServiceRepairInterval = 3 * time.Minute
	}
	if c.EtcdLogLevel == "" {
		c.EtcdLogLevel = "fatal"
	}
	if c.Logf == nil {
		c.Logf = log.Printf
	}
}

// Server is a running API server.
type Server struct {
	cfg        Config
	etcd       *etcd.Backend
	audit      *audit.Log // nil: no audit log
	store      *storage.Store
	admission  *admission.Chain
	namespaces *registry.NamespaceCache
	quotas     *registry.QuotaCache
	// registry is every verb over storage; both front ends call it.
	registry *registry.Registry
	metrics  *metrics
	// chain is the handler chain both front ends pass (handlerchain.go).
	chain     *filters.Chain
	grpc      *grpc.Server
	listeners []net.Listener
	muxes     []*connMux
	sentConns *sentConns // gRPC connections counting what they send (grpcsent.go)
	rest      *http.Server
	httpLis   net.Listener
	http      *http.Server
	cancel    context.CancelFunc
	wg        sync.WaitGroup
	closeOnce sync.Once
	// serveMu orders Serve's start and Close; closed: Close has begun.
	serveMu sync.Mutex
	closed  bool
	space   *etcd.Space
	// services keeps the kubernetes and kube-dns Services (services.go).
	services *systemServices
	// serving is the API's TLS (nil: --insecure-plaintext).
	serving *tls.Config
	// serviceRanges are the cluster IP and node port ranges (services.go).
	serviceRanges *servicealloc.Ranges
	// authz decides every call (apiserver/authorization).
	authz *authorization.Authorization
	// apf is API Priority and Fairness (apiserver/flowcontrol); nil when
	// disabled.
	apf *flowcontrol.Controller
	// proxy relays logs, exec, attach and port-forward to the agents,
	// and serves the metrics API from their stats.
	proxy *nodeproxy.Proxy
	// authn says who a caller is, and issues ServiceAccount tokens.
	authn *authentication.Authenticator
	// tokens is whether ServiceAccount tokens are issued.
	tokens bool
	// kinds are the kinds served, custom ones included; crds keeps the
	// custom ones in step with the CustomResourceDefinitions.
	kinds *scheme.Kinds
	crds  *apiextensions.Controller
	// webhooks are the admission webhooks (apiserver/webhook).
	webhooks *dynamicadmission.Webhooks
}

// Addr returns the first gRPC address the server listens on.
func (s *Server) Addr() string { return s.listeners[0].Addr().String() }

// MetricsAddr returns the HTTP address of /healthz and /metrics, or "".
func (s *Server) MetricsAddr() string {
	if s.httpLis == nil {
		return ""
	}
	return s.httpLis.Addr().String()
}

// EtcdEndpoints returns the client URLs of the etcd in use (the embedded
// one's loopback URL, or --etcd-servers), for benchmarks and diagnostics.
func (s *Server) EtcdEndpoints() []string { return s.etcd.WatchClient.Endpoints() }

// Store exposes the storage layer to tests and benchmarks in this module.
func (s *Server) Store() *storage.Store { return s.store }

// Serve serves until ctx ends or Close is called.
func (s *Server) Serve(ctx context.Context) error {
	// Close may run while Serve starts (a server stopped right after its
	// first answer): every goroutine is started, and the cancel set,
	// under the lock Close takes first; after a Close, Serve serves nothing.
	s.serveMu.Lock()
	if s.closed {
		s.serveMu.Unlock()
		return nil
	}
	ctx, s.cancel = context.WithCancel(ctx)
	errs := s.startServing(ctx)
	s.serveMu.Unlock()
	s.cfg.Logf("kobune-apiserver %s serving on %s (etcd: %s)", Version, s.cfg.Listen, s.etcd.Version)
	select {
	case <-ctx.Done():
		return nil
	case err := <-errs:
		return err
	}
}

// startServing starts the front ends and the server's loops.
func (s *Server) startServing(ctx context.Context) <-chan error {
	errs := make(chan error, len(s.listeners)+1)
	for _, m := range s.muxes {
		s.wg.Add(3)
		go func() { defer s.wg.Done(); m.serve() }()
		go func() {
			defer s.wg.Done()
			if err := s.grpc.Serve(m.grpc); err != nil && !errors.Is(err, grpc.ErrServerStopped) && !errors.Is(err, net.ErrClosed) {
				errs <- fmt.Errorf("serve gRPC on %s: %w", m.lis.Addr(), err)
			}
		}()
		go func() {
			defer s.wg.Done()
			if err := s.rest.Serve(m.rest); err != nil && !errors.Is(err, http.ErrServerClosed) && !errors.Is(err, net.ErrClosed) {
				errs <- fmt.Errorf("serve REST on %s: %w", m.lis.Addr(), err)
			}
		}()
	}
	if s.http != nil {
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			if err := s.http.Serve(s.httpLis); err != nil && !errors.Is(err, http.ErrServerClosed) {
				errs <- fmt.Errorf("serve metrics: %w", err)
			}
		}()
	}
	s.wg.Add(1)
	go func() { defer s.wg.Done(); s.authz.Run(ctx) }()
	if s.apf != nil {
		s.wg.Add(1)
		go func() { defer s.wg.Done(); s.apf.Run(ctx) }()
	}
	s.wg.Add(4)
	go func() { defer s.wg.Done(); s.services.run(ctx, s.cfg.ServiceRepairInterval) }()
	s.wg.Add(1)
	go func() { defer s.wg.Done(); s.services.runEndpoints(ctx) }()
	go func() { defer s.wg.Done(); s.space.Run(ctx) }()
	go func() { defer s.wg.Done(); s.registry.Run(ctx) }()
	s.wg.Add(1)
	go func() { defer s.wg.Done(); s.crds.Run(ctx) }()
	s.wg.Add(1)
	go func() { defer s.wg.Done(); s.runAPIServices(ctx) }()
	s.wg.Add(1)
	go func() { defer s.wg.Done(); s.webhooks.Run(ctx) }()
	go func() { defer s.wg.Done(); s.runCompaction(ctx) }()
	return errs
}

// AdmissionOrder is the admission chain's steps as they run: the
// mutating ones, then the validating ones (docs/architecture.md).
func (s *Server) AdmissionOrder() (mutating, validating []string) { return s.admission.Names() }

// Close stops serving and closes etcd. Safe to call more than once.
func (s *Server) Close() {
	s.closeOnce.Do(func() {
		s.serveMu.Lock()
		s.closed = true
		cancel := s.cancel
		s.serveMu.Unlock()
		if cancel != nil {
			cancel()
		}
		stopped := make(chan struct{})
		go func() { s.grpc.GracefulStop(); close(stopped) }()
		select {
		case <-stopped:
		case <-time.After(5 * time.Second):
			s.grpc.Stop()
		}
		if s.http != nil {
			s.http.Close()
		}
		if s.rest != nil {
			s.rest.Close()
		}
		s.closeListeners()
		s.wg.Wait()
		s.etcd.Close()
		if s.audit != nil {
			_ = s.audit.Close()
		}
	})
}

func (s *Server) closeListeners() {
	for _, l := range s.listeners {
		l.Close()
	}
	for _, m := range s.muxes {
		m.close()
	}
	if s.httpLis != nil {
		s.httpLis.Close()
	}
}

// priorityClasses reads PriorityClasses for the Priority admission step.
type priorityClasses struct{ store *storage.Store }

func (p priorityClasses) PriorityClass(ctx context.Context, name string) (*scheduling.PriorityClass, bool, error) {
	kv, err := p.store.Get(ctx, storage.Key("priorityclasses", "", name))
	if errors.Is(err, storage.ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	k, _ := scheme.ByResource("priorityclasses")
	o, err := k.Decode(kv.Value)
	if err != nil {
		return nil, false, err
	}
	return o.(*scheduling.PriorityClass), true, nil
}

// runtimeClasses reads RuntimeClasses for the RuntimeClass admission step.
type runtimeClasses struct{ store *storage.Store }

func (r runtimeClasses) RuntimeClass(ctx context.Context, name string) (*node.RuntimeClass, bool, error) {
	rc, err := registry.GetStored[*node.RuntimeClass](ctx, r.store, "runtimeclasses", "", name)
	if status.Code(err) == codes.NotFound {
		return nil, false, nil
	}
	return rc, err == nil, err
}

// serviceCIDRs lists the ranges of the ServiceCIDRs not being deleted,
// for the ServiceAllocation admission step.
type serviceCIDRs struct{ store *storage.Store }

func (c serviceCIDRs) ranges(ctx context.Context) ([]netip.Prefix, error) {
	cidrs, err := registry.ListStored[*networking.ServiceCIDR](ctx, c.store, "servicecidrs")
	if err != nil {
		return nil, err
	}
	var out []netip.Prefix
	for _, sc := range cidrs {
		if sc.DeletionTimestamp != nil {
			continue
		}
		for _, s := range sc.Spec.CIDRs {
			if p, err := netip.ParsePrefix(s); err == nil {
				out = append(out, p)
			}
		}
	}
	return out, nil
}

// storageClasses lists StorageClasses for the DefaultStorageClass
// admission step.
type storageClasses struct{ store *storage.Store }

func (c storageClasses) StorageClasses(ctx context.Context) ([]*storagev1.StorageClass, error) {
	return registry.ListStored[*storagev1.StorageClass](ctx, c.store, "storageclasses")
}

// ingressClasses lists IngressClasses for the DefaultIngressClass
// admission step.
type ingressClasses struct{ store *storage.Store }

func (c ingressClasses) IngressClasses(ctx context.Context) ([]*networking.IngressClass, error) {
	return registry.ListStored[*networking.IngressClass](ctx, c.store, "ingressclasses")
}

// limitRanges lists a namespace's LimitRanges for the LimitRanger
// admission step.
type limitRanges struct{ store *storage.Store }

func (c limitRanges) LimitRanges(ctx context.Context, namespace string) ([]*core.LimitRange, error) {
	return registry.ListStoredIn[*core.LimitRange](ctx, c.store, "limitranges", namespace)
}

// runCompaction compacts, every interval, to the revision seen one interval
// earlier, so watches can resume within the last interval (as the
// Kubernetes API server does).
func (s *Server) runCompaction(ctx context.Context) {
	t := time.NewTicker(s.cfg.CompactionInterval)
	defer t.Stop()
	var last int64
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if last > 0 {
			if err := s.store.Compact(ctx, last); err != nil {
				s.cfg.Logf("compaction at revision %d: %v", last, err)
			}
		}
		rev, err := s.store.Revision(ctx)
		if err == nil {
			last = rev
		}
	}
}

func (s *Server) httpHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", s.serveHealth)
	mux.HandleFunc("/livez", s.serveHealth)
	mux.HandleFunc("/readyz", s.serveHealth)
	mux.Handle("/metrics", s.metrics.handler())
	return mux
}

// logWriter turns the HTTP server's error log (TLS handshake noise,
// broken connections) into the server's log.
type logWriter func(string, ...any)

func (l logWriter) Write(b []byte) (int, error) {
	l("%s", strings.TrimRight(string(b), "\n"))
	return len(b), nil
}

// podsIn lists a namespace's pods from etcd (Pod Security's warning when a
// namespace's level is raised).
func (s *Server) podsIn(ctx context.Context, namespace string) ([]*core.Pod, error) {
	kvs, _, err := s.store.List(ctx, storage.ListPrefix("pods", namespace))
	if err != nil {
		return nil, err
	}
	k, _ := scheme.ByResource("pods")
	var out []*core.Pod
	for _, kv := range kvs {
		if o, err := k.Decode(kv.Value); err == nil {
			out = append(out, o.(*core.Pod))
		}
	}
	return out, nil
}

// DefaultEtcdQuotaBytes is etcd's default backend quota (2 GiB).
const DefaultEtcdQuotaBytes = etcd.DefaultQuotaBytes
