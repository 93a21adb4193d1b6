package scheme

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"

	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/api/validation"
)

// Kind describes one API kind.
type Kind struct {
	Kind       string // "Deployment"
	APIVersion string // "apps/v1"
	Resource   string // "deployments": the name in API calls and etcd keys
	ShortNames []string
	Namespaced bool
	// HasStatus is true when status is a subresource: ordinary updates keep
	// the stored status and UpdateStatus keeps the stored spec.
	HasStatus bool
	New       func() meta.Object
	// Default fills defaulted fields; nil when the kind has none.
	Default func(meta.Object)
	// Validate checks a new object; ValidateUpdate (optional) adds the rules
	// that compare with the stored object, such as immutable fields.
	Validate       func(meta.Object) validation.ErrorList
	ValidateUpdate func(newObj, oldObj meta.Object) validation.ErrorList
	// ValidateCreate (optional) adds the rules only a new object obeys (a
	// pod has no ephemeral containers at creation).
	ValidateCreate func(meta.Object) validation.ErrorList
	// ValidateStatus (optional) checks a status write (the status
	// subresource): the rules of the status a client may write, as
	// kube-apiserver's status strategies check them; the rest of the
	// object is the stored one.
	ValidateStatus func(newObj, oldObj meta.Object) validation.ErrorList
	// Fields returns the kind's selectable fields beyond metadata.name and
	// metadata.namespace, for field selectors.
	Fields func(meta.Object) map[string]string
	// Versions are the other apiVersions the kind is served at, each
	// converted to and from the stored one (APIVersion, which discovery
	// prefers), as Kubernetes serves autoscaling/v1 HorizontalPodAutoscalers
	// beside autoscaling/v2.
	Versions []Version
	// Plural is the resource's name in URLs, discovery, RBAC rules and
	// messages when it differs from Resource: a custom kind's Resource is
	// "widgets.example.com" (unique across groups: its key in etcd, in the
	// gRPC API and in Kinds), its Plural "widgets". Empty for built-in
	// kinds, whose Resource is both.
	Plural string
	// Custom is set on a kind a CustomResourceDefinition added.
	Custom *Custom
	// Warning, when set, is sent with every request at APIVersion (a
	// deprecated storage version of a custom kind).
	Warning string
}

// Custom is what a kind added at run time does differently from a built-in
// one: its objects are meta.Unstructured, decoded, pruned and checked
// against the definition's schema rather than a Go type.
type Custom struct {
	// Decode decodes a request's body and prunes it; unknown lists the
	// paths of the fields pruned (what a built-in kind's decoder calls
	// unknown fields).
	Decode func(data []byte) (o meta.Object, unknown []string, err error)
	// Singular is the singular resource name ("widget").
	Singular string
	// Categories are the definition's categories (kubectl get all).
	Categories []string
	// Definition is the CustomResourceDefinition the kind was made from.
	Definition any
	// Columns are the columns of get's table (the definition's
	// additionalPrinterColumns; api/printers prints them). None: NAME, AGE.
	Columns []Column
	// ReadDefaulted, when set, is the object as it is read from storage:
	// the schema's defaults applied to what it lacks (a default added to
	// the schema after the object was written shows on every read, as
	// Kubernetes defaults what it decodes from etcd), resourceVersion set.
	// Set only when the schema has a default; false: answer the stored
	// bytes as they are.
	ReadDefaulted func(stored []byte, resourceVersion string) ([]byte, bool)
	// Scale, when set, is the scale subresource: where the object keeps
	// its desired and current replicas and its selector (JSON paths such
	// as .spec.replicas; the selector a string, as .status.selector).
	Scale *ScalePaths
	// Convert, when set, converts objects of any served version to
	// apiVersion (the definition's conversion webhook: versions differ in
	// more than apiVersion); objects already there are left as they are.
	// Unset: conversion None, only apiVersion changes (Versions' funcs).
	// The API server converts; a client sends an object in the version it
	// was written in and leaves converting to the server.
	Convert func(ctx context.Context, objs [][]byte, apiVersion string) ([][]byte, error)
}

// ScalePaths are a custom kind's scale subresource.
type ScalePaths struct {
	SpecReplicas, StatusReplicas, LabelSelector string
}

// Column is one of a custom kind's printer columns: its header, type and
// JSONPath; a column of priority 0 is in the narrow table, every one in
// -o wide.
type Column struct {
	Name, Type, Format, Description, JSONPath string
	Priority                                  int32
}

// Version is another apiVersion of a kind: its JSON converts to the
// stored version's and back.
type Version struct {
	APIVersion string
	// Warning, when set, is sent with every request at this version
	// (a deprecated version of a custom kind).
	Warning    string
	ToStored   func([]byte) ([]byte, error)
	FromStored func([]byte) ([]byte, error)
	// Fields, when set, are this version's selectable fields, read from
	// an object at this version (a custom kind whose versions a webhook
	// converts: each version selects by its own fields).
	Fields func(meta.Object) map[string]string
}

// AtVersion is the kind as a field selector at version v sees it: v's
// selectable fields instead of the stored version's.
func (k *Kind) AtVersion(v *Version) *Kind {
	if v == nil || v.Fields == nil {
		return k
	}
	c := *k
	c.Fields = v.Fields
	return &c
}

// ServedAt returns the conversion of apiVersion, when the kind is served
// there besides its stored version.
func (k *Kind) ServedAt(apiVersion string) (*Version, bool) {
	for i := range k.Versions {
		if k.Versions[i].APIVersion == apiVersion {
			return &k.Versions[i], true
		}
	}
	return nil, false
}

// PluralName is the resource's name in URLs and RBAC rules ("widgets").
func (k *Kind) PluralName() string {
	if k.Plural != "" {
		return k.Plural
	}
	return k.Resource
}

