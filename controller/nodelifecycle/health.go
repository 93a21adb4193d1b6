package nodelifecycle

import (
	"time"

	"github.com/kobune/kobune/api/core"
)

// probe is what this controller itself saw of one node's heartbeats
// (Kubernetes' nodeHealthData): the newest heartbeat, and when, on the
// controller's own clock, it first saw that heartbeat.
type probe struct {
	heartbeat time.Time // the Lease's renewTime or the Ready condition's heartbeat
	at        time.Time // when this controller saw it change
}

// heartbeat is the newest sign of life the node itself wrote: its Lease's
// renewTime or its Ready condition's lastHeartbeatTime.
func (nc *Controller) heartbeat(n *core.Node) time.Time {
	var beat time.Time
	if l, ok := nc.leases.Get(leaseNamespace, n.Name); ok && l.Spec.RenewTime != nil {
		beat = l.Spec.RenewTime.Time
	}
	for _, c := range n.Status.Conditions {
		if c.Type == core.NodeReady && c.LastHeartbeatTime.After(beat) {
			beat = c.LastHeartbeatTime.Time
		}
	}
	return beat
}

// lastSeen is when this controller last saw the node show life. The
// timestamps written by the node are only compared with each other, never
// with the controller's clock: a heartbeat counts when it is newer than the
// one seen before, and it is dated when the controller saw it. A node seen
// for the first time (this controller just started) counts as seen now, so
// after a control-plane outage — every Lease minutes old — each node gets a
// full grace period to renew before it is Unknown. A node that never wrote
// any heartbeat is dated from its creation.
func (nc *Controller) lastSeen(n *core.Node, now time.Time) time.Time {
	beat := nc.heartbeat(n)
	nc.healthMu.Lock()
	defer nc.healthMu.Unlock()
	p, ok := nc.health[n.Name]
	switch {
	case !ok && beat.IsZero():
		p = probe{at: n.CreationTimestamp.Time}
	case !ok || beat.After(p.heartbeat):
		p = probe{heartbeat: beat, at: now}
	}
	nc.health[n.Name] = p
	return p.at
}

// forget drops a deleted node's probe.
func (nc *Controller) forget(name string) {
	nc.healthMu.Lock()
	delete(nc.health, name)
	nc.healthMu.Unlock()
}

// restartProbes dates every node as seen now: on leaving full disruption
// each node gets a fresh grace period, as in Kubernetes.
func (nc *Controller) restartProbes(now time.Time) {
	nc.healthMu.Lock()
	defer nc.healthMu.Unlock()
	for name, p := range nc.health {
		p.at = now
		nc.health[name] = p
	}
}

// healthy reports whether the node counts as up: Ready True in its
// status, and a heartbeat seen within the grace period.
func (nc *Controller) healthy(n *core.Node, now time.Time) bool {
	return ready(n) == "True" && now.Sub(nc.lastSeen(n, now)) < nc.cfg.GracePeriod
}
