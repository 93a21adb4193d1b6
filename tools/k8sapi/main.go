// Command k8sapi writes api/k8sapi/types.json: the field set of every
// Kubernetes API type Kobune knows about, read from the k8s.io/api Go types
// by reflection — JSON names, protobuf field numbers and wire kinds,
// strategic-merge-patch keys. It is its own module so that Kobune's module
// does not depend on Kubernetes' libraries; regenerate after changing the
// pinned k8s.io/api version with `make k8s-api-fields`.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"runtime/debug"
	"strconv"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	eventsv1 "k8s.io/api/events/v1"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	networkingv1 "k8s.io/api/networking/v1"
	nodev1 "k8s.io/api/node/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	resourcev1 "k8s.io/api/resource/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	storagev1 "k8s.io/api/storage/v1"
	storagemigrationv1 "k8s.io/api/storagemigration/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"

	"github.com/kobune/kobune/api/k8sapi"
)

// Field is api/k8sapi's: the file is read by that package.
type Field = k8sapi.Field

// Output is the file's content.
type Output struct {
	Comment string `json:"comment"`
	// Kinds maps "apps/v1 Deployment" to its type name.
	Kinds map[string]string `json:"kinds"`
	// Types maps a type name (OpenAPI's: io.k8s.api.apps.v1.Deployment)
	// to its fields.
	Types map[string][]Field `json:"types"`
	// Docs maps a type name to Kubernetes' description of it.
	Docs map[string]string `json:"docs"`
}

var special = map[reflect.Type]string{
	reflect.TypeOf(metav1.Time{}):          "time",
	reflect.TypeOf(metav1.MicroTime{}):     "microTime",
	reflect.TypeOf(metav1.Duration{}):      "duration",
	reflect.TypeOf(resource.Quantity{}):    "quantity",
	reflect.TypeOf(intstr.IntOrString{}):   "intOrString",
	reflect.TypeOf(runtime.RawExtension{}): "raw",
	reflect.TypeOf(metav1.FieldsV1{}):      "fieldsV1",
	// A JSON schema's value (default, enum, example): any JSON.
	reflect.TypeOf(apiextensionsv1.JSON{}): "raw",
}

// unions are the JSON schema's either-or types: in JSON a schema or a list
// of schemas (items), a schema or a boolean (additionalProperties), a
// schema or a list of property names (dependencies); in protobuf a message
// with a field for each side. Their kind names the shape, their type the
// schema's.
var unions = map[reflect.Type]string{
	reflect.TypeOf(apiextensionsv1.JSONSchemaPropsOrArray{}):       "schemaOrArray",
	reflect.TypeOf(apiextensionsv1.JSONSchemaPropsOrBool{}):        "schemaOrBool",
	reflect.TypeOf(apiextensionsv1.JSONSchemaPropsOrStringArray{}): "schemaOrStringArray",
}

func typeName(t reflect.Type) string {
	p := t.PkgPath()
	switch {
	case strings.HasPrefix(p, "k8s.io/api/"):
		p = "io.k8s.api." + strings.ReplaceAll(strings.TrimPrefix(p, "k8s.io/api/"), "/", ".")
	case strings.HasPrefix(p, "k8s.io/apimachinery/"):
		p = "io.k8s.apimachinery." + strings.ReplaceAll(strings.TrimPrefix(p, "k8s.io/apimachinery/"), "/", ".")
	case strings.HasPrefix(p, "k8s.io/"): // k8s.io/apiextensions-apiserver/...
		p = "io.k8s." + strings.ReplaceAll(strings.TrimPrefix(p, "k8s.io/"), "/", ".")
	default:
		p = strings.ReplaceAll(p, "/", ".")
	}
	return p + "." + t.Name()
}

type gen struct {
	types map[string][]Field
	docs  map[string]string
}

// kindOf describes t, walking into the structs it names.
func (g *gen) kindOf(t reflect.Type) (kind, typ, elem string) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if s, ok := special[t]; ok {
		return s, "", ""
	}
	if u, ok := unions[t]; ok {
		return u, typeName(reflect.TypeOf(apiextensionsv1.JSONSchemaProps{})), ""
	}
	switch t.Kind() {
	case reflect.String:
		return "string", "", ""
	case reflect.Bool:
		return "bool", "", ""
	case reflect.Int32, reflect.Int, reflect.Uint32, reflect.Int16, reflect.Uint16, reflect.Int8, reflect.Uint8:
		return "int32", "", ""
	case reflect.Int64, reflect.Uint64:
		return "int64", "", ""
	case reflect.Float32, reflect.Float64:
		return "double", "", ""
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			return "bytes", "", ""
		}
		k, ty, _ := g.kindOf(t.Elem())
		return "list", ty, k
	case reflect.Map:
		k, ty, _ := g.kindOf(t.Elem())
		return "map", ty, k
	case reflect.Struct:
		g.walk(t)
		return "object", typeName(t), ""
	case reflect.Interface:
		return "raw", "", ""
	}
	panic(fmt.Sprintf("unhandled type %s", t))
}

