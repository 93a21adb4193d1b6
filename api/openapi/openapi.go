// Package openapi builds the OpenAPI documents the API server serves at
// /openapi/v2 and /openapi/v3 (kube-apiserver's): the schema of every
// served kind made from Kobune's own Go types, so that `kubectl explain`
// shows what Kobune serves and nothing it does not, with Kubernetes' type
// names and strategic-merge-patch keys (x-kubernetes-patch-merge-key) from
// api/k8sapi, Kubernetes' descriptions of the fields Kobune shares with it,
// and the paths kubectl reads to learn which query parameters
// the server honours (fieldValidation, dryRun, fieldManager).
package openapi

import (
	"encoding/json"
	"reflect"
	"sort"
	"strings"

	"github.com/kobune/kobune/api/k8sapi"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/api/resource"
	"github.com/kobune/kobune/api/scheme"
	"github.com/kobune/kobune/api/version"
)

// KubernetesVersion is the release whose API Kobune mirrors (the info
// version of the documents).
const KubernetesVersion = "v1.37.0"

// schemaSet collects named schemas while Go types are walked.
type schemaSet struct {
	schemas map[string]map[string]any
	names   map[reflect.Type]string
	// refPrefix is "#/definitions/" (v2) or "#/components/schemas/" (v3).
	refPrefix string
}

var leaves = map[reflect.Type]map[string]any{
	reflect.TypeFor[meta.Time]():         {"type": "string", "format": "date-time"},
	reflect.TypeFor[meta.MicroTime]():    {"type": "string", "format": "date-time"},
	reflect.TypeFor[meta.IntOrString]():  {"type": "string", "format": "int-or-string", "x-kubernetes-int-or-string": true},
	reflect.TypeFor[resource.Quantity](): {"type": "string", "description": "a quantity: 100m, 1.5, 64Mi, 1G"},
}

// goName is the name of a Kobune type without a Kubernetes counterpart.
func goName(t reflect.Type) string {
	pkg := t.PkgPath()[strings.LastIndex(t.PkgPath(), "/")+1:]
	if pkg == "meta" {
		return "io.k8s.apimachinery.pkg.apis.meta.v1." + t.Name()
	}
	return "io.k8s.api." + pkg + ".v1." + t.Name()
}

// schema returns the schema of t (a $ref for named structs); k8s is the
// Kubernetes type at the same place, when there is one.
func (s *schemaSet) schema(t reflect.Type, k8s *k8sapi.Type) map[string]any {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if l, ok := leaves[t]; ok {
		return l
	}
	switch t.Kind() {
	case reflect.String:
		return map[string]any{"type": "string"}
	case reflect.Bool:
		return map[string]any{"type": "boolean"}
	case reflect.Int32, reflect.Int, reflect.Int16, reflect.Uint16, reflect.Uint8, reflect.Int8, reflect.Uint32:
		return map[string]any{"type": "integer", "format": "int32"}
	case reflect.Int64, reflect.Uint64:
		return map[string]any{"type": "integer", "format": "int64"}
	case reflect.Float32, reflect.Float64:
		return map[string]any{"type": "number", "format": "double"}
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			return map[string]any{"type": "string", "format": "byte"}
		}
		return map[string]any{"type": "array", "items": s.schema(t.Elem(), k8s)}
	case reflect.Map:
		return map[string]any{"type": "object", "additionalProperties": s.schema(t.Elem(), k8s)}
	case reflect.Interface:
		return map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}
	case reflect.Struct:
		return map[string]any{"$ref": s.refPrefix + s.object(t, k8s)}
	}
	return map[string]any{}
}

// object names and defines a struct type, returning its name.
func (s *schemaSet) object(t reflect.Type, k8s *k8sapi.Type) string {
	if n, ok := s.names[t]; ok {
		return n
	}
	name := goName(t)
	if k8s != nil {
		name = k8s.Name
	}
	s.names[t] = name
	props := map[string]any{}
	s.properties(t, k8s, props)
	def := map[string]any{"type": "object", "properties": props}
	if k8s != nil && k8s.Doc != "" {
		def["description"] = k8s.Doc
	}
	s.schemas[name] = def
	return name
}

