package apiextensions

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	apiext "github.com/kobune/kobune/api/apiextensions"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/api/scheme"
	v "github.com/kobune/kobune/api/validation"
	"github.com/kobune/kobune/apiserver/webhook"
)

// KindFor returns the kind a definition adds: stored in its storage
// version, served at every served version (conversion None: only
// apiVersion changes; Webhook: caller calls the definition's conversion
// webhook, conversion.go), its objects pruned, defaulted and validated by
// the storage version's schema.
func KindFor(crd *apiext.CustomResourceDefinition, caller *webhook.Caller) *scheme.Kind {
	spec := &crd.Spec
	storage := &spec.Versions[0]
	for i := range spec.Versions {
		if spec.Versions[i].Storage {
			storage = &spec.Versions[i]
		}
	}
	names := spec.Names
	var schema *apiext.JSONSchemaProps
	if storage.Schema != nil {
		schema = storage.Schema.OpenAPIV3Schema
	}
	var others []string
	for _, ver := range spec.Versions {
		if ver.Served && ver.Name != storage.Name {
			others = append(others, ver.Name)
		}
	}
	k := scheme.NewCustomKind(scheme.CustomKindSpec{Group: spec.Group, Kind: names.Kind, Plural: names.Plural, Singular: names.Singular,
		StorageVersion: storage.Name, OtherVersions: others, Namespaced: spec.Scope == apiext.NamespaceScoped,
		HasStatus: storage.Subresources != nil && storage.Subresources.Status != nil, ShortNames: names.ShortNames, Categories: names.Categories})
	k.Custom.Definition = crd
	k.Custom.Decode = func(data []byte) (meta.Object, []string, error) { return decode(schema, data) }
	k.Default = func(o meta.Object) { withValue(o, func(m map[string]any) { applyDefaults(m, schema) }) }
	if hasDefault(schema) {
		k.Custom.ReadDefaulted = func(stored []byte, rv string) ([]byte, bool) { return readDefaulted(schema, stored, rv) }
	}
	rules := compileCEL(schema)
	k.Validate = func(o meta.Object) v.ErrorList {
		u := o.(*meta.Unstructured)
		if errs := validateObjectOf(k, schema, u); len(errs) > 0 {
			return errs // rules read values of the schema's types
		}
		return validateRules(rules, u, nil)
	}
	if rules != nil {
		k.ValidateUpdate = func(n, o meta.Object) v.ErrorList {
			return validateRules(rules, n.(*meta.Unstructured), o.(*meta.Unstructured))
		}
	}
	k.Warning = deprecation(k, storage)
	k.Custom.Columns = columns(storage)
	if sr := storage.Subresources; sr != nil && sr.Scale != nil {
		k.Custom.Scale = &scheme.ScalePaths{SpecReplicas: sr.Scale.SpecReplicasPath, StatusReplicas: sr.Scale.StatusReplicasPath}
		if sr.Scale.LabelSelectorPath != nil {
			k.Custom.Scale.LabelSelector = *sr.Scale.LabelSelectorPath
		}
	}
	if fields := selectableFields(storage); len(fields) > 0 {
		k.Fields = func(o meta.Object) map[string]string { return fieldValues(o.(*meta.Unstructured), fields) }
	}
	for i := range k.Versions {
		ver, _ := spec.Version(strings.TrimPrefix(k.Versions[i].APIVersion, spec.Group+"/"))
		k.Versions[i].Warning = deprecation(k, ver)
	}
	if conv := newWebhookConverter(crd, caller); conv != nil {
		k.Custom.Convert = conv.convert
		for i := range k.Versions {
			k.Versions[i].ToStored = convertOne(conv, k.APIVersion)
			k.Versions[i].FromStored = convertOne(conv, k.Versions[i].APIVersion)
			ver, _ := spec.Version(strings.TrimPrefix(k.Versions[i].APIVersion, spec.Group+"/"))
			var fields []string
			if ver != nil {
				fields = selectableFields(ver)
			}
			// Each version selects by its own fields, read from the object
			// converted to it (the REST door converts, then selects).
			k.Versions[i].Fields = func(o meta.Object) map[string]string { return fieldValues(o.(*meta.Unstructured), fields) }
		}
	}
	return k
}

// convertOne is a version's conversion of one object by the webhook, for
// callers without a request's context (the REST door and the registry
// pass theirs to Custom.Convert).
func convertOne(conv *webhookConverter, apiVersion string) func([]byte) ([]byte, error) {
	return func(b []byte) ([]byte, error) {
		out, err := conv.convert(context.Background(), [][]byte{b}, apiVersion)
		if err != nil {
			return nil, err
		}
		return out[0], nil
	}
}

// decode reads a request's object, prunes what the schema does not name
// and fills its defaults.
func decode(schema *apiext.JSONSchemaProps, data []byte) (meta.Object, []string, error) {
	u := &meta.Unstructured{}
	if err := json.Unmarshal(data, u); err != nil {
		return nil, nil, err
	}
	var pruned []string
	// The metadata's own unknown fields (json.Unmarshal dropped them).
	var top struct {
		Metadata map[string]json.RawMessage `json:"metadata"`
	}
	if json.Unmarshal(data, &top) == nil {
		for k := range top.Metadata {
			if !objectMetaFields()[k] {
				pruned = append(pruned, "metadata."+k)
			}
		}
	}
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

// columns are a version's printer columns.
func columns(ver *apiext.CustomResourceDefinitionVersion) []scheme.Column {
	var out []scheme.Column
	for _, c := range ver.AdditionalPrinterColumns {
		out = append(out, scheme.Column{Name: c.Name, Type: c.Type, Format: c.Format, Description: c.Description, JSONPath: c.JSONPath, Priority: c.Priority})
	}
	return out
}