func (g *gen) walk(t reflect.Type) {
	name := typeName(t)
	if _, ok := g.types[name]; ok {
		return
	}
	g.types[name] = nil // in progress (recursive types: JSONSchemaProps is not used)
	docs := swaggerDoc(t)
	if d := docs[""]; d != "" {
		g.docs[name] = d
	}
	var fields []Field
	for i := 0; i < t.NumField(); i++ {
		sf := t.Field(i)
		if !sf.IsExported() {
			continue
		}
		jsonTag := sf.Tag.Get("json")
		if jsonTag == "-" {
			continue
		}
		jn, opts, _ := strings.Cut(jsonTag, ",")
		inline := sf.Anonymous && jn == "" || strings.Contains(opts, "inline")
		f := Field{Name: jn}
		if inline {
			f.Name = ""
		} else if jn == "" {
			f.Name = sf.Name
		}
		if pt := sf.Tag.Get("protobuf"); pt != "" && pt != "-" {
			parts := strings.Split(pt, ",")
			if len(parts) > 1 {
				f.Proto, _ = strconv.Atoi(parts[1])
			}
		}
		f.Kind, f.Type, f.Elem = g.kindOf(sf.Type)
		f.Pointer = sf.Type.Kind() == reflect.Pointer
		f.PatchStrategy = sf.Tag.Get("patchStrategy")
		f.PatchMergeKey = sf.Tag.Get("patchMergeKey")
		if !inline {
			f.Doc = docs[f.Name]
		}
		if inline && sf.Type == reflect.TypeOf(metav1.TypeMeta{}) {
			f.Proto = 0 // TypeMeta travels in the protobuf envelope
		}
		fields = append(fields, f)
	}
	g.types[name] = fields
}

func main() {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		corev1.AddToScheme, appsv1.AddToScheme, batchv1.AddToScheme, discoveryv1.AddToScheme, storagev1.AddToScheme,
		coordinationv1.AddToScheme, rbacv1.AddToScheme, certificatesv1.AddToScheme, schedulingv1.AddToScheme,
		authorizationv1.AddToScheme, authenticationv1.AddToScheme, policyv1.AddToScheme, autoscalingv1.AddToScheme,
		autoscalingv2.AddToScheme, networkingv1.AddToScheme, eventsv1.AddToScheme, flowcontrolv1.AddToScheme,
		apiextensionsv1.AddToScheme, admissionregistrationv1.AddToScheme, nodev1.AddToScheme,
		apiregistrationv1.AddToScheme, storagemigrationv1.AddToScheme, resourcev1.AddToScheme,
	} {
		if err := add(s); err != nil {
			panic(err)
		}
	}
	if len(os.Args) == 3 && os.Args[1] == "-fixtures" {
		if err := writeFixtures(s, os.Args[2]); err != nil {
			panic(err)
		}
		return
	}
	g := &gen{types: map[string][]Field{}, docs: map[string]string{}}
	out := Output{Comment: "Generated by tools/k8sapi from k8s.io/api " + apiVersion() + "; do not edit (make k8s-api-fields).",
		Kinds: map[string]string{}}
	for gvk, t := range s.AllKnownTypes() {
		if gvk.Version == "__internal" || t.PkgPath() == "k8s.io/apimachinery/pkg/apis/meta/v1" && gvk.Group != "" {
			continue
		}
		g.walk(t)
		out.Kinds[gvk.GroupVersion().String()+" "+gvk.Kind] = typeName(t)
	}
	out.Types, out.Docs = g.types, g.docs
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", " ")
	if err := enc.Encode(out); err != nil {
		panic(err)
	}
}

// swaggerDoc is the descriptions k8s.io/api generated for t: "" for the
// type, each JSON field name for its field.
func swaggerDoc(t reflect.Type) map[string]string {
	if d, ok := reflect.New(t).Elem().Interface().(interface{ SwaggerDoc() map[string]string }); ok {
		return d.SwaggerDoc()
	}
	return nil
}

// apiVersion is the k8s.io/api version this program was built with.
func apiVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == "k8s.io/api" {
				return d.Version
			}
		}
	}
	return "(unknown version)"
}
