package agent

import (
	"context"
	"crypto/tls"
	"fmt"
	"log"
	"net"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kobune/kobune/agent/cadvisor"
	"github.com/kobune/kobune/agent/eviction"
	"github.com/kobune/kobune/agent/netpol"
	"github.com/kobune/kobune/agent/node"
	"github.com/kobune/kobune/agent/proxy"
	"github.com/kobune/kobune/agent/runtime"
	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/discovery"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/api/resource"
	"github.com/kobune/kobune/api/stats"
	"github.com/kobune/kobune/api/version"
	"github.com/kobune/kobune/client"
	"github.com/kobune/kobune/client/reconcile"
)

// Version is what the agent reports as the node's kubelet version.
const Version = "kobune-agent " + version.Kobune

// Config configures an agent.
type Config struct {
	Node node.Config
	// LeaseInterval is how often the node's Lease is renewed (10 s).
	LeaseInterval time.Duration
	// StatusInterval is how often the node's status is rewritten (1 min).
	StatusInterval time.Duration
	// RuntimeCheckInterval is how often the container runtime is asked
	// whether it is up (5 s, the kubelet's runtime state check); a change
	// is posted to the node's Ready condition at once.
	RuntimeCheckInterval time.Duration
	// ResyncInterval is how often every pod is looked at again (30 s).
	ResyncInterval time.Duration
	// Workers is the number of pods reconciled in parallel (10, the
	// --workers default).
	Workers int
	// Metrics, when set, receives the agent's measurements.
	Metrics *Metrics
	// NodeAPIListen is where logs and exec are served ("" to not serve);
	// its port is published in the Node's status.daemonEndpoints.
	NodeAPIListen string
	// NodeAPITLS, when set, makes the node API TLS 1.3 with this serving
	// certificate and accepts only the API server's client certificate
	// (NodeAPITLSConfig builds it); nil serves plaintext to anyone who can
	// reach the port (simulated nodes, tests).
	NodeAPITLS *tls.Config
	// DisableProbes treats every probe as passing: for simulated nodes,
	// whose pods have no real address to probe.
	DisableProbes bool
	// BackoffBase and BackoffMax bound CrashLoopBackOff (10 s and 5 min in
	// Kubernetes; labs shorten them to watch it happen).
	BackoffBase, BackoffMax time.Duration
	// Routes, when set, is called with every node whenever nodes change, to
	// route other nodes' pod CIDRs (network.SyncRoutes on real nodes; nil
	// for simulated ones).
	Routes func(ctx context.Context, self string, nodes []*core.Node) error
	// PodDir is where pods' volumes are made (<state>/pods; the same
	// directory as the runtime's per-pod files). Empty: no volumes (the
	// fake runtime, which runs nothing).
	PodDir string
	// CSIPluginDir is where CSI drivers put their sockets
	// (<dir>/<driver>/csi.sock) and where their volumes are staged
	// (<state>/plugins; empty: no CSI volumes).
	CSIPluginDir string
	// CSIInterval is how often CSIPluginDir is looked at for drivers that
	// came or went (2 s).
	CSIInterval time.Duration
	// LocalStorageInterval is how often emptyDir usage is measured
	// against sizeLimit (5 s).
	LocalStorageInterval time.Duration
	// Eviction are the eviction thresholds (agent/eviction; the kubelet's
	// --eviction-hard and --eviction-soft), judged every EvictionInterval
	// (1 s); a condition stays True EvictionTransition after its threshold
	// was last met. Needs the usage collector (StatsInterval ≥ 0).
	Eviction           []eviction.Threshold
	EvictionInterval   time.Duration
	EvictionTransition time.Duration
	// StatsInterval is how often the node's pods' cgroups are sampled for
	// usage metrics (1 s; agent/cadvisor); negative turns it off. A runtime
	// that runs nothing in cgroups (the simulated one) is never sampled.
	StatsInterval time.Duration
	// Proxy, when set, programs this node's Service rules from the
	// Services and EndpointSlices (kube-proxy; nil for simulated nodes).
	Proxy *proxy.Proxy
	// NetworkPolicy, when set, enforces the NetworkPolicies that select
	// this node's pods (the network plugin's part; agent/netpol).
	NetworkPolicy *netpol.Enforcer
	// ClusterDomain, when set (with Proxy), makes the agent serve cluster
	// DNS for it on the node's address (clusterdns.go).
	ClusterDomain string
	// ServiceRoute, when set, runs once at start to give Service IPs a
	// route in the node (network.EnsureServiceRoute).
	ServiceRoute func(ctx context.Context) error
	// Started, when set, is called once the container runtime has
	// answered and the node API listens, before the Node is registered:
	// the moment the kubelet tells systemd it is ready (Command tells it),
	// so that a machine whose control plane is away still comes up.
	Started func()
	Logf    func(format string, args ...any)
}

