package apiextensions

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"net"
	"net/mail"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	apiext "github.com/kobune/kobune/api/apiextensions"
	"github.com/kobune/kobune/api/meta"
	v "github.com/kobune/kobune/api/validation"
)

// The three things the server does with an object of a custom kind, each a
// walk of the object beside its version's structural schema, in the order
// kube-apiserver does them: prune (drop what the schema does not name,
// and nulls it does not allow), default (fill what the schema defaults),
// validate (types, formats, bounds, required, enums, list types).

// prune removes from v (an object's value at path p) every field s does
// not specify, unless s keeps unknown fields; it returns the paths of the
// fields it removed. A null where s is not nullable is removed too, but
// not reported: Kubernetes drops such nulls so that defaults apply.
func prune(val any, s *apiext.JSONSchemaProps, p string, out *[]string) {
	if s == nil {
		return
	}
	switch x := val.(type) {
	case map[string]any:
		if s.XIntOrString {
			return
		}
		keep := s.XPreserveUnknownFields != nil && *s.XPreserveUnknownFields
		for k, child := range x {
			cs, known := s.Properties[k]
			if s.XEmbeddedResource && k == "metadata" {
				// An embedded object's metadata is an ObjectMeta, as at
				// the root, whatever the schema says of it.
				if md, ok := child.(map[string]any); ok {
					pruneMetadata(md, join(p, k), out)
				}
				continue
			}
			if s.XEmbeddedResource && (k == "apiVersion" || k == "kind") && !known {
				continue
			}
			var childSchema *apiext.JSONSchemaProps
			switch {
			case known:
				childSchema = &cs
			case s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil:
				childSchema = s.AdditionalProperties.Schema
			case s.AdditionalProperties != nil && s.AdditionalProperties.Allows, keep:
				continue
			default:
				delete(x, k)
				*out = append(*out, join(p, k))
				continue
			}
			if child == nil && !childSchema.Nullable {
				delete(x, k)
				continue
			}
			prune(child, childSchema, join(p, k), out)
		}
	case []any:
		for i, item := range x {
			prune(item, s.Items, fmt.Sprintf("%s[%d]", p, i), out)
		}
	}
}

// objectMetaFields are the JSON names of ObjectMeta's fields.
var objectMetaFields = sync.OnceValue(func() map[string]bool {
	out := map[string]bool{}
	t := reflect.TypeFor[meta.ObjectMeta]()
	for i := range t.NumField() {
		if name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ","); name != "" && name != "-" {
			out[name] = true
		}
	}
	return out
})

// pruneMetadata removes from an object's metadata (at path p) the fields
// ObjectMeta does not have, and reports them.
func pruneMetadata(md map[string]any, p string, out *[]string) {
	for k := range md {
		if !objectMetaFields()[k] {
			delete(md, k)
			*out = append(*out, join(p, k))
		}
	}
}

func join(p, k string) string {
	if p == "" {
		return k
	}
	return p + "." + k
}

// applyDefaults fills, in every object v holds, the properties s defaults
// that are absent, then descends — into defaulted values too.
func applyDefaults(val any, s *apiext.JSONSchemaProps) {
	if s == nil {
		return
	}
	switch x := val.(type) {
	case map[string]any:
		for k, cs := range s.Properties {
			if _, ok := x[k]; !ok && cs.Default != nil {
				if d, err := meta.DecodeJSONValue(*cs.Default); err == nil {
					x[k] = d
				}
			}
		}
		for k, child := range x {
			if cs, ok := s.Properties[k]; ok {
				applyDefaults(child, &cs)
			} else if ap := s.AdditionalProperties; ap != nil && ap.Schema != nil {
				applyDefaults(child, ap.Schema)
			}
		}
	case []any:
		for _, item := range x {
			applyDefaults(item, s.Items)
		}
	}
}

// hasDefault: a property of s, at any depth, has a default.
func hasDefault(s *apiext.JSONSchemaProps) bool {
	if s == nil {
		return false
	}
	for _, cs := range s.Properties {
		if cs.Default != nil || hasDefault(&cs) {
			return true
		}
	}
	if ap := s.AdditionalProperties; ap != nil && hasDefault(ap.Schema) {
		return true
	}
	return hasDefault(s.Items)
}

