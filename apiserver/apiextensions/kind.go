package apiextensions

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	apiext "github.com/kobune/kobune/api/apiextensions"
	"github.com/kobune/kobune/api/jsonpath"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/api/printers"
	"github.com/kobune/kobune/api/scheme"
	v "github.com/kobune/kobune/api/validation"
)

// KindFor returns the kind a definition adds: stored in its storage
// version, served at every served version (conversion None: only
// apiVersion changes), its objects pruned, defaulted and validated by the
// storage version's schema.
func KindFor(crd *apiext.CustomResourceDefinition) *scheme.Kind {
	spec := &crd.Spec
	storage := &spec.Versions[0]
	for i := range spec.Versions {
		if spec.Versions[i].Storage {
			storage = &spec.Versions[i]
		}
	}
	group, names := spec.Group, spec.Names
	gv := func(version string) string { return group + "/" + version }
	var schema *apiext.JSONSchemaProps
	if storage.Schema != nil {
		schema = storage.Schema.OpenAPIV3Schema
	}
	k := &scheme.Kind{
		Kind: names.Kind, APIVersion: gv(storage.Name), Resource: names.Plural + "." + group, Plural: names.Plural,
		ShortNames: names.ShortNames, Namespaced: spec.Scope == apiext.NamespaceScoped,
		HasStatus: storage.Subresources != nil && storage.Subresources.Status != nil,
		New:       func() meta.Object { return &meta.Unstructured{} },
	}
	k.Custom = &scheme.Custom{Singular: names.Singular, Categories: names.Categories, Definition: crd,
		Decode: func(data []byte) (meta.Object, []string, error) { return decode(k, schema, data) }}
	k.Default = func(o meta.Object) { withValue(o, func(m map[string]any) { applyDefaults(m, schema) }) }
	k.Validate = func(o meta.Object) v.ErrorList { return validateObjectOf(k, schema, o.(*meta.Unstructured)) }
	k.Warning = deprecation(k, storage)
	printerColumns(k, storage.AdditionalPrinterColumns)
	if fields := selectableFields(storage); len(fields) > 0 {
		k.Fields = func(o meta.Object) map[string]string { return fieldValues(o.(*meta.Unstructured), fields) }
	}
	for _, ver := range spec.Versions {
		if !ver.Served || ver.Name == storage.Name {
			continue
		}
		k.Versions = append(k.Versions, scheme.Version{APIVersion: gv(ver.Name), Warning: deprecation(k, &ver),
			ToStored: setAPIVersion(gv(storage.Name)), FromStored: setAPIVersion(gv(ver.Name))})
	}
	return k
}

// decode reads a request's object, prunes what the schema does not name
// and fills its defaults.
func decode(k *scheme.Kind, schema *apiext.JSONSchemaProps, data []byte) (meta.Object, []string, error) {
	u := &meta.Unstructured{}
	if err := json.Unmarshal(data, u); err != nil {
		return nil, nil, err
	}
	var pruned []string
	withValue(u, func(m map[string]any) {
		prune(m, rootForPruning(schema), "", &pruned)
		applyDefaults(m, schema)
	})
	return u, pruned, nil
}

// rootForPruning is the schema with apiVersion, kind and metadata known:
// they are the object's own, whatever the schema says of them.
func rootForPruning(s *apiext.JSONSchemaProps) *apiext.JSONSchemaProps {
	if s == nil {
		return nil
	}
	c := *s
	c.Properties = make(map[string]apiext.JSONSchemaProps, len(s.Properties)+3)
	for k, p := range s.Properties {
		c.Properties[k] = p
	}
	keep := true
	for _, f := range []string{"apiVersion", "kind", "metadata"} {
		c.Properties[f] = apiext.JSONSchemaProps{XPreserveUnknownFields: &keep}
	}
	return &c
}

// withValue runs f on the object's fields other than metadata, as one
// JSON object (the content and "status"), and writes back what f changed.
func withValue(o meta.Object, f func(map[string]any)) {
	u := o.(*meta.Unstructured)
	m := make(map[string]any, len(u.Content)+1)
	for k, val := range u.Content {
		m[k] = val
	}
	if u.Status != nil {
		m["status"] = u.Status
	}
	f(m)
	u.Status = m["status"]
	delete(m, "status")
	u.Content = m
}

