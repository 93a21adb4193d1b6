package agent

import (
	"maps"
	"sync"

	"github.com/kobune/kobune/api/core"
)

// podRecords is what the agent keeps about each pod between syncs, one
// record per pod uid under one lock — the kubelet's podSyncStatus. The
// informer holds what the API says a pod should be; a record holds what
// this node has done about it: whether the runtime runs it, where its
// volumes are, an eviction ordered and not yet carried out, a finished
// pod's sandbox given up, its dead containers being collected.
type podRecords struct {
	mu sync.Mutex
	// byUID are the records; a record with nothing left in it is dropped.
	byUID map[string]*podRecord
	// running is the uid the runtime runs for each pod key
	// (namespace/name): a pod replaced by one of the same name has
	// another uid, and the old one is stopped first.
	running map[string]string
}

// podRecord is one pod's.
type podRecord struct {
	// volumes are the pod's volumes on the node, by volume name.
	volumes map[string]string
	// eviction, when set, is carried out by the pod's next sync.
	eviction *evictionOrder
	// released: the finished pod's sandbox was given up (release).
	released bool
	// collecting: disk pressure ordered its dead containers removed.
	collecting bool
	// allocated are the resources its containers run with, by container
	// name (the kubelet's allocation manager): the spec's when the pod
	// started, a resize's once carried out (resize.go).
	allocated map[string]core.ResourceRequirements
}

func newPodRecords() *podRecords {
	return &podRecords{byUID: map[string]*podRecord{}, running: map[string]string{}}
}

// record returns uid's record, made if missing; the lock is held.
func (r *podRecords) record(uid string) *podRecord {
	rec := r.byUID[uid]
	if rec == nil {
		rec = &podRecord{}
		r.byUID[uid] = rec
	}
	return rec
}

// tidy drops uid's record if nothing is left in it; the lock is held.
func (r *podRecords) tidy(uid string) {
	if rec := r.byUID[uid]; rec != nil && rec.volumes == nil && rec.eviction == nil && !rec.released && !rec.collecting && rec.allocated == nil {
		delete(r.byUID, uid)
	}
}

// runningUID is the uid the runtime runs for key, or "".
func (r *podRecords) runningUID(key string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.running[key]
}

// setRunning records that the runtime runs uid for key.
func (r *podRecords) setRunning(key, uid string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.running[key] = uid
}

// stopped forgets a stopped pod: it no longer runs (unless key runs
// another uid by now), and nothing about its sandbox or containers is
// pending. Its volumes and an eviction are forgotten where they are
// carried out (dropVolumes, evicted).
func (r *podRecords) stopped(key, uid string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.running[key] == uid {
		delete(r.running, key)
	}
	if rec := r.byUID[uid]; rec != nil {
		rec.released, rec.collecting, rec.allocated = false, false, nil
		r.tidy(uid)
	}
}

// runningCount is how many pods the runtime runs.
func (r *podRecords) runningCount() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.running)
}

// snapshot copies what runs (pod key → uid) and each pod's volume paths.
func (r *podRecords) snapshot() (running map[string]string, paths map[string]map[string]string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	paths = make(map[string]map[string]string, len(r.byUID))
	for uid, rec := range r.byUID {
		if rec.volumes != nil {
			paths[uid] = rec.volumes
		}
	}
	return maps.Clone(r.running), paths
}

// keysRunning are the keys whose running pod has uid (all keys when uid
// is "").
func (r *podRecords) keysRunning(uid string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var keys []string
	for key, u := range r.running {
		if uid == "" || u == uid {
			keys = append(keys, key)
		}
	}
	return keys
}

// setVolumes records a pod's volume paths.
func (r *podRecords) setVolumes(uid string, paths map[string]string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.record(uid).volumes = paths
}

// volumes are a pod's volume paths, by volume name.
func (r *podRecords) volumes(uid string) map[string]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if rec := r.byUID[uid]; rec != nil {
		return rec.volumes
	}
	return nil
}

// dropVolumes forgets a pod's volumes (they are being torn down).
func (r *podRecords) dropVolumes(uid string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if rec := r.byUID[uid]; rec != nil {
		rec.volumes = nil
		r.tidy(uid)
	}
}

// orderEviction asks the pod's next sync to evict it.
func (r *podRecords) orderEviction(uid string, o evictionOrder) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.record(uid).eviction = &o
}

// eviction is the eviction ordered for a pod, if any.
func (r *podRecords) eviction(uid string) (evictionOrder, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if rec := r.byUID[uid]; rec != nil && rec.eviction != nil {
		return *rec.eviction, true
	}
	return evictionOrder{}, false
}

// evicted forgets a pod's eviction: it was carried out.
func (r *podRecords) evicted(uid string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if rec := r.byUID[uid]; rec != nil {
		rec.eviction = nil
		r.tidy(uid)
	}
}

// runningNotEvicting are the running pods (key → uid) with no eviction
// ordered: the eviction manager's candidates.
func (r *podRecords) runningNotEvicting() map[string]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string]string, len(r.running))
	for key, uid := range r.running {
		if rec := r.byUID[uid]; rec == nil || rec.eviction == nil {
			out[key] = uid
		}
	}
	return out
}

// settled reports whether every eviction and collection ordered is done.
func (r *podRecords) settled() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, rec := range r.byUID {
		if rec.eviction != nil || rec.collecting {
			return false
		}
	}
	return true
}

// releaseDue reports whether key runs uid and its sandbox is not yet
// given up.
func (r *podRecords) releaseDue(key, uid string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	rec := r.byUID[uid]
	return r.running[key] == uid && (rec == nil || !rec.released)
}

// markReleased records that a finished pod's sandbox was given up.
func (r *podRecords) markReleased(uid string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.record(uid).released = true
}

// collect orders the dead containers of these pods (uids) removed.
func (r *podRecords) collect(uids []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, uid := range uids {
		r.record(uid).collecting = true
	}
}

// collecting reports whether a pod's dead containers are to be removed.
func (r *podRecords) collecting(uid string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	rec := r.byUID[uid]
	return rec != nil && rec.collecting
}

// allocated are the resources a pod's containers run with (nil: none
// recorded yet, after a start or an agent restart).
func (r *podRecords) allocated(uid string) map[string]core.ResourceRequirements {
	r.mu.Lock()
	defer r.mu.Unlock()
	if rec := r.byUID[uid]; rec != nil {
		return maps.Clone(rec.allocated)
	}
	return nil
}

// allocate records the resources these containers of a pod run with.
func (r *podRecords) allocate(uid string, resources map[string]core.ResourceRequirements) {
	r.mu.Lock()
	defer r.mu.Unlock()
	rec := r.record(uid)
	if rec.allocated == nil {
		rec.allocated = map[string]core.ResourceRequirements{}
	}
	maps.Copy(rec.allocated, resources)
}
