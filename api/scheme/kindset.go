package scheme

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync/atomic"

	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/api/validation"
)

// Kinds is the set of kinds one API server serves: the built-in ones,
// fixed at compile time, and those its CustomResourceDefinitions add and
// remove at run time. Readers see one consistent set (the custom kinds are
// swapped whole, never edited in place), so a request that resolved a
// kind keeps it even if its definition is deleted meanwhile. A nil *Kinds
// is the built-in kinds alone.
//
// It mirrors what kube-apiserver spreads over its REST storage map and
// apiextensions-apiserver's crdHandler (which serves a definition's kind
// from the moment the definition is Established).
type Kinds struct {
	custom atomic.Pointer[customIndex]
}

type customIndex struct {
	byResource map[string]*Kind // "widgets.example.com"
	list       []*Kind
}

// CustomVersion returns a value that changes exactly when the custom
// kinds do (what a cache of something made from them is keyed by).
func (s *Kinds) CustomVersion() any {
	if ix := s.index(); ix != nil {
		return ix
	}
	return nil
}

// NewKinds returns the built-in kinds and no custom ones.
func NewKinds() *Kinds { return &Kinds{} }

// SetCustom replaces the custom kinds.
func (s *Kinds) SetCustom(kinds []*Kind) {
	ix := &customIndex{byResource: make(map[string]*Kind, len(kinds)), list: kinds}
	for _, k := range kinds {
		ix.byResource[k.Resource] = k
	}
	s.custom.Store(ix)
}

func (s *Kinds) index() *customIndex {
	if s == nil {
		return nil
	}
	return s.custom.Load()
}

// Custom returns the custom kinds.
func (s *Kinds) Custom() []*Kind {
	if ix := s.index(); ix != nil {
		return ix.list
	}
	return nil
}

// ByResource finds a kind by its Resource: a built-in kind's resource
// name ("pods") or a custom kind's qualified one ("widgets.example.com").
func (s *Kinds) ByResource(resource string) (*Kind, bool) {
	if k, ok := byResource[resource]; ok {
		return k, true
	}
	if ix := s.index(); ix != nil {
		k, ok := ix.byResource[resource]
		return k, ok
	}
	return nil, false
}

// ForURL finds the kind a URL's group, version and resource name, and
// the conversion when the version is not the stored one.
func (s *Kinds) ForURL(group, version, resource string) (*Kind, *Version, bool) {
	gv := version
	if group != "" {
		gv = group + "/" + version
	}
	if k, ok := byResource[resource]; ok {
		if k.APIVersion == gv {
			return k, nil, true
		}
		if v, ok := k.ServedAt(gv); ok { // events.k8s.io/v1 events
			return k, v, true
		}
	}
	k, ok := s.ByResource(resource + "." + group)
	if !ok || k.Custom == nil {
		return nil, nil, false
	}
	if k.APIVersion == gv {
		return k, nil, true
	}
	if v, ok := k.ServedAt(gv); ok {
		return k, v, true
	}
	return nil, nil, false
}

// All returns every kind, built-in and custom, sorted by resource.
func (s *Kinds) All() []*Kind {
	out := append(append([]*Kind(nil), kinds...), s.Custom()...)
	sort.Slice(out, func(i, j int) bool { return out[i].Resource < out[j].Resource })
	return out
}

// ByKind finds a kind by apiVersion and kind, custom kinds included.
func (s *Kinds) ByKind(apiVersion, kind string) (*Kind, error) {
	k, err := ByKind(apiVersion, kind)
	if err == nil {
		return k, nil
	}
	for _, c := range s.Custom() {
		if c.Kind != kind {
			continue
		}
		if c.APIVersion == apiVersion {
			return c, nil
		}
		if _, ok := c.ServedAt(apiVersion); ok {
			return c, nil
		}
	}
	return nil, err
}

// Lookup finds a kind as Lookup does, custom kinds included (by plural,
// singular, short name or kind, or "plural.group").
func (s *Kinds) Lookup(name string) (*Kind, error) {
	k, err := Lookup(name)
	if err == nil {
		return k, nil
	}
	n := strings.ToLower(name)
	for _, c := range s.Custom() {
		if n == c.Resource || n == c.Plural || n == strings.ToLower(c.Kind) || c.Custom.Singular == n {
			return c, nil
		}
		for _, sn := range c.ShortNames {
			if n == sn {
				return c, nil
			}
		}
	}
	return nil, err
}

// CustomKindSpec names a kind a CustomResourceDefinition adds.
type CustomKindSpec struct {
	Group, Kind, Plural, Singular string
	// StorageVersion is the version objects are stored in; OtherVersions
	// the other served ones (only apiVersion differs between them).
	StorageVersion string
	OtherVersions  []string
	Namespaced     bool
	HasStatus      bool
	ShortNames     []string
	Categories     []string
	// ConvertedByServer: the versions differ in more than apiVersion (a
	// conversion webhook's kind, as discovery says): an object of another
	// version is sent as it is written, for the server to convert.
	ConvertedByServer bool
}

// NewCustomKind returns the kind spec names, as a client sees it: its
// objects are meta.Unstructured, decoded as they are written. The API
// server adds its schema's pruning, defaulting and validation
// (apiserver/apiextensions).
func NewCustomKind(spec CustomKindSpec) *Kind {
	gv := func(version string) string { return spec.Group + "/" + version }
	k := &Kind{
		Kind: spec.Kind, APIVersion: gv(spec.StorageVersion), Resource: spec.Plural + "." + spec.Group, Plural: spec.Plural,
		ShortNames: spec.ShortNames, Namespaced: spec.Namespaced, HasStatus: spec.HasStatus,
		New:      func() meta.Object { return &meta.Unstructured{} },
		Validate: func(meta.Object) validation.ErrorList { return nil },
	}
	k.Custom = &Custom{Singular: spec.Singular, Categories: spec.Categories,
		Decode: func(data []byte) (meta.Object, []string, error) {
			u := &meta.Unstructured{}
			return u, nil, json.Unmarshal(data, u)
		}}
	for _, v := range spec.OtherVersions {
		if spec.ConvertedByServer {
			same := func(b []byte) ([]byte, error) { return b, nil }
			k.Versions = append(k.Versions, Version{APIVersion: gv(v), ToStored: same, FromStored: same})
			continue
		}
		k.Versions = append(k.Versions, Version{APIVersion: gv(v), ToStored: withAPIVersion(gv(spec.StorageVersion)), FromStored: withAPIVersion(gv(v))})
	}
	return k
}

// withAPIVersion converts an object of a custom kind between its versions:
// only apiVersion changes (conversion strategy None).
func withAPIVersion(apiVersion string) func([]byte) ([]byte, error) {
	return func(b []byte) ([]byte, error) {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(b, &m); err != nil {
			return nil, err
		}
		if m == nil {
			return nil, fmt.Errorf("an object must be a JSON object")
		}
		av, _ := json.Marshal(apiVersion)
		m["apiVersion"] = av
		return json.Marshal(m)
	}
}
