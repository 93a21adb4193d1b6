package agent

import (
	"slices"
	"testing"
)

// TestPodRecords: one record per pod carries what the agent did about it,
// a pod replaced under the same name keeps running when the old one
// stops, an ordered eviction takes a pod out of the candidates until it
// is carried out, and a stopped pod leaves nothing behind (the agent runs
// for months: a record per pod ever seen would grow without end).
func TestPodRecords(t *testing.T) {
	r := newPodRecords()
	r.setRunning("ns/web", "old")
	r.setVolumes("old", map[string]string{"data": "/var/lib/kobune/pods/old/volumes/data"})
	r.setRunning("ns/web", "new") // replaced: the same name, another pod
	r.setRunning("ns/db", "db1")
	r.orderEviction("db1", evictionOrder{message: "memory"})
	if got := r.runningNotEvicting(); len(got) != 1 || got["ns/web"] != "new" {
		t.Errorf("eviction candidates %v, want only ns/web (db1 has an eviction ordered)", got)
	}
	if r.settled() {
		t.Error("settled with an eviction pending")
	}
	if o, ok := r.eviction("db1"); !ok || o.message != "memory" {
		t.Errorf("eviction of db1: %v %v", o, ok)
	}
	r.dropVolumes("old")
	r.stopped("ns/web", "old")
	if got := r.runningUID("ns/web"); got != "new" {
		t.Errorf("after the old pod stopped, ns/web runs %q, want the new one", got)
	}
	r.evicted("db1")
	r.stopped("ns/db", "db1")
	r.collect([]string{"new"})
	if !r.collecting("new") || r.settled() {
		t.Error("a collection ordered is pending until the pod stops")
	}
	if keys := r.keysRunning(""); !slices.Equal(keys, []string{"ns/web"}) {
		t.Errorf("running keys %v", keys)
	}
	r.stopped("ns/web", "new")
	if !r.settled() || r.runningCount() != 0 || len(r.byUID) != 0 {
		t.Errorf("after every pod stopped: settled %v, %d running, %d records left %v", r.settled(), r.runningCount(), len(r.byUID), r.byUID)
	}
}
