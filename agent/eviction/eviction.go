// Package eviction is kobune-agent's eviction manager, the kubelet's of
// that name: it compares the node's signals — memory.available,
// nodefs.available, nodefs.inodesFree, imagefs.available, pid.available
// — with hard and soft thresholds (soft ones only after their grace
// period), reports the pressure conditions they imply (kept for a
// transition period after the last crossing, so they do not flap), and
// ranks the pods to evict as the kubelet ranks them: for memory and disk,
// pods using more than they requested first, then lower priority, then
// larger use above the request; for PIDs, lower priority, then more
// processes. The agent (evictionmanager.go) feeds it observations every
// second and evicts the first pod of the ranking while a threshold holds.
package eviction

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/resource"
)

// Signal is an eviction signal.
type Signal string

// The signals.
const (
	MemoryAvailable  Signal = "memory.available"
	NodeFsAvailable  Signal = "nodefs.available"
	NodeFsInodesFree Signal = "nodefs.inodesFree"
	ImageFsAvailable Signal = "imagefs.available"
	PIDAvailable     Signal = "pid.available"
)

var signals = map[Signal]bool{MemoryAvailable: true, NodeFsAvailable: true, NodeFsInodesFree: true, ImageFsAvailable: true, PIDAvailable: true}

// Condition is the node condition a signal drives.
func (s Signal) Condition() core.NodeConditionType {
	switch s {
	case MemoryAvailable:
		return core.NodeMemoryPressure
	case PIDAvailable:
		return core.NodePIDPressure
	}
	return core.NodeDiskPressure
}

// Resource is what a signal's pressure is short of, in messages.
func (s Signal) Resource() string {
	switch s {
	case MemoryAvailable:
		return "memory"
	case PIDAvailable:
		return "pids"
	case NodeFsInodesFree:
		return "inodes"
	}
	return "ephemeral-storage"
}

// Value is a quantity or a percentage of the signal's capacity.
type Value struct {
	Quantity   *resource.Quantity
	Percentage float64
}

// Of is the value in the signal's unit for a capacity.
func (v Value) Of(capacity int64) int64 {
	if v.Quantity != nil {
		return v.Quantity.Value()
	}
	return int64(float64(capacity) * v.Percentage)
}

func (v Value) String() string {
	if v.Quantity != nil {
		return v.Quantity.String()
	}
	return strconv.FormatFloat(v.Percentage*100, 'f', -1, 64) + "%"
}

// Threshold is "signal < value": hard (GracePeriod 0) or soft.
type Threshold struct {
	Signal      Signal
	Value       Value
	Soft        bool
	GracePeriod time.Duration
	MinReclaim  Value
}

// Observation is a signal's current available amount and its capacity.
type Observation struct {
	Available, Capacity int64
}

// Config is the kubelet-shaped flags.
type Config struct {
	Hard, Soft, SoftGracePeriod, MinimumReclaim string
	// PressureTransitionPeriod keeps a condition True this long after
	// its threshold was last met.
	PressureTransitionPeriod time.Duration
}

// Parse reads the flags: "memory.available<100Mi,nodefs.available<10%",
// grace periods "memory.available=30s", minimum reclaims
// "memory.available=50Mi".
func Parse(c Config) ([]Threshold, error) {
	var out []Threshold
	for _, f := range []struct {
		flag, value string
		soft        bool
	}{{"--eviction-hard", c.Hard, false}, {"--eviction-soft", c.Soft, true}} {
		for _, item := range splitList(f.value) {
			name, val, ok := strings.Cut(item, "<")
			if !ok {
				return nil, fmt.Errorf("%s: %q: want SIGNAL<QUANTITY or SIGNAL<PERCENT%%, as memory.available<100Mi", f.flag, item)
			}
			s := Signal(name)
			if !signals[s] {
				return nil, fmt.Errorf("%s: unknown signal %q: use memory.available, nodefs.available, nodefs.inodesFree, imagefs.available or pid.available", f.flag, name)
			}
			v, err := parseValue(val)
			if err != nil {
				return nil, fmt.Errorf("%s: %s: %v", f.flag, item, err)
			}
			out = append(out, Threshold{Signal: s, Value: v, Soft: f.soft})
		}
	}
	graces, err := parseMap("--eviction-soft-grace-period", c.SoftGracePeriod)
	if err != nil {
		return nil, err
	}
	reclaims, err := parseMap("--eviction-minimum-reclaim", c.MinimumReclaim)
	if err != nil {
		return nil, err
	}
	for i := range out {
		t := &out[i]
		if g, ok := graces[t.Signal]; ok && t.Soft {
			d, err := time.ParseDuration(g)
			if err != nil || d < 0 {
				return nil, fmt.Errorf("--eviction-soft-grace-period: %s=%s: a duration such as 30s", t.Signal, g)
			}
			t.GracePeriod = d
			delete(graces, t.Signal)
		} else if t.Soft {
			return nil, fmt.Errorf("--eviction-soft: %s needs a grace period in --eviction-soft-grace-period", t.Signal)
		}
		if r, ok := reclaims[t.Signal]; ok {
			v, err := parseValue(r)
			if err != nil {
				return nil, fmt.Errorf("--eviction-minimum-reclaim: %s=%s: %v", t.Signal, r, err)
			}
			t.MinReclaim = v
		}
	}
	for s := range graces {
		return nil, fmt.Errorf("--eviction-soft-grace-period: %s has no soft threshold", s)
	}
	return out, nil
}