func (c *Config) setDefaults() {
	if c.CSIInterval == 0 {
		c.CSIInterval = 2 * time.Second
	}
	if c.EvictionInterval == 0 {
		c.EvictionInterval = time.Second
	}
	if c.LocalStorageInterval == 0 {
		c.LocalStorageInterval = 5 * time.Second
	}
	if c.LeaseInterval == 0 {
		c.LeaseInterval = 10 * time.Second
	}
	if c.Node.LeaseDuration == 0 {
		c.Node.LeaseDuration = 40 * time.Second
	}
	if c.StatusInterval == 0 {
		c.StatusInterval = time.Minute
	}
	if c.RuntimeCheckInterval == 0 {
		c.RuntimeCheckInterval = 5 * time.Second
	}
	if c.ResyncInterval == 0 {
		c.ResyncInterval = 30 * time.Second
	}
	if c.Workers == 0 {
		c.Workers = 10
	}
	if c.BackoffBase == 0 {
		c.BackoffBase = 10 * time.Second
	}
	if c.BackoffMax == 0 {
		c.BackoffMax = 5 * time.Minute
	}
	if c.Logf == nil {
		c.Logf = log.Printf
	}
}

// Agent runs the pods of one node (the kubelet and kube-proxy): it
// registers the Node and keeps its Lease and status, and wires the
// node's parts together — the pod workers, the eviction manager, the
// Service proxy, NetworkPolicy, cluster DNS, routes to other nodes, CSI
// drivers and the node API.
type Agent struct {
	cfg     Config
	client  *client.Client
	runtime runtime.Runtime
	// workers run the pods bound to the node (podworkers.go); pods is
	// their informer, which the node API reads too.
	workers *podWorkers
	pods    *client.Informer[*core.Pod]
	nodes   *client.Informer[*core.Node]
	// services feed the Service link variables and the proxy.
	services *client.Informer[*core.Service]
	// proxy programs the node's Service rules, netpol its NetworkPolicy
	// table, dns answers its pods' DNS questions (nil when off).
	proxy  *serviceProxy
	netpol *policyEnforcer
	dns    *clusterDNS
	// routeLoop programs the routes to other nodes, when the agent routes.
	routeLoop *reconcile.Loop
	// csi publishes the node's CSI drivers (nil without CSI volumes).
	csi *csiRegistrar
	// streamer serves logs and exec, when the runtime can (nil otherwise).
	streamer Streamer
	// cleaner removes orphaned sandboxes, when the runtime has them.
	cleaner runtime.SandboxCleaner
	nodeIP  string

	// registered: the Node is written and the agent runs its pods.
	registered atomic.Bool
	// recorder writes the agent's events (the kubelet's reasons).
	recorder *client.AsyncRecorder
	// health is why the node is not ready ("" when it is): the runtime's
	// answer at the last check (health.go).
	health health
	// usage samples the pods' cgroups (nil when the runtime has none).
	usage *cadvisor.Collector
	// eviction is the eviction manager (nil without usage or thresholds).
	eviction *evictionManager
}

// allocatable is the node's (what a resourceFieldRef to a limit not set
// reads, as in Kubernetes).
func (a *Agent) allocatable() resource.List {
	return node.Allocatable(a.cfg.Node.Capacity, a.cfg.Node.SystemReserved)
}

// event records an event about a pod or the node, in the background.
func (a *Agent) event(obj meta.Object, typ, reason, message string) {
	a.recorder.Event(obj, typ, reason, message)
}

// Ready is the agent's ready check: the node is registered and the pods
// bound to it are listed.
func (a *Agent) Ready() error {
	if !a.registered.Load() {
		return fmt.Errorf("node %s is not registered yet (is the API server at %s up?)", a.cfg.Node.Name, a.client.Addr)
	}
	if !a.pods.HasSynced() {
		return fmt.Errorf("the pods bound to %s are not listed yet", a.cfg.Node.Name)
	}
	return nil
}

