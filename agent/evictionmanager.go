package agent

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/kobune/kobune/agent/cadvisor"
	"github.com/kobune/kobune/agent/eviction"
	"github.com/kobune/kobune/agent/runtime"
	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/api/resource"
	"github.com/kobune/kobune/api/stats"
	"github.com/kobune/kobune/client"
)

// The kubelet's eviction manager (agent/eviction has the rules): every
// Config.EvictionInterval the agent observes its signals — memory.available
// (the node's allocatable memory less its pods' working set, from its
// cAdvisor), nodefs.available and nodefs.inodesFree (the filesystem of the
// agent's state directory), imagefs.available (the same filesystem: Kobune
// does not look for containerd's separately), pid.available (pid_max less
// the processes running) — and, while a threshold holds, evicts the first
// pod of the ranking, one per round, then waits for the next observation.
// The pressure conditions go into the node's status at once (and its
// NoSchedule taints come from kobune-controller's node lifecycle
// controller, as Kubernetes' TaintNodesByCondition).

// pressure is the conditions last posted.
type pressure map[core.NodeConditionType]bool

// evictionManager is the node's eviction manager.
type evictionManager struct {
	cfg     Config
	client  *client.Client
	pods    *client.Informer[*core.Pod]
	records *podRecords
	usage   *cadvisor.Collector
	// images removes unused images (nil when the runtime cannot).
	images runtime.ImageCollector
	// queue syncs a pod (which carries out its eviction), postStatus
	// writes the node's status with the conditions.
	queue       func(key string)
	postStatus  func(ctx context.Context) *core.Node
	event       func(obj meta.Object, typ, reason, message string)
	allocatable func() resource.List

	mu sync.Mutex
	// pressure is the conditions, posted with the node's status;
	// lastEviction when the last evicted pod was stopped.
	pressure     pressure
	lastEviction time.Time
	// lastImageGC is when disk pressure last collected images (the
	// loop's own).
	lastImageGC time.Time
}

// conditions are the pressure conditions now.
func (em *evictionManager) conditions() pressure {
	if em == nil {
		return nil
	}
	em.mu.Lock()
	defer em.mu.Unlock()
	return em.pressure
}

// evicted records that an evicted pod stopped: the next round acts on a
// sample taken after it.
func (em *evictionManager) evicted() {
	if em == nil {
		return
	}
	em.mu.Lock()
	defer em.mu.Unlock()
	em.lastEviction = time.Now()
}

// Run observes and evicts every Config.EvictionInterval until ctx ends.
func (em *evictionManager) Run(ctx context.Context) {
	m := &eviction.Manager{Thresholds: em.cfg.Eviction, Transition: em.cfg.EvictionTransition}
	t := time.NewTicker(em.cfg.EvictionInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if !em.pods.HasSynced() {
			continue // the pods are what it ranks and collects
		}
		sum := em.usage.Summary()
		obs := em.observe(sum)
		res := m.Observe(time.Now(), obs)
		em.mu.Lock()
		changed := len(res.Conditions) != len(em.pressure)
		for c := range res.Conditions {
			changed = changed || !em.pressure[c]
		}
		em.pressure = res.Conditions
		em.mu.Unlock()
		if changed {
			em.postStatus(ctx)
		}
		// As the kubelet waits for an evicted pod's cleanup: act again
		// only on a sample taken after the last victim stopped (an older
		// one still counts its memory).
		em.mu.Lock()
		settled := em.records.settled() && (sum.Node.Memory == nil || sum.Node.Memory.Time.After(em.lastEviction))
		em.mu.Unlock()
		if res.Reclaim != nil && settled {
			em.reclaim(ctx, sum, obs, res)
		}
	}
}