// validateObjectOf checks the metadata and every field against the schema.
func validateObjectOf(k *scheme.Kind, schema *apiext.JSONSchemaProps, u *meta.Unstructured) v.ErrorList {
	errs := v.ValidateObjectMeta(&u.ObjectMeta, k.Namespaced, v.IsDNS1123Subdomain, v.NewPath("metadata"))
	if schema == nil {
		return errs
	}
	if md, ok := schema.Properties["metadata"]; ok {
		for _, f := range []struct {
			name, value string
		}{{"name", u.Name}, {"generateName", u.GenerateName}} {
			if s, ok := md.Properties[f.name]; ok && f.value != "" {
				errs = append(errs, validate(f.value, &s, v.NewPath("metadata", f.name))...)
			}
		}
	}
	withValue(u, func(m map[string]any) {
		for _, r := range schema.Required {
			if _, ok := m[r]; !ok && r != "metadata" && r != "apiVersion" && r != "kind" {
				errs = append(errs, v.NewRequired(v.NewPath(r), ""))
			}
		}
		for _, key := range slices.Sorted(maps.Keys(m)) {
			if s, ok := schema.Properties[key]; ok {
				errs = append(errs, validate(m[key], &s, v.NewPath(key))...)
			}
		}
	})
	return errs
}

func setAPIVersion(apiVersion string) func([]byte) ([]byte, error) {
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

// selectableFields are the definition's selectable fields, as paths
// ("spec.color"), beside metadata.name and metadata.namespace.
func selectableFields(ver *apiext.CustomResourceDefinitionVersion) []string {
	var out []string
	for _, f := range ver.SelectableFields {
		out = append(out, strings.TrimPrefix(f.JSONPath, "."))
	}
	return out
}

func fieldValues(u *meta.Unstructured, fields []string) map[string]string {
	out := make(map[string]string, len(fields))
	withValue(u, func(m map[string]any) {
		for _, f := range fields {
			var cur any = m
			for _, part := range strings.Split(f, ".") {
				obj, ok := cur.(map[string]any)
				if !ok {
					cur = nil
					break
				}
				cur = obj[part]
			}
			if cur != nil {
				out[f] = fmt.Sprint(display(cur))
			} else {
				out[f] = ""
			}
		}
	})
	return out
}

// deprecation is the warning sent with requests at a deprecated version:
// its deprecationWarning, or Kubernetes' default wording.
func deprecation(k *scheme.Kind, ver *apiext.CustomResourceDefinitionVersion) string {
	switch {
	case !ver.Deprecated:
		return ""
	case ver.DeprecationWarning != nil:
		return *ver.DeprecationWarning
	}
	return fmt.Sprintf("%s/%s %s is deprecated", k.Group(), ver.Name, k.Kind)
}

// printerColumns sets the kind's table from additionalPrinterColumns:
// NAME, then each column (those of priority 0 in the narrow table, all in
// -o wide), as Kubernetes prints them; a date column prints as an age.
func printerColumns(k *scheme.Kind, cols []apiext.CustomResourceColumnDefinition) {
	if len(cols) == 0 {
		return
	}
	type column struct {
		def  apiext.CustomResourceColumnDefinition
		path *jsonpath.Template // nil: a path that does not parse prints nothing
	}
	var parsed []column
	narrow, wide := []string{"NAME"}, []string{"NAME"}
	for _, c := range cols {
		path, _ := jsonpath.ParseRelaxed(c.JSONPath)
		parsed = append(parsed, column{def: c, path: path})
		h := strings.ToUpper(c.Name)
		wide = append(wide, h)
		if c.Priority == 0 {
			narrow = append(narrow, h)
		}
	}
	k.Custom.Headers, k.Custom.WideHeaders = narrow, wide
	k.Custom.Row = func(o meta.Object, all bool) []string {
		u := o.(*meta.Unstructured)
		obj, err := u.Object()
		if err != nil {
			return nil
		}
		row := []string{u.Name}
		for _, c := range parsed {
			if c.def.Priority != 0 && !all {
				continue
			}
			var cells []string
			if c.path != nil {
				for _, v := range c.path.Results(obj) {
					cells = append(cells, cellText(v, c.def.Type))
				}
			}
			row = append(row, strings.Join(cells, ","))
		}
		return row
	}
}

// cellText prints one value as kubectl does: a date as the time since.
func cellText(v any, typ string) string {
	if s, ok := v.(string); ok && typ == "date" {
		if t, err := time.Parse(time.RFC3339, s); err == nil {
			return printers.SinceOrUnknown(t)
		}
	}
	return jsonpath.Text(v)
}
