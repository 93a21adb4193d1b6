package apiserver

import (
	"context"
	"errors"
	"fmt"
	"github.com/kobune/kobune/apiserver/apiextensions"
	"github.com/kobune/kobune/apiserver/dynamicadmission"
	"log"
	"net"
	"net/http"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/keepalive"

	"github.com/kobune/kobune/api/scheme"
	"github.com/kobune/kobune/apiserver/audit"
	"github.com/kobune/kobune/apiserver/authentication"
	"github.com/kobune/kobune/apiserver/authorization"
	"github.com/kobune/kobune/apiserver/encryption"
	"github.com/kobune/kobune/apiserver/etcd"
	"github.com/kobune/kobune/apiserver/flowcontrol"
	"github.com/kobune/kobune/apiserver/grpcapi"
	"github.com/kobune/kobune/apiserver/nodeproxy"
	"github.com/kobune/kobune/apiserver/registry"
	"github.com/kobune/kobune/apiserver/rest"
	"github.com/kobune/kobune/apiserver/servicealloc"
	"github.com/kobune/kobune/apiserver/storage"
	"github.com/kobune/kobune/proto/apipb"
)

// startStep is one step of New: what it builds, and how.
type startStep struct {
	name string
	run  func(ctx context.Context, s *Server) error
}

// startSteps is the API server put together from the ground up, each
// piece on the ones before it — the shape of a request's path read
// backwards: etcd, storage, who may do what, who is asking, admission and
// the registry, the objects every cluster has, and last the handler chain
// and the two front ends a request comes in by.
var startSteps = []startStep{
	{"check the flags that go together", checkFlags},
	{"etcd: start the embedded one, or connect to --etcd-servers", connectEtcd},
	{"storage: Service claims, encryption at rest, the NOSPACE watch", openStorage},
	{"authorization: the --authorization-mode authorizers", buildAuthorization},
	{"authentication: certificates, bootstrap and ServiceAccount tokens", buildAuthentication},
	{"the node proxy: logs, exec, attach, port-forward, metrics", buildNodeProxy},
	{"admission and the registry", buildRegistry},
	{"system namespaces, priority classes, flow schemas and priority levels, and the bootstrap policy", bootstrapObjects},
	{"the kinds CustomResourceDefinitions add, and an APIService for each group version", loadCustomKinds},
	{"listeners", listen},
	{"the kubernetes and kube-dns Services", startServices},
	{"API Priority and Fairness, the handler chain and the two front ends", buildFrontEnds},
}

// New builds an API server by startSteps: it connects to etcd (starting
// the embedded one if needed), makes sure the system objects exist and
// opens the listeners. Serve starts serving.
func New(ctx context.Context, cfg Config) (*Server, error) {
	cfg.setDefaults()
	s := &Server{cfg: cfg, metrics: newMetrics()}
	for _, step := range startSteps {
		if err := step.run(ctx, s); err != nil {
			s.closeListeners()
			if s.etcd != nil {
				s.etcd.Close()
			}
			if s.audit != nil {
				_ = s.audit.Close()
			}
			return nil, err
		}
	}
	return s, nil
}

// StartSteps names New's steps in order (docs/architecture.md).
func StartSteps() []string {
	out := make([]string, len(startSteps))
	for i, st := range startSteps {
		out[i] = st.name
	}
	return out
}

// checkFlags refuses combinations that cannot work before anything
// starts, and parses what later steps need.
func checkFlags(_ context.Context, s *Server) error {
	cfg := &s.cfg
	var err error
	if s.serviceRanges, err = servicealloc.ParseRanges(cfg.ServiceClusterIPRange, cfg.ServiceNodePortRange); err != nil {
		return err
	}
	if (cfg.AuditPolicyFile == "") != (cfg.AuditLogPath == "") {
		return errors.New("--audit-policy-file and --audit-log-path go together: give both, or neither")
	}
	if cfg.EtcdServers == "" && cfg.DataDir == "" {
		return errors.New("either a data directory (--data-dir) or external etcd servers (--etcd-servers) is required")
	}
	switch {
	case cfg.TLSCertFile != "" || cfg.TLSPrivateKeyFile != "":
		if s.serving, err = serverTLS(*cfg); err != nil {
			return err
		}
	case cfg.ClientCAFile != "":
		return errors.New("--client-ca-file needs --tls-cert-file and --tls-private-key-file: client certificates come over TLS")
	case !cfg.InsecurePlaintext:
		return errors.New("the API is served over TLS only: give --tls-cert-file, --tls-private-key-file and --client-ca-file (kobectl pki init makes them; make lab does), or --insecure-plaintext to serve without TLS or authentication, where anyone who reaches the port may do anything")
	default:
		cfg.Logf("kobune-apiserver: WARNING: --insecure-plaintext: no TLS and no authentication; anyone who reaches %s may do anything", cfg.Listen)
	}
	if cfg.AuditPolicyFile != "" {
		policy, err := audit.LoadPolicy(cfg.AuditPolicyFile)
		if err != nil {
			return fmt.Errorf("--audit-policy-file: %w", err)
		}
		max := cfg.AuditLogMaxBytes
		if max == 0 {
			max = 100 << 20
		}
		if s.audit, err = audit.Open(cfg.AuditLogPath, policy, max); err != nil {
			return fmt.Errorf("--audit-log-path: %w", err)
		}
	}
	return nil
}