// observe reads the signals.
func (em *evictionManager) observe(sum stats.Summary) map[eviction.Signal]eviction.Observation {
	obs := map[eviction.Signal]eviction.Observation{}
	if m := sum.Node.Memory; m != nil && m.AvailableBytes != nil {
		capacity := em.allocatable()[resource.Memory]
		obs[eviction.MemoryAvailable] = eviction.Observation{Available: int64(*m.AvailableBytes), Capacity: capacity.Value()}
	}
	if dir := em.cfg.PodDir; dir != "" {
		var st syscall.Statfs_t
		if err := syscall.Statfs(dir, &st); err == nil {
			fs := eviction.Observation{Available: int64(st.Bavail) * st.Bsize, Capacity: int64(st.Blocks) * st.Bsize}
			obs[eviction.NodeFsAvailable], obs[eviction.ImageFsAvailable] = fs, fs
			obs[eviction.NodeFsInodesFree] = eviction.Observation{Available: int64(st.Ffree), Capacity: int64(st.Files)}
		}
	}
	if b, err := os.ReadFile("/proc/sys/kernel/pid_max"); err == nil {
		if max, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err == nil {
			if entries, err := os.ReadDir("/proc"); err == nil {
				procs := int64(0)
				for _, e := range entries {
					if _, err := strconv.Atoi(e.Name()); err == nil {
						procs++
					}
				}
				obs[eviction.PIDAvailable] = eviction.Observation{Available: max - procs, Capacity: max}
			}
		}
	}
	return obs
}

// imageGCInterval is how often disk pressure may collect images: once,
// then evictions, then again after this long.
const imageGCInterval = time.Minute

// reclaim frees what the threshold met needs: under disk pressure first
// the dead containers of finished pods, then the images no container uses
// (the kubelet's container and image garbage collection; the next round
// observes again), then, as for every signal, it evicts the first pod of
// the ranking.
func (em *evictionManager) reclaim(ctx context.Context, sum stats.Summary, obs map[eviction.Signal]eviction.Observation, res eviction.Result) {
	t := res.Reclaim
	if t.Signal != eviction.MemoryAvailable && t.Signal != eviction.PIDAvailable && (em.collectDeadContainers(t.Signal) || em.collectImages(ctx, t.Signal)) {
		return // observe again before evicting anything
	}
	byUID := map[string]*stats.PodStats{}
	for i := range sum.Pods {
		byUID[sum.Pods[i].PodRef.UID] = &sum.Pods[i]
	}
	running := em.records.runningNotEvicting()
	var candidates []eviction.PodUsage
	for key, uid := range running {
		pod, ok := em.pods.GetByKey(key)
		if !ok || pod.UID != uid || pod.DeletionTimestamp != nil || isCritical(pod) || finished(pod) {
			continue // gone, going, finished (an evicted pod among them), or never evicted
		}
		u := eviction.PodUsage{Key: key, Pod: pod}
		if pod.Spec.Priority != nil {
			u.Priority = *pod.Spec.Priority
		}
		req, _ := core.PodRequestsAndLimits(&pod.Spec)
		u.MemoryRequest = req.Memory().Value()
		es := req[resource.EphemeralStorage]
		u.DiskRequest = es.Value()
		if ps := byUID[uid]; ps != nil {
			if ps.Memory != nil && ps.Memory.WorkingSetBytes != nil {
				u.Memory = int64(*ps.Memory.WorkingSetBytes)
			}
			if ps.EphemeralStorage != nil && ps.EphemeralStorage.UsedBytes != nil {
				u.Disk = int64(*ps.EphemeralStorage.UsedBytes)
			}
		}
		candidates = append(candidates, u)
	}
	ranked := eviction.Rank(t.Signal, candidates)
	if len(ranked) == 0 {
		em.cfg.Logf("eviction: %s threshold met and no pod to evict", t.Signal)
		return
	}
	victim := ranked[0]
	o := obs[t.Signal]
	msg := fmt.Sprintf("The node was low on resource: %s. Threshold quantity: %s, available: %s.", t.Signal.Resource(), quantityOf(t.Signal, t.Value.Of(o.Capacity)), quantityOf(t.Signal, o.Available))
	if t.Signal == eviction.MemoryAvailable {
		msg += fmt.Sprintf(" Pod %s was using %s, request is %s.", victim.Pod.Name, quantityOf(t.Signal, victim.Memory), quantityOf(t.Signal, victim.MemoryRequest))
	}
	grace := time.Duration(0) // a hard threshold kills at once
	if t.Soft {
		grace = gracePeriod(victim.Pod)
	}
	if n, err := client.For[*core.Node](em.client).Get(ctx, "", em.cfg.Node.Name); err == nil {
		em.event(n, core.EventTypeWarning, "EvictionThresholdMet", "Attempting to reclaim "+t.Signal.Resource())
	}
	em.cfg.Logf("eviction: %s is %s (%s threshold %s): evicting %s", t.Signal, quantityOf(t.Signal, o.Available), map[bool]string{true: "soft", false: "hard"}[t.Soft], t.Value.String(), victim.Key)
	em.records.orderEviction(victim.Pod.UID, evictionOrder{message: msg, grace: grace})
	em.queue(victim.Key)
}