// New returns an agent for the node in cfg, on runtime rt.
func New(cfg Config, c *client.Client, rt runtime.Runtime) *Agent {
	cfg.setDefaults()
	a := &Agent{cfg: cfg, client: c, runtime: rt, streamer: asStreamer(rt),
		recorder: client.NewAsyncRecorder(&client.Recorder{Client: c, Component: "kobune-agent", Host: cfg.Node.Name}, 1000)}
	a.cleaner, _ = rt.(runtime.SandboxCleaner)
	loops := func(name string, sync func(ctx context.Context, key string) error, workers int) *reconcile.Loop {
		return newLoop(cfg.Logf, name, sync, workers)
	}
	if cfg.Metrics != nil {
		a.runtime = timedRuntime{Runtime: rt, calls: cfg.Metrics.RuntimeCalls}
	}
	if cfg.Proxy != nil || cfg.PodDir != "" {
		// A node that runs containers (not a simulated one) gives them
		// their Service link variables.
		a.services = client.NewInformer(client.For[*core.Service](c), "", client.ListOptions{})
	}
	for _, addr := range cfg.Node.Addresses {
		if addr.Type == "InternalIP" {
			a.nodeIP = addr.Address
		}
	}
	a.workers = newPodWorkers(cfg, c, rt, a.runtime, a.services, a.recorder, a.event, a.allocatable, a.nodeIP)
	a.pods = a.workers.pods
	if v := a.workers.volumes; v != nil && v.CSI != nil {
		a.csi = &csiRegistrar{cfg: cfg, client: c, volumes: v, workers: a.workers}
	}
	var slices *client.Informer[*discovery.EndpointSlice]
	if cfg.Proxy != nil {
		a.proxy = newServiceProxy(c, cfg.Proxy, a.services, loops)
		slices = a.proxy.slices
		if cfg.ClusterDomain != "" && a.nodeIP != "" {
			a.dns = &clusterDNS{client: c, domain: cfg.ClusterDomain, node: cfg.Node.Name, nodeIP: a.nodeIP,
				services: a.services, slices: slices, logf: cfg.Logf}
		}
	}
	if cfg.NetworkPolicy != nil {
		a.netpol = newPolicyEnforcer(c, cfg.NetworkPolicy, slices, loops, cfg.Logf)
	}
	if src, ok := rt.(runtime.StatsSource); ok && cfg.StatsInterval >= 0 {
		a.usage = cadvisor.New(cadvisor.Config{NodeName: cfg.Node.Name, Runtime: src, Pods: a.measuredPods, Cgroups: cadvisor.Host(), Interval: cfg.StatsInterval,
			MemoryCapacity: func() uint64 { m := a.allocatable()[resource.Memory]; return uint64(m.Value()) }})
	}
	if src, ok := rt.(runtime.EventSource); ok {
		src.OnEvent(func(p *core.Pod, typ, reason, message string) { a.event(p, typ, reason, message) })
	}
	if a.usage != nil && len(cfg.Eviction) > 0 {
		images, _ := rt.(runtime.ImageCollector)
		a.eviction = &evictionManager{cfg: cfg, client: c, pods: a.pods, records: a.workers.records, usage: a.usage, images: images,
			queue: a.workers.queue, postStatus: a.postStatus, event: a.event, allocatable: a.allocatable}
		a.workers.eviction = a.eviction
	}
	if cfg.Routes != nil {
		a.nodes = client.NewInformer(client.For[*core.Node](c), "", client.ListOptions{})
		a.routeLoop = loops("routes", func(ctx context.Context, _ string) error {
			return a.cfg.Routes(ctx, a.cfg.Node.Name, a.nodes.List())
		}, 1)
		routes := func(*core.Node) { a.routeLoop.Queue.Add(routesKey) }
		a.nodes.AddHandler(client.Handler[*core.Node]{OnAdd: routes, OnUpdate: func(_, n *core.Node) { routes(n) }, OnDelete: routes})
	}
	return a
}

// measuredPods are the running pods as the usage collector needs them.
func (a *Agent) measuredPods() map[string]cadvisor.PodInfo {
	running, paths := a.workers.records.snapshot()
	out := make(map[string]cadvisor.PodInfo, len(running))
	for key, uid := range running {
		pod, ok := a.pods.GetByKey(key)
		if !ok || pod.UID != uid {
			continue
		}
		info := cadvisor.PodInfo{Ref: stats.PodReference{Name: pod.Name, Namespace: pod.Namespace, UID: pod.UID}, Volumes: map[string]string{}}
		if pod.Status.StartTime != nil {
			info.StartTime = pod.Status.StartTime.Time
		}
		for _, v := range pod.Spec.Volumes {
			if v.EmptyDir != nil && paths[uid][v.Name] != "" {
				info.Volumes[v.Name] = paths[uid][v.Name]
			}
		}
		if a.streamer != nil {
			info.LogDir = filepath.Dir(filepath.Dir(a.streamer.LogPath(pod, "c", 0)))
		}
		out[uid] = info
	}
	return out
}

// routesKey is the route loop's only key: "program the routes to other
// nodes" (all of them at once, from the node cache).
const routesKey = "routes"