// Group returns the API group ("" for the core group).
func (k *Kind) Group() string {
	if g, _, ok := strings.Cut(k.APIVersion, "/"); ok {
		return g
	}
	return ""
}

// QualifiedResource returns "deployments.apps" (or "pods" in the core group),
// as kubectl prints resource names.
func (k *Kind) QualifiedResource() string {
	if k.Plural != "" {
		return k.Plural + "." + k.Group()
	}
	if g := k.Group(); g != "" {
		return k.Resource + "." + g
	}
	return k.Resource
}

// NewObject returns an empty object with apiVersion and kind set.
func (k *Kind) NewObject() meta.Object {
	o := k.New()
	*o.GetTypeMeta() = meta.TypeMeta{APIVersion: k.APIVersion, Kind: k.Kind}
	return o
}

// Decode unmarshals JSON into a new object of this kind.
func (k *Kind) Decode(data []byte) (meta.Object, error) {
	o := k.New()
	if err := json.Unmarshal(data, o); err != nil {
		return nil, describeJSONError(err)
	}
	*o.GetTypeMeta() = meta.TypeMeta{APIVersion: k.APIVersion, Kind: k.Kind}
	return o, nil
}

// DecodeStrict unmarshals JSON like Decode but keeps apiVersion and kind as
// written, and reports whether the JSON may have fields the type does not
// know or keeps without supporting them (then UnsupportedFields names
// them). It is the API server's hot path: see codec.go for the fast
// decoder it tries first.
func (k *Kind) DecodeStrict(data []byte) (obj meta.Object, unknown bool, err error) {
	if k.Custom != nil {
		o, pruned, err := k.Custom.Decode(data)
		return o, len(pruned) > 0, err
	}
	o := k.New()
	if fastDecodeStrict(data, o) == nil {
		// Every field is known; but a field the type keeps only so that it
		// round-trips (tagged unsupported) must still be named.
		return o, mentionsUnsupported(reflect.TypeOf(o), data), nil
	}
	o = k.New()
	if err := json.Unmarshal(data, o); err != nil {
		return nil, false, describeJSONError(err)
	}
	return o, true, nil
}

// SelectableFields returns every field a field selector may use for o.
func (k *Kind) SelectableFields(o meta.Object) map[string]string {
	m := o.GetObjectMeta()
	f := map[string]string{"metadata.name": m.Name}
	if k.Namespaced {
		f["metadata.namespace"] = m.Namespace
	}
	if k.Fields != nil {
		for key, val := range k.Fields(o) {
			f[key] = val
		}
	}
	return f
}

// SupportsField reports whether key is a selectable field of the kind.
func (k *Kind) SupportsField(key string) bool {
	_, ok := k.SelectableFields(k.New())[key]
	return ok
}

// Lookup finds a kind by resource name, singular, short name or kind name,
// case-insensitively ("pods", "pod", "po", "Pod", "deploy", "deployments.apps").
func Lookup(name string) (*Kind, error) {
	n := strings.ToLower(name)
	if res, group, ok := strings.Cut(n, "."); ok {
		if k, err := Lookup(res); err == nil && k.Group() == group {
			return k, nil
		}
	}
	for _, k := range kinds {
		if n == k.Resource || n == strings.ToLower(k.Kind) {
			return k, nil
		}
		for _, s := range k.ShortNames {
			if n == s {
				return k, nil
			}
		}
	}
	return nil, &UnknownResourceError{Name: name}
}

// UnknownResourceError: no kind is known here by that name.
type UnknownResourceError struct{ Name string }

func (e *UnknownResourceError) Error() string {
	return fmt.Sprintf("the server doesn't have a resource type %q (run `kobectl api-resources` to list them)", e.Name)
}

// ByResource finds a kind by its exact resource name.
func ByResource(resource string) (*Kind, bool) {
	k, ok := byResource[resource]
	return k, ok
}

// ByKind finds a kind by apiVersion and kind; the error says what is served.
func ByKind(apiVersion, kind string) (*Kind, error) {
	for _, k := range kinds {
		if k.Kind != kind {
			continue
		}
		if _, ok := k.ServedAt(apiVersion); ok {
			return k, nil
		}
		if k.APIVersion != apiVersion {
			return nil, fmt.Errorf("apiVersion %q is not served for kind %s: use %q", apiVersion, kind, k.APIVersion)
		}
		return k, nil
	}
	return nil, &UnknownKindError{APIVersion: apiVersion, Kind: kind}
}

// UnknownKindError: no kind of that name is known here; a client may ask
// the server, whose CustomResourceDefinitions may add it.
type UnknownKindError struct{ APIVersion, Kind string }

func (e *UnknownKindError) Error() string {
	return fmt.Sprintf("unknown kind %q (apiVersion %q): run `kobectl api-resources` to list the supported kinds", e.Kind, e.APIVersion)
}

// KindOf returns the registered kind of an object from its Go type.
func KindOf(o meta.Object) (*Kind, error) {
	t := fmt.Sprintf("%T", o)
	if k, ok := byGoType[t]; ok {
		return k, nil
	}
	return nil, fmt.Errorf("type %s is not a registered kind", t)
}

// All returns every kind sorted by resource name.
func All() []*Kind {
	out := append([]*Kind(nil), kinds...)
	sort.Slice(out, func(i, j int) bool { return out[i].Resource < out[j].Resource })
	return out
}

var (
	kinds      = buildKinds()
	byResource = index(func(k *Kind) string { return k.Resource })
	byGoType   = index(func(k *Kind) string { return fmt.Sprintf("%T", k.New()) })
)

func index(key func(*Kind) string) map[string]*Kind {
	m := map[string]*Kind{}
	for _, k := range kinds {
		m[key(k)] = k
	}
	return m
}
