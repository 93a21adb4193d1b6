package openapi

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"

	"github.com/kobune/kobune/api/apiextensions"
	"github.com/kobune/kobune/api/k8sapi"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/api/scheme"
)

// The custom kinds' schemas, as kube-apiserver publishes them for its
// CustomResourceDefinitions: each served version's openAPIV3Schema as the
// definition writes it, with apiVersion, kind and metadata added and the
// x-kubernetes-group-version-kind extension, named after the group (its
// labels reversed), the version and the kind: "com.example.v1.Website".
// kubectl explain reads them (v3), and so do clients that validate (v2).

// customVersion is one served version of a custom kind.
type customVersion struct {
	kind   *scheme.Kind // the kind at this version (APIVersion set to it)
	schema map[string]any
}

// customVersions are the served versions of the custom kinds.
func customVersions(custom []*scheme.Kind) []customVersion {
	var out []customVersion
	for _, k := range custom {
		if k.Custom == nil {
			continue
		}
		crd, ok := k.Custom.Definition.(*apiextensions.CustomResourceDefinition)
		if !ok {
			continue
		}
		for _, v := range crd.Spec.Versions {
			if !v.Served {
				continue
			}
			schema := map[string]any{}
			if v.Schema != nil && v.Schema.OpenAPIV3Schema != nil {
				b, err := json.Marshal(v.Schema.OpenAPIV3Schema)
				if err != nil || json.Unmarshal(b, &schema) != nil {
					continue // a definition the API server accepted marshals
				}
			}
			at := *k
			at.APIVersion = crd.Spec.Group + "/" + v.Name
			out = append(out, customVersion{kind: &at, schema: schema})
		}
	}
	return out
}

// CustomSchemaName is the name of a custom kind's schema at a version:
// kube-openapi's REST-friendly name of group/version/kind.
func CustomSchemaName(group, version, kind string) string {
	labels := strings.Split(group, ".")
	for i, j := 0, len(labels)-1; i < j; i, j = i+1, j-1 {
		labels[i], labels[j] = labels[j], labels[i]
	}
	return strings.Join(labels, ".") + "." + version + "." + kind
}

// addCustom defines a custom kind's schema at one version and returns its
// name; the schemas it refers to (ObjectMeta's) are defined too.
func (s *schemaSet) addCustom(cv customVersion) string {
	k := cv.kind
	_, version, _ := strings.Cut(k.APIVersion, "/")
	name := CustomSchemaName(k.Group(), version, k.Kind)
	def := copyMap(cv.schema)
	if s.refPrefix == "#/definitions/" { // Swagger 2.0, which kubectl validates with
		if def["x-kubernetes-preserve-unknown-fields"] == true {
			// As kube-apiserver: an object and nothing more, or kubectl
			// would refuse the unknown fields the schema keeps.
			s.schemas[name] = map[string]any{"type": "object", "x-kubernetes-group-version-kind": []any{gvk(k)}}
			return name
		}
		def = toV2(def)
	}
	props := map[string]any{}
	if p, ok := def["properties"].(map[string]any); ok {
		props = copyMap(p)
	}
	om, _ := k8sapi.Named("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta")
	metaName := s.object(reflect.TypeFor[meta.ObjectMeta](), om)
	props["apiVersion"] = map[string]any{"type": "string",
		"description": "APIVersion defines the versioned schema of this representation of an object. Servers should convert recognized schemas to the latest internal value, and may reject unrecognized values."}
	props["kind"] = map[string]any{"type": "string",
		"description": "Kind is a string value representing the REST resource this object represents. Servers may infer this from the endpoint the client submits requests to. In CamelCase."}
	// As Kubernetes publishes it: the reference with a description beside
	// it (in v3, where a reference takes no siblings, inside allOf).
	const metaDoc = "Standard object's metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata"
	if s.refPrefix == "#/definitions/" {
		props["metadata"] = map[string]any{"$ref": s.refPrefix + metaName, "description": metaDoc}
	} else {
		props["metadata"] = map[string]any{"allOf": []any{map[string]any{"$ref": s.refPrefix + metaName}}, "description": metaDoc}
	}
	def["properties"] = props
	if def["type"] == nil {
		def["type"] = "object"
	}
	def["x-kubernetes-group-version-kind"] = []any{gvk(k)}
	s.schemas[name] = def
	return name
}

// toV2 is a structural schema as Swagger 2.0 can say it, with
// kube-apiserver's changes for kubectl: no allOf, oneOf, anyOf or not; a
// nullable value untyped, without items or properties (and not required);
// a value that keeps unknown fields without items or properties, and
// untyped when an object; an array without items untyped.
func toV2(in map[string]any) map[string]any {
	s := copyMap(in)
	for _, k := range []string{"allOf", "oneOf", "anyOf", "not"} {
		delete(s, k)
	}
	if s["nullable"] == true {
		delete(s, "type")
		delete(s, "nullable")
		delete(s, "items")
		delete(s, "properties")
	}
	if s["x-kubernetes-preserve-unknown-fields"] == true {
		delete(s, "items")
		delete(s, "properties")
		if s["type"] == "object" {
			delete(s, "type")
		}
	}
	if s["type"] == "array" && s["items"] == nil {
		delete(s, "type")
	}
	if props, ok := s["properties"].(map[string]any); ok {
		out := make(map[string]any, len(props))
		for name, p := range props {
			if ps, ok := p.(map[string]any); ok {
				out[name] = toV2(ps)
				if req, ok := s["required"].([]any); ok && ps["nullable"] == true {
					s["required"] = slices.DeleteFunc(slices.Clone(req), func(r any) bool { return r == name })
				}
			} else {
				out[name] = p
			}
		}
		s["properties"] = out
	}
	if items, ok := s["items"].(map[string]any); ok {
		s["items"] = toV2(items)
	}
	if ap, ok := s["additionalProperties"].(map[string]any); ok {
		if ap["nullable"] == true {
			delete(s, "required")
		}
		s["additionalProperties"] = toV2(ap)
	}
	return s
}