func connectEtcd(ctx context.Context, s *Server) error {
	cfg := s.cfg
	var err error
	if cfg.EtcdServers != "" {
		tc, err := etcd.ClientTLS(etcd.TLSConfig{Servers: cfg.EtcdServers, CAFile: cfg.EtcdCAFile, CertFile: cfg.EtcdCertFile, KeyFile: cfg.EtcdKeyFile})
		if err != nil {
			return err
		}
		s.etcd, err = etcd.Connect(ctx, cfg.EtcdServers, tc)
		return err
	}
	s.etcd, err = etcd.StartEmbedded(cfg.DataDir, cfg.EtcdLogLevel, cfg.EtcdQuotaBytes)
	return err
}

func openStorage(_ context.Context, s *Server) error {
	cfg := s.cfg
	s.store = storage.New(s.etcd.Client, s.etcd.WatchClient)
	s.store.RegisterClaims(storage.ListPrefix("services", ""), servicealloc.Claims)
	s.store.RegisterClaims(storage.ListPrefix("ipaddresses", ""), servicealloc.IPAddressClaims)
	if cfg.EncryptionProviderConfig != "" {
		transformers, err := encryption.Load(cfg.EncryptionProviderConfig)
		if err != nil {
			return fmt.Errorf("--encryption-provider-config: %w", err)
		}
		for r, t := range transformers {
			if _, ok := scheme.ByResource(r); !ok {
				return fmt.Errorf("--encryption-provider-config: resource %q is not served (kobectl api-resources lists them)", r)
			}
			s.store.SetTransformer(storage.ListPrefix(r, ""), t)
		}
	}
	s.space = etcd.NewSpace(s.etcd, cfg.EtcdQuotaBytes, cfg.SpaceCheckInterval, cfg.Logf, s.metrics.storage)
	return nil
}

func buildAuthorization(_ context.Context, s *Server) error {
	var err error
	s.kinds = scheme.NewKinds()
	s.authz, err = authorization.New(authorization.Config{Mode: s.cfg.AuthorizationMode, ClientCertificates: s.cfg.ClientCAFile != "",
		Store: s.store, Logf: s.cfg.Logf})
	return err
}

func buildAuthentication(_ context.Context, s *Server) error {
	cfg := s.cfg
	sa, err := authentication.LoadServiceAccounts(authentication.ServiceAccountConfig{SigningKeyFile: cfg.ServiceAccountSigningKeyFile,
		KeyFiles: cfg.ServiceAccountKeyFiles, Issuer: cfg.ServiceAccountIssuer, Audiences: cfg.APIAudiences})
	if err != nil {
		return err
	}
	// Without a client CA nobody can authenticate, so every caller is
	// anonymous and allowed; with one, only --anonymous-auth lets
	// anonymous callers in.
	s.authn = authentication.New(authentication.Config{Store: s.store, ServiceAccounts: sa,
		AnonymousAllowed: cfg.ClientCAFile == "" || cfg.AnonymousAuth, Allowed: s.authz.Allowed})
	s.tokens = sa != nil
	return nil
}

func buildNodeProxy(_ context.Context, s *Server) error {
	kubeletClient, err := kubeletTLS(s.cfg)
	if err != nil {
		return err
	}
	s.proxy = nodeproxy.New(s.store, kubeletClient, s.cfg.PodDial)
	return nil
}

func buildRegistry(_ context.Context, s *Server) error {
	s.namespaces = registry.NewNamespaceCache(s.store)
	s.quotas = registry.NewQuotaCache(s.store)
	s.webhooks = dynamicadmission.New(dynamicadmission.Config{Store: s.store, Namespaces: s.namespaces, Kinds: s.kinds, Logf: s.cfg.Logf})
	s.admission = s.admissionChain(s.cfg, s.serviceRanges)
	s.proxy.Admission = s.admission // attach, exec and port-forward are CONNECT requests to it
	s.registry = registry.New(registry.Config{Store: s.store, Admission: s.admission, Namespaces: s.namespaces, Quotas: s.quotas,
		Creators: s.creators(), Authorize: s.authz.Authorize, BookmarkInterval: s.cfg.BookmarkInterval, EtcdVersion: s.etcd.Version,
		DescribeNoSpace: s.space.Describe, Kinds: s.kinds, Logf: s.cfg.Logf})
	s.webhooks.ReportPoliciesWith(s.registry.UpdateObjectStatus)
	return nil
}

// loadCustomKinds serves the kinds of the stored CustomResourceDefinitions
// before the first request, so that a restart never answers 404 for a
// kind it served before.
func loadCustomKinds(ctx context.Context, s *Server) error {
	s.crds = &apiextensions.Controller{Registry: s.registry, Store: s.store, Kinds: s.kinds, Logf: s.cfg.Logf}
	if err := s.crds.Load(ctx); err != nil {
		return err
	}
	// Registered before serving, so that clients never see them appear
	// (runAPIServices follows changes); a full database is logged.
	if err := s.syncAPIServices(ctx); err != nil {
		s.cfg.Logf("kobune-apiserver: APIServices: %v", err)
	}
	return nil
}

