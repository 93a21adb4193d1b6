package apiextensions

import (
	"fmt"
	"regexp"
	"slices"
	"sort"

	v "github.com/kobune/kobune/api/validation"
)

// ValidateStructural checks that a version's schema is structural, as
// Kubernetes requires of every CustomResourceDefinition in v1: every
// node says its type (an object, an array with its items, a string, ...)
// unless it is x-kubernetes-int-or-string or keeps unknown fields; the
// root is an object; the JSON Schema features that make a schema's shape
// undecidable ($ref, definitions, dependencies, patternProperties,
// additionalItems) are refused; an object has properties or
// additionalProperties, not both; metadata at the root may only restrict
// name and generateName. The server prunes, defaults and validates
// objects by such a schema (apiserver/apiextensions).
func ValidateStructural(s *JSONSchemaProps, p *v.Path) v.ErrorList {
	var errs v.ErrorList
	if s.Type != "object" {
		errs = append(errs, v.NewInvalid(p.Child("type"), s.Type, "must be object at the root"))
	}
	if md, ok := s.Properties["metadata"]; ok {
		mp := p.Child("properties").Key("metadata")
		if md.Type != "object" {
			errs = append(errs, v.NewInvalid(mp.Child("type"), md.Type, "must be object"))
		}
		for name := range md.Properties {
			if name != "name" && name != "generateName" {
				errs = append(errs, v.NewForbidden(mp.Child("properties").Key(name), "must not be specified (only name and generateName may be restricted)"))
			}
		}
		if md.Default != nil {
			errs = append(errs, v.NewForbidden(mp.Child("default"), "must not be specified"))
		}
	}
	return append(errs, structural(s, p, false)...)
}

var (
	typesAllowed = []string{"array", "boolean", "integer", "number", "object", "string"}
	listTypes    = []string{"atomic", "map", "set"}
	mapTypes     = []string{"atomic", "granular"}
)

