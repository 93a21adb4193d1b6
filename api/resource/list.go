package resource

import "slices"

// Name is a resource name such as "cpu", "memory" or "pods".
type Name string

// The resource names Kobune understands.
const (
	CPU              Name = "cpu"
	Memory           Name = "memory"
	Pods             Name = "pods"
	EphemeralStorage Name = "ephemeral-storage"
	Storage          Name = "storage"
)

// List maps resource names to quantities (requests, limits, capacity).
type List map[Name]Quantity

// Cpu returns the cpu quantity (zero if absent).
func (l List) Cpu() Quantity { return l[CPU] }

// Memory returns the memory quantity (zero if absent).
func (l List) Memory() Quantity { return l[Memory] }

// Names returns the names in sorted order, for stable printing.
func (l List) Names() []Name {
	names := make([]Name, 0, len(l))
	for n := range l {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// DeepCopy returns an independent copy.
func (l List) DeepCopy() List {
	if l == nil {
		return nil
	}
	out := make(List, len(l))
	for k, v := range l {
		out[k] = v.Copy()
	}
	return out
}