func splitList(s string) []string {
	var out []string
	for _, item := range strings.Split(s, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}

func parseMap(flag, s string) (map[Signal]string, error) {
	out := map[Signal]string{}
	for _, item := range splitList(s) {
		k, v, ok := strings.Cut(item, "=")
		if !ok || !signals[Signal(k)] {
			return nil, fmt.Errorf("%s: %q: want SIGNAL=VALUE with a known signal", flag, item)
		}
		out[Signal(k)] = v
	}
	return out, nil
}

func parseValue(s string) (Value, error) {
	if p, ok := strings.CutSuffix(s, "%"); ok {
		f, err := strconv.ParseFloat(p, 64)
		if err != nil || f < 0 || f > 100 {
			return Value{}, fmt.Errorf("%q: a percentage from 0%% to 100%%", s)
		}
		return Value{Percentage: f / 100}, nil
	}
	q, err := resource.ParseQuantity(s)
	if err != nil || q.Sign() < 0 {
		return Value{}, fmt.Errorf("%q: a quantity such as 100Mi", s)
	}
	return Value{Quantity: &q}, nil
}

// Manager tracks when thresholds were met.
type Manager struct {
	Thresholds []Threshold
	Transition time.Duration
	firstMet   map[int]time.Time // soft thresholds met since
	lastMet    map[core.NodeConditionType]time.Time
	pressured  map[Signal]bool
}

// Result is one round's verdict.
type Result struct {
	// Conditions are True for pressure the node is under (or was, within
	// the transition period).
	Conditions map[core.NodeConditionType]bool
	// Reclaim is the threshold to act on now (nil: none), and Need how
	// much of its signal to free to be clear of it (min reclaim included).
	Reclaim *Threshold
	Need    int64
}

// Observe judges one round of observations.
func (m *Manager) Observe(now time.Time, obs map[Signal]Observation) Result {
	if m.firstMet == nil {
		m.firstMet, m.lastMet, m.pressured = map[int]time.Time{}, map[core.NodeConditionType]time.Time{}, map[Signal]bool{}
	}
	res := Result{Conditions: map[core.NodeConditionType]bool{}}
	pressuredNow := map[Signal]bool{}
	for i := range m.Thresholds {
		t := &m.Thresholds[i]
		o, ok := obs[t.Signal]
		if !ok {
			continue
		}
		limit := t.Value.Of(o.Capacity)
		if m.pressured[t.Signal] {
			limit += t.MinReclaim.Of(o.Capacity) // once reclaiming, free the minimum more
		}
		if o.Available >= limit {
			delete(m.firstMet, i)
			continue
		}
		m.lastMet[t.Signal.Condition()] = now
		if t.Soft {
			first, ok := m.firstMet[i]
			if !ok {
				m.firstMet[i] = now
				first = now
			}
			if now.Sub(first) < t.GracePeriod {
				continue
			}
		}
		pressuredNow[t.Signal] = true
		if res.Reclaim == nil || !t.Soft && res.Reclaim.Soft {
			res.Reclaim, res.Need = t, limit-o.Available
		}
	}
	m.pressured = pressuredNow
	for c, at := range m.lastMet {
		if now.Sub(at) <= m.Transition {
			res.Conditions[c] = true
		}
	}
	return res
}

// PodUsage is what ranking needs of one pod.
type PodUsage struct {
	Key      string
	Pod      *core.Pod
	Priority int32
	// Memory and disk use and requests (bytes), processes.
	Memory, MemoryRequest int64
	Disk, DiskRequest     int64
	Processes             int64
}

// Rank orders the pods to evict for a signal, first to go first.
func Rank(s Signal, pods []PodUsage) []PodUsage {
	out := append([]PodUsage(nil), pods...)
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if s == PIDAvailable {
			if a.Priority != b.Priority {
				return a.Priority < b.Priority
			}
			return a.Processes > b.Processes
		}
		use := func(p PodUsage) (int64, int64) { return p.Memory, p.MemoryRequest }
		if s != MemoryAvailable {
			use = func(p PodUsage) (int64, int64) { return p.Disk, p.DiskRequest }
		}
		au, ar := use(a)
		bu, br := use(b)
		if (au > ar) != (bu > br) {
			return au > ar // exceeding its request goes first
		}
		if a.Priority != b.Priority {
			return a.Priority < b.Priority
		}
		return au-ar > bu-br
	})
	return out
}
