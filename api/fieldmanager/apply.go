package fieldmanager

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/kobune/kobune/api/k8sapi"
	"github.com/kobune/kobune/api/patch"
)

// Operations of a managedFields entry.
const (
	OperationApply  = "Apply"
	OperationUpdate = "Update"
)

// Entry is one metadata.managedFields entry.
type Entry struct {
	Manager     string `json:"manager,omitempty"`
	Operation   string `json:"operation,omitempty"`
	APIVersion  string `json:"apiVersion,omitempty"`
	Time        string `json:"time,omitempty"`
	FieldsType  string `json:"fieldsType,omitempty"`
	FieldsV1    Set    `json:"fieldsV1,omitempty"`
	Subresource string `json:"subresource,omitempty"`
}

// Conflict is a field another manager owns with another value.
type Conflict struct {
	Manager, APIVersion, Field string
}

// ConflictError is an apply that would take fields other managers own
// (Kubernetes answers 409 with these as the causes).
type ConflictError struct{ Conflicts []Conflict }

func (e *ConflictError) Error() string {
	var parts []string
	for _, c := range e.Conflicts {
		parts = append(parts, fmt.Sprintf("conflict with %q using %s: %s", c.Manager, c.APIVersion, c.Field))
	}
	n := len(e.Conflicts)
	s := "s"
	if n == 1 {
		s = ""
	}
	return fmt.Sprintf("Apply failed with %d conflict%s: %s", n, s, strings.Join(parts, "\n"))
}

// Request is one server-side apply.
type Request struct {
	// Live is the stored object (nil: the apply creates it); Applied the
	// configuration applied.
	Live, Applied map[string]any
	Entries       []Entry
	Manager       string
	// Subresource is "status" for an apply to the status subresource:
	// the manager's entry for it is another than for the main resource.
	Subresource string
	Force       bool
	Type        *k8sapi.Type
	APIVersion  string
	Now         string
}

// Apply merges an applied configuration into the live object: the
// manager comes to own exactly the fields it applied, fields it applied
// before and no longer does are removed unless another manager owns them,
// and a field another manager owns with a different value is a conflict
// (taken over with Force).
func Apply(r Request) (map[string]any, []Entry, error) {
	applied := FieldsOf(r.Applied, r.Type)
	self := -1
	for i, e := range r.Entries {
		if e.Manager == r.Manager && e.Operation == OperationApply && e.Subresource == r.Subresource {
			self = i
		}
	}
	var conflicts []Conflict
	var taken []struct {
		entry int
		path  []string
	}
	for _, p := range applied.Leaves() {
		if p[len(p)-1] == "." {
			continue // owning a list item is no value to differ on
		}
		want, _ := Lookup(r.Applied, p)
		have, ok := Lookup(r.Live, p)
		if !ok || jsonEqual(want, have) {
			continue
		}
		for i, e := range r.Entries {
			if i == self || !e.FieldsV1.Has(p) {
				continue
			}
			conflicts = append(conflicts, Conflict{Manager: e.Manager, APIVersion: e.APIVersion, Field: PathString(p)})
			taken = append(taken, struct {
				entry int
				path  []string
			}{i, p})
		}
	}
	if len(conflicts) > 0 && !r.Force {
		sort.Slice(conflicts, func(i, j int) bool { return conflicts[i].Field < conflicts[j].Field })
		return nil, nil, &ConflictError{Conflicts: conflicts}
	}
	entries := make([]Entry, len(r.Entries))
	for i, e := range r.Entries {
		c := Set{}
		c.Union(e.FieldsV1)
		e.FieldsV1 = c
		entries[i] = e
	}
	for _, t := range taken {
		entries[t.entry].FieldsV1.Remove(t.path)
	}

	// The merge: the applied configuration as a strategic merge patch.
	liveJSON := []byte("{}")
	if r.Live != nil {
		liveJSON, _ = json.Marshal(r.Live)
	}
	appliedJSON, _ := json.Marshal(r.Applied)
	mergedJSON, err := patch.MergeApplied(liveJSON, appliedJSON, r.Type)
	if err != nil {
		return nil, nil, err
	}
	var merged map[string]any
	if err := json.Unmarshal(mergedJSON, &merged); err != nil {
		return nil, nil, err
	}
	// What this manager applied before and no longer applies goes,
	// unless someone else owns it too.
	if self >= 0 {
		for _, p := range r.Entries[self].FieldsV1.Leaves() {
			if applied.Has(p) {
				continue
			}
			item := p
			if p[len(p)-1] == "." {
				item = p[:len(p)-1]
			}
			owned := false
			for i, e := range entries {
				if i != self && e.FieldsV1.Has(item) {
					owned = true
				}
			}
			if !owned && !applied.Has(item) {
				Delete(merged, item)
			}
		}
	}
	mine := Entry{Manager: r.Manager, Operation: OperationApply, APIVersion: r.APIVersion, Time: r.Now, FieldsType: "FieldsV1", FieldsV1: applied,
		Subresource: r.Subresource}
	if self >= 0 {
		entries[self] = mine
	} else {
		entries = append(entries, mine)
	}
	return merged, compact(entries), nil
}

// Update records a write that is not an apply (create, update, patch) by
// manager: the fields it changed become its own and no one else's, and
// the fields it removed no one's. Objects no apply ever touched carry no
// managedFields, and writes to them record nothing (entries nil).
func Update(old, updated map[string]any, entries []Entry, manager, subresource string, t *k8sapi.Type, apiVersion, now string) []Entry {
	if len(entries) == 0 {
		return nil
	}
	oldSet, newSet := FieldsOf(old, t), FieldsOf(updated, t)
	out := make([]Entry, len(entries))
	for i, e := range entries {
		c := Set{}
		c.Union(e.FieldsV1)
		e.FieldsV1 = c
		out[i] = e
	}
	for _, p := range oldSet.Leaves() {
		if !newSet.Has(p) {
			for i := range out {
				out[i].FieldsV1.Remove(p)
			}
		}
	}
	changed := Set{}
	for _, p := range newSet.Leaves() {
		was, ok := Lookup(old, p)
		now, _ := Lookup(updated, p)
		if ok && (p[len(p)-1] == "." || jsonEqual(was, now)) {
			continue
		}
		for i := range out {
			out[i].FieldsV1.Remove(p)
		}
		addPath(changed, p)
	}
	self := -1
	for i, e := range out {
		if e.Manager == manager && e.Operation == OperationUpdate && e.Subresource == subresource {
			self = i
		}
	}
	if len(changed) > 0 {
		if self < 0 {
			out = append(out, Entry{Manager: manager, Operation: OperationUpdate, APIVersion: apiVersion, FieldsType: "FieldsV1", FieldsV1: Set{}, Subresource: subresource})
			self = len(out) - 1
		}
		out[self].FieldsV1.Union(changed)
		out[self].Time, out[self].APIVersion = now, apiVersion
	}
	return compact(out)
}

func addPath(s Set, p []string) {
	n := s
	for _, e := range p {
		c, ok := n[e]
		if !ok {
			c = Set{}
			n[e] = c
		}
		n = c
	}
}

// compact drops entries that own nothing any more.
func compact(entries []Entry) []Entry {
	out := entries[:0]
	for _, e := range entries {
		if len(e.FieldsV1) > 0 {
			out = append(out, e)
		}
	}
	return out
}

func jsonEqual(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}