// properties adds t's JSON fields (its inlined structs' too) to props.
func (s *schemaSet) properties(t reflect.Type, k8s *k8sapi.Type, props map[string]any) {
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		name, _, _ := strings.Cut(tag, ",")
		if tag == "-" || !f.IsExported() && !f.Anonymous {
			continue
		}
		if f.Anonymous && name == "" {
			ft := f.Type
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			s.properties(ft, k8s, props)
			continue
		}
		if name == "" {
			name = f.Name
		}
		var kf *k8sapi.Field
		var inner *k8sapi.Type
		if k8s != nil {
			if x, ok := k8s.Field(name); ok {
				kf = x
				if x.Type != "" {
					inner, _ = k8sapi.Named(x.Type)
				}
			}
		}
		p := s.schema(f.Type, inner)
		if ref, ok := p["$ref"]; ok {
			p = map[string]any{"allOf": []any{map[string]any{"$ref": ref}}} // room for the extensions below, as Kubernetes writes it
		} else {
			p = copyMap(p)
		}
		if kf != nil && kf.PatchMergeKey != "" {
			p["x-kubernetes-patch-merge-key"] = kf.PatchMergeKey
		}
		if kf != nil && kf.PatchStrategy != "" {
			p["x-kubernetes-patch-strategy"] = kf.PatchStrategy
		}
		if kf != nil && kf.Doc != "" {
			p["description"] = kf.Doc // Kubernetes' words: kubectl explain shows them
		}
		if len(p) == 1 && p["allOf"] != nil {
			p = map[string]any{"$ref": p["allOf"].([]any)[0].(map[string]any)["$ref"]}
		}
		props[name] = p
	}
}

func copyMap(m map[string]any) map[string]any {
	out := make(map[string]any, len(m)+2)
	for k, v := range m {
		out[k] = v
	}
	return out
}

// gvk is the x-kubernetes-group-version-kind of a kind.
func gvk(k *scheme.Kind) map[string]string {
	v := k.APIVersion
	if _, after, ok := strings.Cut(v, "/"); ok {
		v = after
	}
	return map[string]string{"group": k.Group(), "version": v, "kind": k.Kind}
}

// addKind defines a kind's schema, marked with its group, version, kind.
func (s *schemaSet) addKind(k *scheme.Kind) string {
	kt, _ := k8sapi.ForKind(k.APIVersion, k.Kind)
	name := s.object(reflect.TypeOf(k.New()).Elem(), kt)
	s.schemas[name]["x-kubernetes-group-version-kind"] = []any{gvk(k)}
	return name
}

// queryParameters are those the REST API honours on writes; kubectl reads
// them from the PATCH operation to decide whether the server validates
// fields (fieldValidation) and dry-runs (dryRun).
var queryParameters = []string{"dryRun", "fieldManager", "fieldValidation", "force", "pretty"}

// paths is the operations of one kind, for v3 (v2 differs only in how
// parameters are written).
func paths(k *scheme.Kind, groupPath, ref string, v3 bool) map[string]any {
	base := groupPath + "/"
	if k.Namespaced {
		base += "namespaces/{namespace}/"
	}
	coll := base + k.PluralName()
	item := coll + "/{name}"
	op := func(action, verbID string, query []string) map[string]any {
		o := map[string]any{
			"operationId":                     verbID + k.Kind,
			"x-kubernetes-action":             action,
			"x-kubernetes-group-version-kind": gvk(k),
			"responses":                       map[string]any{"200": response(ref, v3)},
		}
		var params []any
		for _, q := range query {
			if v3 {
				params = append(params, map[string]any{"name": q, "in": "query", "schema": map[string]any{"type": "string"}})
			} else {
				params = append(params, map[string]any{"name": q, "in": "query", "type": "string"})
			}
		}
		if len(params) > 0 {
			o["parameters"] = params
		}
		return o
	}
	list := []string{"labelSelector", "fieldSelector", "limit", "continue", "resourceVersion", "watch", "allowWatchBookmarks", "timeoutSeconds"}
	return map[string]any{
		coll: map[string]any{"get": op("list", "list", list), "post": op("post", "create", queryParameters)},
		item: map[string]any{"get": op("get", "read", nil), "put": op("put", "replace", queryParameters),
			"patch": op("patch", "patch", queryParameters), "delete": op("delete", "delete", []string{"dryRun", "gracePeriodSeconds", "propagationPolicy"})},
	}
}