// bootstrapObjects writes only what is missing: on a full database
// (etcd's NOSPACE alarm) the server must still start and serve reads.
func bootstrapObjects(ctx context.Context, s *Server) error {
	if err := registry.EnsureSystemObjects(ctx, s.registry); err != nil {
		return err
	}
	return authorization.EnsureBootstrapPolicy(ctx, s.registry, s.store, s.cfg.Logf, s.space.Describe)
}

func listen(_ context.Context, s *Server) error {
	for _, addr := range strings.Split(s.cfg.Listen, ",") {
		lis, err := net.Listen("tcp", strings.TrimSpace(addr))
		if err != nil {
			return fmt.Errorf("listen on %s: %w (is another apiserver running? choose another --listen)", addr, err)
		}
		s.listeners = append(s.listeners, lis)
	}
	if s.cfg.MetricsListen != "" {
		var err error
		if s.httpLis, err = net.Listen("tcp", s.cfg.MetricsListen); err != nil {
			return fmt.Errorf("listen on %s for metrics: %w", s.cfg.MetricsListen, err)
		}
	}
	return nil
}

// startServices is not fatal: on a full etcd the server must still start
// and serve reads; the repair loop tries again.
func startServices(ctx context.Context, s *Server) error {
	s.services = &systemServices{cfg: s.cfg, registry: s.registry, store: s.store, ranges: s.serviceRanges, listeners: s.listeners}
	s.services.housekeeping(ctx)
	return nil
}

// IdleConnectionTimeout is how long a connection may carry no request
// (REST) or no call (gRPC) before the server closes it.
var IdleConnectionTimeout = 5 * time.Minute

func buildFrontEnds(_ context.Context, s *Server) error {
	var opts []grpc.ServerOption
	s.sentConns = newSentConns()
	if s.serving != nil {
		// The mux (connmux.go) does the handshake: it chooses between
		// gRPC and REST from the client's ALPN offer.
		opts = append(opts, grpc.Creds(tlsDone{}))
	}
	s.grpc = grpc.NewServer(append(opts,
		grpc.MaxRecvMsgSize(8<<20),
		grpc.MaxSendMsgSize(256<<20),
		// A pool of goroutines serves the RPCs instead of a new goroutine
		// each: their stacks have already grown to what decoding an object
		// takes, so a create no longer pays for copying a stack (measured:
		// decode CPU per create fell by a quarter under 16 clients).
		grpc.NumStreamWorkers(32),
		// A connection with no call open for as long as REST's idle
		// timeout is closed (GOAWAY; clients reconnect when they next
		// call): idle connections cannot pile up.
		grpc.KeepaliveParams(keepalive.ServerParameters{MaxConnectionIdle: IdleConnectionTimeout}),
		// Priority and Fairness holds a call's seats until its response
		// has been written (grpcsent.go), not only until the registry
		// returned it.
		grpc.StatsHandler(sentHandler{conns: s.sentConns}),
	)...)
	if seats := max(s.cfg.MaxRequestsInflight, 0) + max(s.cfg.MaxMutatingRequestsInflight, 0); !s.cfg.DisablePriorityAndFairness && seats > 0 {
		s.apf = flowcontrol.New(flowcontrol.Config{Store: s.store, QueueWaitLimit: s.cfg.QueueWaitLimit,
			ServerConcurrencyLimit: seats})
		s.metrics.registry.MustRegister(s.apf)
	}
	s.chain = s.handlerChain()
	apipb.RegisterResourceAPIServer(s.grpc, grpcapi.New(s.chain, s.registry, s.proxy))
	for _, lis := range s.listeners {
		s.muxes = append(s.muxes, newConnMux(lis, s.serving, s.sentConns, s.cfg.Logf))
	}
	// The REST API's HTTP server: HTTP/1.1 and, over TLS, HTTP/2. The
	// timeouts bound slow clients; a watch or a log stream may run for
	// as long as it needs (no WriteTimeout).
	handler := rest.New(rest.Config{Chain: s.chain, Registry: s.registry, Proxy: s.proxy, Kinds: s.kinds,
		Authenticate: s.authn.Authenticate, AuthorizePath: s.authz.AuthorizePath, AuthorizeAttributes: s.authz.AuthorizeAttributes, Health: s.serveHealth,
		OIDC: s.authn.OIDCDiscovery})
	s.rest = &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: IdleConnectionTimeout,
		MaxHeaderBytes: 1 << 20, ErrorLog: log.New(logWriter(s.cfg.Logf), "kobune-apiserver: REST: ", 0)}
	// Made here, not in Serve: Close may run while Serve is starting
	// (a server stopped right after its first answer) and reads it.
	if s.httpLis != nil {
		s.http = &http.Server{Handler: s.httpHandler(), ReadHeaderTimeout: 10 * time.Second}
	}
	return nil
}