// collectDeadContainers is the kubelet's container garbage collection
// under disk pressure (DeleteAllUnusedContainers): the exited containers of
// the node's finished pods go, with their writable layers, logs and
// volumes, while the pods stay in the API, Succeeded or Failed, with their
// status. Each is removed by the pod's own sync (ordered here, as an
// eviction is); the rounds wait until they are. It reports whether it
// ordered any. (A running pod keeps its containers: Kobune keeps one
// container per name, and the latest attempt's is what its restart and
// status read, as the kubelet keeps one dead container per name.)
func (em *evictionManager) collectDeadContainers(s eviction.Signal) bool {
	running, _ := em.records.snapshot()
	var keys []string
	for key, uid := range running {
		if pod, ok := em.pods.GetByKey(key); ok && pod.UID == uid && finished(pod) {
			keys = append(keys, key)
		}
	}
	uids := make([]string, len(keys))
	for i, key := range keys {
		uids[i] = running[key]
	}
	em.records.collect(uids)
	if len(keys) == 0 {
		return false
	}
	sort.Strings(keys)
	em.cfg.Logf("eviction: %s: container garbage collection: removing the dead containers of finished pods %s", s, strings.Join(keys, ", "))
	for _, key := range keys {
		em.queue(key)
	}
	return true
}

// collectImages is the kubelet's image garbage collection under disk
// pressure, at most once every imageGCInterval: the images no container
// was made from and no pod of the node that may still start names. It
// reports whether it removed any.
func (em *evictionManager) collectImages(ctx context.Context, s eviction.Signal) bool {
	gc := em.images
	if gc == nil || time.Since(em.lastImageGC) <= imageGCInterval {
		return false
	}
	em.lastImageGC = time.Now()
	keep := map[string]bool{}
	for _, p := range em.pods.List() {
		if finished(p) {
			continue // never starts again
		}
		for _, list := range [][]core.Container{p.Spec.InitContainers, p.Spec.Containers} {
			for _, c := range list {
				keep[c.Image] = true
			}
		}
	}
	removed, err := gc.RemoveUnusedImages(ctx, keep)
	n, _ := client.For[*core.Node](em.client).Get(ctx, "", em.cfg.Node.Name)
	switch {
	case err != nil:
		em.cfg.Logf("eviction: %s: image garbage collection: %v", s, err)
		if n != nil {
			em.event(n, core.EventTypeWarning, "ImageGCFailed", err.Error())
		}
	case len(removed) > 0:
		em.cfg.Logf("eviction: %s: image garbage collection removed %s", s, strings.Join(removed, ", "))
		if n != nil {
			em.event(n, core.EventTypeNormal, "FreeDiskSpace", "Image garbage collection removed "+strings.Join(removed, ", "))
		}
		return true
	}
	return false
}

func quantityOf(s eviction.Signal, n int64) string {
	if s == eviction.MemoryAvailable || s == eviction.NodeFsAvailable || s == eviction.ImageFsAvailable {
		return resource.NewQuantity(n/1024*1024, resource.BinarySI).String()
	}
	return strconv.FormatInt(n, 10)
}

// isCritical: the kubelet never evicts static or critical pods (priority
// of system-node-critical and above).
func isCritical(p *core.Pod) bool {
	return p.Spec.Priority != nil && *p.Spec.Priority >= 2000001000
}
