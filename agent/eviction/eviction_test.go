package eviction

import (
	"strings"
	"testing"
	"time"

	"github.com/kobune/kobune/api/core"
)

func TestParse(t *testing.T) {
	th, err := Parse(Config{Hard: "memory.available<100Mi,nodefs.available<10%", Soft: "memory.available<300Mi", SoftGracePeriod: "memory.available=30s", MinimumReclaim: "memory.available=50Mi"})
	if err != nil {
		t.Fatal(err)
	}
	if len(th) != 3 || th[0].Value.Of(0) != 100<<20 || th[1].Value.Of(1000) != 100 || !th[2].Soft || th[2].GracePeriod != 30*time.Second || th[0].MinReclaim.Of(0) != 50<<20 {
		t.Errorf("%+v", th)
	}
	for _, bad := range []Config{{Hard: "memory.free<1Gi"}, {Hard: "memory.available>1Gi"}, {Hard: "nodefs.available<120%"}, {Soft: "memory.available<1Gi"},
		{Hard: "memory.available<1Gi", SoftGracePeriod: "memory.available=10s"}} {
		if _, err := Parse(bad); err == nil {
			t.Errorf("%+v: no error", bad)
		}
	}
}

// TestObserve: a hard threshold acts at once; a soft one after its grace
// period; once reclaiming, the minimum reclaim must be freed too; the
// condition stays for the transition period.
func TestObserve(t *testing.T) {
	th, _ := Parse(Config{Hard: "memory.available<100", Soft: "nodefs.available<50%", SoftGracePeriod: "nodefs.available=10s", MinimumReclaim: "memory.available=20"})
	m := &Manager{Thresholds: th, Transition: 30 * time.Second}
	t0 := time.Unix(1000, 0)
	obs := func(mem, disk int64) map[Signal]Observation {
		return map[Signal]Observation{MemoryAvailable: {Available: mem, Capacity: 1000}, NodeFsAvailable: {Available: disk, Capacity: 1000}}
	}
	r := m.Observe(t0, obs(90, 900))
	if r.Reclaim == nil || r.Reclaim.Signal != MemoryAvailable || r.Need != 10 || !r.Conditions[core.NodeMemoryPressure] {
		t.Fatalf("hard memory: %+v", r)
	}
	if r := m.Observe(t0.Add(time.Second), obs(110, 900)); r.Reclaim == nil || r.Need != 10 {
		t.Errorf("110 available but 100+20 to be clear once reclaiming: %+v", r)
	}
	if r := m.Observe(t0.Add(2*time.Second), obs(130, 900)); r.Reclaim != nil || !r.Conditions[core.NodeMemoryPressure] {
		t.Errorf("clear, within the transition period: %+v", r)
	}
	if r := m.Observe(t0.Add(40*time.Second), obs(130, 900)); r.Conditions[core.NodeMemoryPressure] {
		t.Errorf("after the transition period: %+v", r)
	}
	if r := m.Observe(t0.Add(50*time.Second), obs(500, 400)); r.Reclaim != nil || !r.Conditions[core.NodeDiskPressure] {
		t.Errorf("soft disk threshold within its grace: %+v", r)
	}
	if r := m.Observe(t0.Add(61*time.Second), obs(500, 400)); r.Reclaim == nil || r.Reclaim.Signal != NodeFsAvailable {
		t.Errorf("soft disk threshold after its grace: %+v", r)
	}
}

// TestRank: pods over their requests first (a BestEffort pod always is),
// by priority, then by how far over; then the others the same way (a
// Guaranteed pod never is over); PIDs by priority then processes.
func TestRank(t *testing.T) {
	pods := []PodUsage{
		{Key: "guaranteed", Memory: 80, MemoryRequest: 100},
		{Key: "burstable-under", Memory: 40, MemoryRequest: 50},
		{Key: "burstable-over", Memory: 80, MemoryRequest: 50},
		{Key: "besteffort", Memory: 120},
		{Key: "besteffort-important", Memory: 500, Priority: 1000},
	}
	var got []string
	for _, p := range Rank(MemoryAvailable, pods) {
		got = append(got, p.Key)
	}
	if want := "besteffort,burstable-over,besteffort-important,burstable-under,guaranteed"; strings.Join(got, ",") != want {
		t.Errorf("memory ranking %v, want %s", got, want)
	}
	got = nil
	for _, p := range Rank(PIDAvailable, []PodUsage{{Key: "a", Processes: 5}, {Key: "b", Processes: 50}, {Key: "c", Processes: 500, Priority: 10}}) {
		got = append(got, p.Key)
	}
	if strings.Join(got, ",") != "b,a,c" {
		t.Errorf("pid ranking %v", got)
	}
}