// readDefaulted is a stored object as it is read: the schema's defaults
// applied, resourceVersion rv. Numbers keep their digits (json.Number).
func readDefaulted(s *apiext.JSONSchemaProps, stored []byte, rv string) ([]byte, bool) {
	d := json.NewDecoder(bytes.NewReader(stored))
	d.UseNumber()
	var m map[string]any
	if err := d.Decode(&m); err != nil {
		return nil, false
	}
	applyDefaults(m, s)
	md, ok := m["metadata"].(map[string]any)
	if !ok {
		return nil, false
	}
	md["resourceVersion"] = rv
	b, err := json.Marshal(m)
	return b, err == nil
}

// validate checks val against s at p.
func validate(val any, s *apiext.JSONSchemaProps, p *v.Path) v.ErrorList {
	if s == nil {
		return nil
	}
	if val == nil {
		if s.Nullable || (s.Type == "" && !s.XIntOrString) {
			return nil
		}
		return v.ErrorList{v.NewInvalid(p, "null", fmt.Sprintf("%s in body must be of type %s: \"null\"", p, typeName(s)))}
	}
	if errs := checkType(val, s, p); errs != nil {
		return errs
	}
	var errs v.ErrorList
	if len(s.Enum) > 0 && !inEnum(val, s.Enum) {
		allowed := make([]string, len(s.Enum))
		for i, e := range s.Enum {
			allowed[i] = string(e)
		}
		errs = append(errs, v.NewNotSupported(p, display(val), allowed))
	}
	switch x := val.(type) {
	case string:
		errs = append(errs, validateString(x, s, p)...)
	case json.Number:
		errs = append(errs, validateNumber(x, s, p)...)
	case []any:
		errs = append(errs, validateArray(x, s, p)...)
	case map[string]any:
		errs = append(errs, validateObject(x, s, p)...)
	}
	for i := range s.AllOf {
		errs = append(errs, validate(val, &s.AllOf[i], p)...)
	}
	if len(s.AnyOf) > 0 {
		ok := false
		for i := range s.AnyOf {
			if len(validate(val, &s.AnyOf[i], p)) == 0 {
				ok = true
				break
			}
		}
		if !ok && !s.XIntOrString {
			errs = append(errs, v.NewInvalid(p, display(val), "must validate at least one schema (anyOf)"))
		}
	}
	if len(s.OneOf) > 0 {
		n := 0
		for i := range s.OneOf {
			if len(validate(val, &s.OneOf[i], p)) == 0 {
				n++
			}
		}
		if n != 1 {
			errs = append(errs, v.NewInvalid(p, display(val), fmt.Sprintf("must validate one and only one schema (oneOf); it validates %d", n)))
		}
	}
	if s.Not != nil && len(validate(val, s.Not, p)) == 0 {
		errs = append(errs, v.NewInvalid(p, display(val), "must not validate the schema (not)"))
	}
	return errs
}

func typeName(s *apiext.JSONSchemaProps) string {
	if s.XIntOrString {
		return "integer,string"
	}
	return s.Type
}

// jsonType names a value's JSON type as a schema would.
func jsonType(val any) string {
	switch x := val.(type) {
	case map[string]any:
		return "object"
	case []any:
		return "array"
	case string:
		return "string"
	case bool:
		return "boolean"
	case json.Number:
		if isInteger(x) {
			return "integer"
		}
		return "number"
	}
	return "null"
}

func isInteger(n json.Number) bool {
	if _, err := n.Int64(); err == nil {
		return true
	}
	f, err := n.Float64()
	return err == nil && f == math.Trunc(f) && !strings.ContainsAny(string(n), ".eE")
}

func checkType(val any, s *apiext.JSONSchemaProps, p *v.Path) v.ErrorList {
	t := jsonType(val)
	ok := true
	switch {
	case s.XIntOrString:
		ok = t == "integer" || t == "string"
	case s.Type == "":
	case s.Type == "number":
		ok = t == "number" || t == "integer"
	default:
		ok = t == s.Type
	}
	if ok {
		return nil
	}
	return v.ErrorList{v.NewInvalid(p, t, fmt.Sprintf("%s in body must be of type %s: %q", p, typeName(s), t))}
}

func display(val any) any {
	switch x := val.(type) {
	case string:
		return x
	case json.Number:
		return string(x)
	case bool:
		return x
	}
	b, _ := json.Marshal(val)
	return string(b)
}

