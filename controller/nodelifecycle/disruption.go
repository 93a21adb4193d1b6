package nodelifecycle

import (
	"time"

	"github.com/kobune/kobune/api/core"
)

// Zone states, with Kubernetes' names.
const (
	stateNormal  = "Normal"
	statePartial = "PartialDisruption"
	stateFull    = "FullDisruption"
)

// Kubernetes' defaults (--unhealthy-zone-threshold, --large-cluster-size-threshold,
// --secondary-node-eviction-rate).
const (
	unhealthyZoneThreshold = 0.55
	largeClusterThreshold  = 50
	secondaryEvictionRate  = 0.01
)

// ZoneLabel groups nodes into failure zones; nodes without it share the zone "".
const ZoneLabel = core.LabelTopologyZone

// zoneState classifies a zone: Full when every node in it is unhealthy,
// Partial when more than 2 and at least 55% are, Normal otherwise.
func zoneState(unhealthy, size int) string {
	switch {
	case size > 0 && unhealthy == size:
		return stateFull
	case unhealthy > 2 && float64(unhealthy)/float64(size) >= unhealthyZoneThreshold:
		return statePartial
	}
	return stateNormal
}

// disruption is the cluster's health as the eviction decision needs it.
type disruption struct {
	// allFull: every node of every zone is unhealthy at once (Kubernetes'
	// "master disruption mode"): nothing is tainted NoExecute or evicted.
	allFull bool
	state   map[string]string // zone → state
	size    map[string]int    // zone → nodes
}

// evictionRate is how fast pods may be evicted from nodes of zone: 0 means
// not at all (no NoExecute taints either). A fully disrupted zone, when
// others are up, is a zone outage: its pods move at the normal rate. A
// partly disrupted zone slows to the secondary rate, or stops in a small
// cluster (Kubernetes: reduced or stopped eviction, ReducedQPSFunc).
func (d disruption) evictionRate(zone string, normal float64) float64 {
	if d.allFull {
		return 0
	}
	if d.state[zone] == statePartial {
		if d.size[zone] > largeClusterThreshold {
			return secondaryEvictionRate
		}
		return 0
	}
	return normal
}

// observeDisruption computes every zone's state from the cached nodes and
// notices when the cluster enters or leaves full disruption: entering,
// every node is looked at again (their NoExecute taints go); leaving, every
// node gets a fresh grace period, as in Kubernetes.
func (nc *Controller) observeDisruption(now time.Time) disruption {
	nc.disruptionMu.Lock()
	if last := nc.lastDisruption; last != nil && !now.Before(nc.lastDisruptionAt) && now.Sub(nc.lastDisruptionAt) < time.Second {
		nc.disruptionMu.Unlock()
		return *last
	}
	nc.disruptionMu.Unlock()
	nodes := nc.nodes.List()
	d := disruption{state: map[string]string{}, size: map[string]int{}}
	unhealthy := map[string]int{}
	for _, n := range nodes {
		z := n.Labels[ZoneLabel]
		d.size[z]++
		if !nc.healthy(n, now) {
			unhealthy[z]++
		}
	}
	d.allFull = len(nodes) > 0
	for z, size := range d.size {
		d.state[z] = zoneState(unhealthy[z], size)
		d.allFull = d.allFull && d.state[z] == stateFull
	}
	nc.disruptionMu.Lock()
	was := nc.fullDisruption
	nc.fullDisruption = d.allFull
	nc.lastDisruption, nc.lastDisruptionAt = &d, now
	nc.disruptionMu.Unlock()
	switch {
	case d.allFull && !was:
		nc.Loop.Logf("%s: every node is unhealthy (%d): entering full disruption mode, no NoExecute taints and no evictions until one is back", Name, len(nodes))
		nc.requeueAll(nodes)
	case !d.allFull && was:
		nc.Loop.Logf("%s: a node is healthy again: leaving full disruption mode; every node gets a fresh grace period of %v", Name, nc.cfg.GracePeriod)
		nc.restartProbes(now)
		nc.requeueAll(nodes)
	}
	return d
}

// forgetDisruption drops the last look: a node or Lease changed.
func (nc *Controller) forgetDisruption() {
	nc.disruptionMu.Lock()
	nc.lastDisruption = nil
	nc.disruptionMu.Unlock()
}

func (nc *Controller) inFullDisruption() bool {
	nc.disruptionMu.Lock()
	defer nc.disruptionMu.Unlock()
	return nc.fullDisruption
}

func (nc *Controller) requeueAll(nodes []*core.Node) {
	for _, n := range nodes {
		nc.Loop.Queue.Add(n.Name)
	}
}
