package agent

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kobune/kobune/agent/probe"
	"github.com/kobune/kobune/agent/runtime"
	"github.com/kobune/kobune/agent/volume"
	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/api/resource"
	"github.com/kobune/kobune/client"
	"github.com/kobune/kobune/client/reconcile"
)

// podWorkers runs the pods bound to this node: the kubelet's pod workers
// and its SyncPod. It owns the informer of the node's pods and the loop
// that syncs them (Config.Workers at a time, one key never twice at once:
// client/reconcile's loop is what the kubelet's per-pod goroutines are),
// and what a sync needs — the record of each pod (podrecords.go), the
// probes, the lifecycle hooks, the ConfigMaps and Secrets the pods name
// and their volumes.
//
// A sync (syncPod, pod.go) looks at the cache and at the runtime, never at
// the event that woke it, and takes the next step: start, restart, probe,
// report the status, stop, release, evict. Everything that wants a pod
// looked at again — a container that exited, a probe result, a changed
// ConfigMap, an eviction order — adds its key to the loop's queue.
type podWorkers struct {
	cfg     Config
	client  *client.Client
	runtime runtime.Runtime
	// pods are the pods bound to this node (a field selector on
	// spec.nodeName); services feed the Service link variables (nil on
	// a simulated node).
	pods     *client.Informer[*core.Pod]
	services *client.Informer[*core.Service]
	loop     *reconcile.Loop
	// records are what the workers did about each pod (podrecords.go).
	records *podRecords
	// probes run the containers' probes (nil with Config.DisableProbes).
	probes *probe.Manager
	// hooks run the containers' postStart and preStop (hooks.go).
	hooks hooks
	// sources watch the ConfigMaps and Secrets the pods name; volumes
	// makes the pods' volumes (nil without Config.PodDir).
	sources *sources
	volumes *volume.Manager
	// releaser gives up finished pods' sandboxes (nil when the runtime
	// keeps none).
	releaser runtime.SandboxReleaser
	// resizer carries out in-place resizes (nil: the runtime cannot).
	resizer runtime.Resizer
	// eviction is told when an evicted pod has stopped (nil without one).
	eviction *evictionManager
	nodeIP   string
	// event records an event; allocatable is the node's (what a
	// resourceFieldRef to a limit not set reads).
	event       func(obj meta.Object, typ, reason, message string)
	allocatable func() resource.List
	// orphansLeft: a gone pod's volumes could not be removed (the CSI registrar
	// tries again).
	orphansLeft atomic.Bool
	// mu guards the metrics' per-pod state.
	mu sync.Mutex
}

// newPodWorkers makes the workers of node cfg.Node on runtime rt (the
// runtime as the agent calls it, measured when Config.Metrics is set;
// the unwrapped one is asked what it can do).
func newPodWorkers(cfg Config, c *client.Client, rt, measured runtime.Runtime, services *client.Informer[*core.Service],
	recorder *client.AsyncRecorder, event func(obj meta.Object, typ, reason, message string), allocatable func() resource.List, nodeIP string) *podWorkers {
	w := &podWorkers{cfg: cfg, client: c, runtime: measured, services: services, records: newPodRecords(),
		event: event, allocatable: allocatable, nodeIP: nodeIP}
	w.hooks.since = time.Now()
	w.hooks.execer, _ = rt.(probe.Execer)
	w.releaser, _ = rt.(runtime.SandboxReleaser)
	w.resizer, _ = rt.(runtime.Resizer)
	w.loop = newLoop(cfg.Logf, "pods", w.syncPod, cfg.Workers)
	w.loop.Queue.SetMaxDelay(podRetryMax)
	w.sources = newSources(c, w.queue)
	if cs, ok := rt.(runtime.ConfigSetter); ok {
		cs.SetContainerConfig(w.containerConfig)
	}
	if cfg.PodDir != "" {
		w.volumes = &volume.Manager{Dir: cfg.PodDir, Sources: w.sources, Allocatable: allocatable}
		if cfg.CSIPluginDir != "" {
			w.volumes.CSI = &volume.Plugins{Dir: cfg.CSIPluginDir}
		}
	}
	if !cfg.DisableProbes {
		execer, _ := rt.(probe.Execer)
		w.probes = probe.NewManager(execer, w.queue)
		w.probes.OnFailure = w.probeFailed
		if g, ok := rt.(runtime.StartGate); ok {
			// A sidecar with a startup probe holds back the init
			// containers after it until the probe has passed.
			g.SetStartGate(func(podUID, containerID string) bool {
				r, ok := w.probes.Get(containerID, probe.Startup)
				return ok && r == probe.Success
			})
		}
	}
	w.pods = client.NewInformer(client.For[*core.Pod](c), "", client.ListOptions{FieldSelector: "spec.nodeName=" + cfg.Node.Name})
	w.pods.ResyncPeriod = cfg.ResyncInterval
	w.loop.Object, w.loop.Recorder = reconcile.ObjectsOf(w.pods), recorder
	enqueue := func(p *core.Pod) { w.queue(meta.Key(p)) }
	w.pods.AddHandler(client.Handler[*core.Pod]{
		OnAdd:    enqueue,
		OnUpdate: func(_, p *core.Pod) { enqueue(p) },
		OnDelete: enqueue,
	})
	return w
}

// podRetryMax caps the back-off of a pod whose sync failed: most such
// failures wait on something else (a volume's CSI driver not started yet
// after a reboot, a claim being bound, a Secret not there yet), and the
// kubelet too looks at such a pod again every 10 s, not after minutes.
const podRetryMax = 10 * time.Second

// queueAll asks for a look at every pod of the node: something many of
// them may wait on (a CSI driver) came.
func (w *podWorkers) queueAll() {
	for _, p := range w.pods.List() {
		w.queue(meta.Key(p))
	}
}

// queue asks for a look at the pod with this key.
func (w *podWorkers) queue(key string) { w.loop.Queue.Add(key) }

// Run syncs pods until ctx ends. The pod informer runs on its own
// (runFollowers starts it): the agent waits for it, and for the
// informers a pod's start reads, before the first sync.
func (w *podWorkers) Run(ctx context.Context) { w.loop.Run(ctx) }

// exitLoop looks at a pod as soon as one of its containers exits (the
// kubelet's pod lifecycle event generator).
func (w *podWorkers) exitLoop(ctx context.Context) {
	exits := w.runtime.Exits()
	if exits == nil {
		return
	}
	for {
		select {
		case <-ctx.Done():
			return
		case uid := <-exits:
			for _, key := range w.records.keysRunning(uid) {
				w.queue(key)
			}
		}
	}
}

// knownPods are the uids of the pods bound to the node and of those the
// runtime runs.
func (w *podWorkers) knownPods() map[string]bool {
	keep := map[string]bool{}
	for _, p := range w.pods.List() {
		keep[p.UID] = true
	}
	running, _ := w.records.snapshot()
	for _, uid := range running {
		keep[uid] = true
	}
	return keep
}