func inEnum(val any, enum []apiext.JSON) bool {
	for _, e := range enum {
		ev, err := meta.DecodeJSONValue(e)
		if err == nil && equalJSON(val, ev) {
			return true
		}
	}
	return false
}

// equalJSON compares two decoded JSON values, numbers by value.
func equalJSON(a, b any) bool {
	an, aok := a.(json.Number)
	bn, bok := b.(json.Number)
	if aok && bok {
		af, _ := an.Float64()
		bf, _ := bn.Float64()
		return an == bn || af == bf
	}
	return reflect.DeepEqual(a, b)
}

var patterns sync.Map // pattern → *regexp.Regexp

func compiled(pattern string) *regexp.Regexp {
	if r, ok := patterns.Load(pattern); ok {
		return r.(*regexp.Regexp)
	}
	r, err := regexp.Compile(pattern)
	if err != nil {
		return nil // refused when the definition was stored
	}
	patterns.Store(pattern, r)
	return r
}

func validateString(x string, s *apiext.JSONSchemaProps, p *v.Path) v.ErrorList {
	var errs v.ErrorList
	n := int64(utf8.RuneCountInString(x))
	if s.MaxLength != nil && n > *s.MaxLength {
		errs = append(errs, v.NewTooLong(p, x, int(*s.MaxLength)))
	}
	if s.MinLength != nil && n < *s.MinLength {
		errs = append(errs, v.NewInvalid(p, x, fmt.Sprintf("%s in body should be at least %d chars long", p, *s.MinLength)))
	}
	if s.Pattern != "" {
		if r := compiled(s.Pattern); r != nil && !r.MatchString(x) {
			errs = append(errs, v.NewInvalid(p, x, fmt.Sprintf("%s in body should match '%s'", p, s.Pattern)))
		}
	}
	if s.Format != "" && !validFormat(s.Format, x) {
		errs = append(errs, v.NewInvalid(p, x, fmt.Sprintf("%s in body must be of type %s: %q", p, s.Format, x)))
	}
	return errs
}

var (
	uuidRe     = regexp.MustCompile(`^(?i)[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$`)
	hostnameRe = regexp.MustCompile(`^[a-zA-Z0-9]([-a-zA-Z0-9]{0,62})?(\.[a-zA-Z0-9]([-a-zA-Z0-9]{0,62})?)*\.?$`)
	byteRe     = regexp.MustCompile(`^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$`)
)

// validFormat checks the formats Kubernetes validates; any other format
// is documentation only, as there.
func validFormat(format, x string) bool {
	switch format {
	case "date-time", "datetime":
		_, err := time.Parse(time.RFC3339Nano, x)
		return err == nil
	case "date":
		_, err := time.Parse("2006-01-02", x)
		return err == nil
	case "duration":
		_, err := time.ParseDuration(x)
		return err == nil
	case "int32":
		_, err := strconv.ParseInt(x, 10, 32)
		return err == nil
	case "int64":
		_, err := strconv.ParseInt(x, 10, 64)
		return err == nil
	case "byte":
		return byteRe.MatchString(x)
	case "uuid":
		return uuidRe.MatchString(x)
	case "email":
		_, err := mail.ParseAddress(x)
		return err == nil
	case "hostname":
		return len(x) <= 255 && hostnameRe.MatchString(x)
	case "ipv4":
		ip := net.ParseIP(x)
		return ip != nil && ip.To4() != nil && !strings.Contains(x, ":")
	case "ipv6":
		ip := net.ParseIP(x)
		return ip != nil && strings.Contains(x, ":")
	case "cidr":
		_, _, err := net.ParseCIDR(x)
		return err == nil
	case "mac":
		_, err := net.ParseMAC(x)
		return err == nil
	}
	return true
}