// structural checks one node; inJunctor: it sits under allOf, anyOf, oneOf
// or not, where a schema may only add value checks, not shape.
func structural(s *JSONSchemaProps, p *v.Path, inJunctor bool) v.ErrorList {
	var errs v.ErrorList
	forbid := func(set bool, field, why string) {
		if set {
			errs = append(errs, v.NewForbidden(p.Child(field), why))
		}
	}
	forbid(s.Ref != nil, "$ref", "$ref is not supported in a structural schema: write the schema out")
	forbid(s.ID != "", "id", "must not be specified in a structural schema")
	forbid(s.Schema != "", "$schema", "must not be specified in a structural schema")
	forbid(len(s.Definitions) > 0, "definitions", "must not be specified in a structural schema")
	forbid(len(s.Dependencies) > 0, "dependencies", "must not be specified in a structural schema")
	forbid(len(s.PatternProperties) > 0, "patternProperties", "must not be specified in a structural schema")
	forbid(s.AdditionalItems != nil, "additionalItems", "must not be specified in a structural schema")
	forbid(s.UniqueItems, "uniqueItems", "uniqueItems cannot be set to true since the runtime complexity becomes quadratic")
	forbid(len(s.Properties) > 0 && s.AdditionalProperties != nil && (s.AdditionalProperties.Schema != nil || !s.AdditionalProperties.Allows),
		"additionalProperties", "additionalProperties and properties are mutual exclusive")
	if inJunctor {
		forbid(s.Description != "", "description", "must be empty to be structural (inside allOf, anyOf, oneOf or not)")
		forbid(s.Default != nil, "default", "must be empty to be structural (inside allOf, anyOf, oneOf or not)")
		forbid(s.Nullable, "nullable", "must be false to be structural (inside allOf, anyOf, oneOf or not)")
		forbid(s.XPreserveUnknownFields != nil, "x-kubernetes-preserve-unknown-fields", "must be empty to be structural (inside allOf, anyOf, oneOf or not)")
		forbid(s.XEmbeddedResource, "x-kubernetes-embedded-resource", "must be false to be structural (inside allOf, anyOf, oneOf or not)")
		forbid(s.XIntOrString, "x-kubernetes-int-or-string", "must be false to be structural (inside allOf, anyOf, oneOf or not)")
	} else {
		errs = append(errs, structuralType(s, p)...)
	}
	forbid(s.XEmbeddedResource && s.Type != "object", "x-kubernetes-embedded-resource", "must be used with type object")
	forbid(s.XIntOrString && s.Type != "", "x-kubernetes-int-or-string", "type must be empty with x-kubernetes-int-or-string")
	if s.Pattern != "" {
		if _, err := regexp.Compile(s.Pattern); err != nil {
			errs = append(errs, v.NewInvalid(p.Child("pattern"), s.Pattern, fmt.Sprintf("must be a valid regular expression: %v", err)))
		}
	}
	if lt := s.XListType; lt != nil {
		lp := p.Child("x-kubernetes-list-type")
		switch {
		case !slices.Contains(listTypes, *lt):
			errs = append(errs, v.NewNotSupported(lp, *lt, listTypes))
		case s.Type != "array":
			errs = append(errs, v.NewInvalid(lp, *lt, "must only be used on type array"))
		case *lt == "map":
			if len(s.XListMapKeys) == 0 {
				errs = append(errs, v.NewRequired(p.Child("x-kubernetes-list-map-keys"), "must not be empty if x-kubernetes-list-type is map"))
			}
			if s.Items != nil && s.Items.Type != "object" {
				errs = append(errs, v.NewInvalid(p.Child("items", "type"), s.Items.Type, "must be object if parent array's x-kubernetes-list-type is map"))
			}
			for _, k := range s.XListMapKeys {
				if s.Items != nil {
					if _, ok := s.Items.Properties[k]; !ok {
						errs = append(errs, v.NewInvalid(p.Child("x-kubernetes-list-map-keys"), k, "entries must all be names of item properties"))
					}
				}
			}
		case *lt == "set":
			if s.Items != nil && (s.Items.Type == "object" || s.Items.Type == "array") {
				errs = append(errs, v.NewInvalid(p.Child("items", "type"), s.Items.Type, "must be a scalar type if parent array's x-kubernetes-list-type is set"))
			}
		}
	}
	if len(s.XListMapKeys) > 0 && (s.XListType == nil || *s.XListType != "map") {
		errs = append(errs, v.NewForbidden(p.Child("x-kubernetes-list-map-keys"), "must only be used with x-kubernetes-list-type map"))
	}
	if mt := s.XMapType; mt != nil {
		if !slices.Contains(mapTypes, *mt) {
			errs = append(errs, v.NewNotSupported(p.Child("x-kubernetes-map-type"), *mt, mapTypes))
		} else if s.Type != "object" {
			errs = append(errs, v.NewInvalid(p.Child("x-kubernetes-map-type"), *mt, "must only be used on type object"))
		}
	}
	if len(s.XValidations) > 0 && inJunctor {
		errs = append(errs, v.NewForbidden(p.Child("x-kubernetes-validations"), "must be empty to be structural (inside allOf, anyOf, oneOf or not)"))
	}
	for i, r := range s.XValidations {
		if r.Rule == "" {
			errs = append(errs, v.NewRequired(p.Child("x-kubernetes-validations").Index(i).Child("rule"), ""))
		}
	}
	names := make([]string, 0, len(s.Properties))
	for n := range s.Properties {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		c := s.Properties[n]
		errs = append(errs, structural(&c, p.Child("properties").Key(n), inJunctor)...)
	}
	if s.Items != nil {
		errs = append(errs, structural(s.Items, p.Child("items"), inJunctor)...)
	}
	if ap := s.AdditionalProperties; ap != nil && ap.Schema != nil {
		errs = append(errs, structural(ap.Schema, p.Child("additionalProperties"), inJunctor)...)
	}
	for _, j := range []struct {
		name string
		list []JSONSchemaProps
	}{{"allOf", s.AllOf}, {"anyOf", s.AnyOf}, {"oneOf", s.OneOf}} {
		for i := range j.list {
			errs = append(errs, structural(&j.list[i], p.Child(j.name).Index(i), true)...)
		}
	}
	if s.Not != nil {
		errs = append(errs, structural(s.Not, p.Child("not"), true)...)
	}
	return errs
}

// structuralType: a node names its type, and an array its items.
func structuralType(s *JSONSchemaProps, p *v.Path) v.ErrorList {
	var errs v.ErrorList
	switch {
	case s.Type == "":
		if !s.XIntOrString && (s.XPreserveUnknownFields == nil || !*s.XPreserveUnknownFields) {
			errs = append(errs, v.NewRequired(p.Child("type"), "must not be empty for specified object fields"))
		}
	case !slices.Contains(typesAllowed, s.Type):
		errs = append(errs, v.NewNotSupported(p.Child("type"), s.Type, typesAllowed))
	case s.Type == "array" && s.Items == nil:
		errs = append(errs, v.NewRequired(p.Child("items"), "must be specified"))
	}
	if s.Type != "object" && s.Type != "" && (len(s.Properties) > 0 || s.AdditionalProperties != nil) {
		errs = append(errs, v.NewForbidden(p.Child("properties"), "must be empty for a type other than object"))
	}
	if s.Type != "array" && s.Type != "" && s.Items != nil {
		errs = append(errs, v.NewForbidden(p.Child("items"), "must be empty for a type other than array"))
	}
	return errs
}