// newLoop is one of the agent's reconcile loops (the same loop as
// kobune-controller's): errors are logged and retried with per-key
// back-off, a panic is an error, not a crashed agent.
func newLoop(logf func(string, ...any), name string, sync func(ctx context.Context, key string) error, workers int) *reconcile.Loop {
	l := reconcile.NewLoop(name, reconcile.Func(func(ctx context.Context, key string) (reconcile.Result, error) {
		return reconcile.Result{}, sync(ctx, key)
	}), workers)
	l.Logf = logf
	return l
}

// Run registers the node and runs its pods until ctx ends.
func (a *Agent) Run(ctx context.Context) error {
	lis, err := a.start(ctx)
	if err != nil {
		return err
	}
	var wg sync.WaitGroup
	run := func(f func(context.Context)) {
		wg.Add(1)
		go func() { defer wg.Done(); f(ctx) }()
	}
	if lis != nil {
		run(func(ctx context.Context) { a.serveNodeAPI(ctx, lis) })
	}
	synced := a.runFollowers(ctx, run)
	if a.cfg.ServiceRoute != nil {
		if err := a.cfg.ServiceRoute(ctx); err != nil {
			a.cfg.Logf("route for Service IPs: %v (connections from this node to Services may fail)", err)
		}
	}
	run(a.leaseLoop)
	run(a.workers.exitLoop)
	if a.workers.volumes != nil {
		run(a.workers.localStorageLoop)
	}
	run(a.statusLoop)
	run(a.runtimeCheckLoop)
	if !client.WaitForSync(ctx, synced...) {
		wg.Wait()
		return ctx.Err()
	}
	if a.csi != nil {
		// The drivers already there mount the first pods' volumes. Briefly:
		// every pod's first sync waits for this, and a driver that accepts
		// on its socket but does not answer (hung, or still starting) would
		// hold them all for the probe's 10 s; the CSI registrar finds a late driver.
		dctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		a.csi.discover(dctx)
		cancel()
	}
	a.housekeeping(ctx)
	if a.csi != nil {
		run(a.csi.Run)
	}
	run(a.workers.Run)
	if a.dns != nil {
		run(a.dns.Run)
	}
	if a.routeLoop != nil {
		run(a.routeLoop.Run)
	}
	wg.Wait()
	return nil
}

// start asks the runtime its version, opens the node API's listener (nil
// without one), registers the Node and adopts the pods the runtime
// already runs.
func (a *Agent) start(ctx context.Context) (net.Listener, error) {
	ver, err := a.runtime.Version(ctx)
	if err != nil {
		return nil, fmt.Errorf("container runtime: %w", err)
	}
	a.cfg.Node.RuntimeVersion, a.cfg.Node.AgentVersion = ver, Version
	var lis net.Listener
	if a.cfg.NodeAPIListen != "" {
		if lis, err = listenNodeAPI(a.cfg.NodeAPIListen); err != nil {
			return nil, err
		}
		a.cfg.Node.AgentPort = int32(lis.Addr().(*net.TCPAddr).Port)
	}
	if a.cfg.Started != nil {
		a.cfg.Started()
	}
	n, err := a.register(ctx)
	if err != nil {
		if lis != nil {
			lis.Close()
		}
		return nil, err
	}
	a.cfg.Logf("node %s registered (%s, pod CIDR %s)", n.Name, ver, n.Spec.PodCIDR)
	a.registered.Store(true)
	a.event(n, core.EventTypeNormal, "Starting", "Starting kobune-agent.")
	if err := a.adopt(ctx); err != nil {
		if lis != nil {
			lis.Close()
		}
		return nil, err
	}
	return lis, nil
}

// runFollowers starts what follows the API — the informers, the event
// recorder, usage and eviction, the proxy and NetworkPolicy — and returns
// what must have listed before the first pod starts.
func (a *Agent) runFollowers(ctx context.Context, run func(func(context.Context))) []func() bool {
	run(func(ctx context.Context) { a.recorder.Run(ctx, 1) })
	a.workers.sources.ctx = ctx
	run(a.pods.Run)
	if a.usage != nil {
		run(a.usage.Run)
		if a.eviction != nil {
			run(a.eviction.Run)
		}
	}
	if a.nodes != nil {
		run(a.nodes.Run)
	}
	synced := []func() bool{a.pods.HasSynced}
	if a.services != nil {
		run(a.services.Run)
		synced = append(synced, a.services.HasSynced) // pods start with their Service links
	}
	if a.proxy != nil {
		run(a.proxy.Run)
		synced = append(synced, a.proxy.HasSynced)
	}
	if a.netpol != nil {
		run(a.netpol.Run)
		// Policies hold before the first pod starts: a pod the agent
		// starts is isolated from its first packet.
		synced = append(synced, a.netpol.HasSynced)
	}
	return synced
}