func validateNumber(x json.Number, s *apiext.JSONSchemaProps, p *v.Path) v.ErrorList {
	f, err := x.Float64()
	if err != nil {
		return v.ErrorList{v.NewInvalid(p, string(x), "not a number")}
	}
	var errs v.ErrorList
	if m := s.Maximum; m != nil && (f > *m || s.ExclusiveMaximum && f == *m) {
		word := "less than or equal to"
		if s.ExclusiveMaximum {
			word = "less than"
		}
		errs = append(errs, v.NewInvalid(p, string(x), fmt.Sprintf("%s in body should be %s %v", p, word, *m)))
	}
	if m := s.Minimum; m != nil && (f < *m || s.ExclusiveMinimum && f == *m) {
		word := "greater than or equal to"
		if s.ExclusiveMinimum {
			word = "greater than"
		}
		errs = append(errs, v.NewInvalid(p, string(x), fmt.Sprintf("%s in body should be %s %v", p, word, *m)))
	}
	if m := s.MultipleOf; m != nil && *m != 0 {
		if q := f / *m; q != math.Trunc(q) {
			errs = append(errs, v.NewInvalid(p, string(x), fmt.Sprintf("%s in body should be a multiple of %v", p, *m)))
		}
	}
	return errs
}

func validateArray(x []any, s *apiext.JSONSchemaProps, p *v.Path) v.ErrorList {
	var errs v.ErrorList
	n := int64(len(x))
	if s.MaxItems != nil && n > *s.MaxItems {
		errs = append(errs, v.NewInvalid(p, n, fmt.Sprintf("must have at most %d items", *s.MaxItems)))
	}
	if s.MinItems != nil && n < *s.MinItems {
		errs = append(errs, v.NewInvalid(p, n, fmt.Sprintf("%s in body should have at least %d items", p, *s.MinItems)))
	}
	for i, item := range x {
		errs = append(errs, validate(item, s.Items, p.Index(i))...)
	}
	if lt := s.XListType; lt != nil {
		switch *lt {
		case "set":
			for i := range x {
				for j := 0; j < i; j++ {
					if equalJSON(x[i], x[j]) {
						errs = append(errs, v.NewDuplicate(p.Index(i), display(x[i])))
						break
					}
				}
			}
		case "map":
			seen := map[string]bool{}
			for i, item := range x {
				m, ok := item.(map[string]any)
				if !ok {
					continue
				}
				key := make([]string, len(s.XListMapKeys))
				for j, k := range s.XListMapKeys {
					b, _ := json.Marshal(m[k])
					key[j] = k + "=" + string(b)
				}
				ks := strings.Join(key, ",")
				if seen[ks] {
					errs = append(errs, v.NewDuplicate(p.Index(i), "{"+ks+"}"))
				}
				seen[ks] = true
			}
		}
	}
	return errs
}

func validateObject(x map[string]any, s *apiext.JSONSchemaProps, p *v.Path) v.ErrorList {
	var errs v.ErrorList
	for _, r := range s.Required {
		if _, ok := x[r]; !ok {
			errs = append(errs, v.NewRequired(p.Child(r), ""))
		}
	}
	n := int64(len(x))
	if s.MaxProperties != nil && n > *s.MaxProperties {
		errs = append(errs, v.NewInvalid(p, n, fmt.Sprintf("must have at most %d properties", *s.MaxProperties)))
	}
	if s.MinProperties != nil && n < *s.MinProperties {
		errs = append(errs, v.NewInvalid(p, n, fmt.Sprintf("%s in body should have at least %d properties", p, *s.MinProperties)))
	}
	if s.XEmbeddedResource {
		errs = append(errs, validateEmbedded(x, p)...)
	}
	for _, k := range slices.Sorted(maps.Keys(x)) {
		if cs, ok := s.Properties[k]; ok {
			errs = append(errs, validate(x[k], &cs, p.Child(k))...)
		} else if ap := s.AdditionalProperties; ap != nil && ap.Schema != nil {
			errs = append(errs, validate(x[k], ap.Schema, p.Key(k))...)
		}
	}
	return errs
}

// validateEmbedded: an embedded object (x-kubernetes-embedded-resource)
// names its apiVersion and kind and has object metadata.
func validateEmbedded(x map[string]any, p *v.Path) v.ErrorList {
	var errs v.ErrorList
	for _, f := range []string{"apiVersion", "kind"} {
		if s, ok := x[f].(string); !ok || s == "" {
			errs = append(errs, v.NewRequired(p.Child(f), "must not be empty"))
		}
	}
	if md, ok := x["metadata"]; ok {
		if _, isMap := md.(map[string]any); !isMap {
			errs = append(errs, v.NewInvalid(p.Child("metadata"), jsonType(md), "must be an object"))
		}
	}
	return errs
}