func response(ref string, v3 bool) map[string]any {
	if v3 {
		return map[string]any{"description": "OK", "content": map[string]any{"application/json": map[string]any{"schema": map[string]any{"$ref": ref}}}}
	}
	return map[string]any{"description": "OK", "schema": map[string]any{"$ref": ref}}
}

func groupPath(apiVersion string) string {
	if strings.Contains(apiVersion, "/") {
		return "/apis/" + apiVersion
	}
	return "/api/" + apiVersion
}

// V3Paths is the /openapi/v3 discovery: one entry per group version
// ("api/v1", "apis/apps/v1"), the custom kinds' served versions included.
func V3Paths(custom []*scheme.Kind) []string {
	seen := map[string]bool{}
	var out []string
	add := func(apiVersion string) {
		p := strings.TrimPrefix(groupPath(apiVersion), "/")
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	for _, k := range scheme.All() {
		add(k.APIVersion)
	}
	for _, cv := range customVersions(custom) {
		add(cv.kind.APIVersion)
	}
	sort.Strings(out)
	return out
}

// V3 is the OpenAPI 3.0 document of one group version ("api/v1",
// "apis/apps/v1", "apis/example.com/v1"); false if it is not served.
func V3(gvPath string, custom []*scheme.Kind) ([]byte, bool) {
	s := &schemaSet{schemas: map[string]map[string]any{}, names: map[reflect.Type]string{}, refPrefix: "#/components/schemas/"}
	allPaths := map[string]any{}
	for _, k := range scheme.All() {
		gp := groupPath(k.APIVersion)
		if strings.TrimPrefix(gp, "/") != gvPath {
			continue
		}
		name := s.addKind(k)
		for p, ops := range paths(k, gp, s.refPrefix+name, true) {
			allPaths[p] = ops
		}
	}
	for _, cv := range customVersions(custom) {
		gp := groupPath(cv.kind.APIVersion)
		if strings.TrimPrefix(gp, "/") != gvPath {
			continue
		}
		name := s.addCustom(cv)
		for p, ops := range paths(cv.kind, gp, s.refPrefix+name, true) {
			allPaths[p] = ops
		}
	}
	if len(allPaths) == 0 {
		return nil, false
	}
	return mustJSON(map[string]any{
		"openapi":    "3.0.0",
		"info":       map[string]any{"title": "Kubernetes (Kobune " + version.Kobune + ")", "version": KubernetesVersion},
		"paths":      allPaths,
		"components": map[string]any{"schemas": s.schemas},
	}), true
}

// V2 is the Swagger 2.0 document of the whole API (/openapi/v2), the
// custom kinds' served versions included.
func V2(custom []*scheme.Kind) []byte {
	s := &schemaSet{schemas: map[string]map[string]any{}, names: map[reflect.Type]string{}, refPrefix: "#/definitions/"}
	allPaths := map[string]any{}
	for _, k := range scheme.All() {
		name := s.addKind(k)
		for p, ops := range paths(k, groupPath(k.APIVersion), s.refPrefix+name, false) {
			allPaths[p] = ops
		}
	}
	for _, cv := range customVersions(custom) {
		name := s.addCustom(cv)
		for p, ops := range paths(cv.kind, groupPath(cv.kind.APIVersion), s.refPrefix+name, false) {
			allPaths[p] = ops
		}
	}
	return mustJSON(map[string]any{
		"swagger":     "2.0",
		"info":        map[string]any{"title": "Kubernetes (Kobune " + version.Kobune + ")", "version": KubernetesVersion},
		"paths":       allPaths,
		"definitions": s.schemas,
	})
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // maps of plain values only
	}
	return b
}

// KindSchemas is the schema of one kind: the name of its own schema and
// every schema it refers to (refs as "#/components/schemas/NAME"), for
// kobectl explain.
func KindSchemas(k *scheme.Kind) (string, map[string]map[string]any) {
	s := &schemaSet{schemas: map[string]map[string]any{}, names: map[reflect.Type]string{}, refPrefix: "#/components/schemas/"}
	return s.addKind(k), s.schemas
}
