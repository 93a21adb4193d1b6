package k8sapi

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
)

// Kubernetes' protobuf encoding (application/vnd.kubernetes.protobuf),
// which client-go's typed clients send — kubectl's auth can-i, create
// deployment, drain and others. Kobune stores and answers JSON; a protobuf
// request body is turned into the JSON it means, field by field from the
// field table, and then goes the same way as any other request.
//
// The envelope is the 4-byte magic "k8s\x00" and a runtime.Unknown
// message: typeMeta (1: apiVersion, kind), raw (2: the object's own
// message), contentEncoding (3), contentType (4).

// ProtoMagic starts every Kubernetes protobuf body.
var ProtoMagic = []byte("k8s\x00")

// ProtoToJSON decodes a Kubernetes protobuf body into JSON, with
// apiVersion and kind from its envelope.
func ProtoToJSON(body []byte) ([]byte, error) {
	rest, ok := bytes.CutPrefix(body, ProtoMagic)
	if !ok {
		return nil, errors.New("not a Kubernetes protobuf body (no k8s\\x00 prefix)")
	}
	var apiVersion, kind string
	var raw []byte
	err := eachField(rest, func(num protowire.Number, typ protowire.Type, v []byte, _ uint64) error {
		switch num {
		case 1:
			return eachField(v, func(n protowire.Number, _ protowire.Type, s []byte, _ uint64) error {
				switch n {
				case 1:
					apiVersion = string(s)
				case 2:
					kind = string(s)
				}
				return nil
			})
		case 2:
			raw = v
		case 3:
			if len(v) > 0 {
				return fmt.Errorf("contentEncoding %q is not supported", v)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	t, ok := ForKind(apiVersion, kind)
	if !ok && isOptions(kind) {
		// The options kinds are registered in every group version:
		// client-go sends DeleteOptions of "apps/v1" to delete a Deployment.
		t, ok = Named("io.k8s.apimachinery.pkg.apis.meta.v1." + kind)
	}
	if !ok {
		return nil, fmt.Errorf("protobuf body of kind %q (apiVersion %q): not a kind this server knows", kind, apiVersion)
	}
	obj, err := decodeMessage(t, raw)
	if err != nil {
		return nil, fmt.Errorf("protobuf %s: %w", kind, err)
	}
	obj["apiVersion"], obj["kind"] = apiVersion, kind
	return json.Marshal(obj)
}

// isOptions says whether kind is one of the meta options kinds a client
// sends as a request body.
func isOptions(kind string) bool {
	switch kind {
	case "DeleteOptions", "CreateOptions", "UpdateOptions", "PatchOptions":
		return true
	}
	return false
}

// eachField calls fn for every field of a message: for length-delimited
// fields v is the bytes, for the others n is the number.
func eachField(b []byte, fn func(num protowire.Number, typ protowire.Type, v []byte, n uint64) error) error {
	for len(b) > 0 {
		num, typ, l := protowire.ConsumeTag(b)
		if l < 0 {
			return protowire.ParseError(l)
		}
		b = b[l:]
		var v []byte
		var n uint64
		switch typ {
		case protowire.VarintType:
			n, l = protowire.ConsumeVarint(b)
		case protowire.Fixed64Type:
			n, l = protowire.ConsumeFixed64(b)
		case protowire.Fixed32Type:
			var n32 uint32
			n32, l = protowire.ConsumeFixed32(b)
			n = uint64(n32)
		case protowire.BytesType:
			v, l = protowire.ConsumeBytes(b)
		default:
			l = protowire.ConsumeFieldValue(num, typ, b)
			if l >= 0 {
				b = b[l:]
				continue
			}
		}
		if l < 0 {
			return protowire.ParseError(l)
		}
		b = b[l:]
		if err := fn(num, typ, v, n); err != nil {
			return err
		}
	}
	return nil
}

// decodeMessage decodes one message of type t into its JSON object.
func decodeMessage(t *Type, b []byte) (map[string]any, error) {
	obj := map[string]any{}
	err := eachField(b, func(num protowire.Number, typ protowire.Type, v []byte, n uint64) error {
		f, ok := t.ProtoField(int(num))
		if !ok {
			return nil // a field newer than the table: skipped, as protobuf does
		}
		switch {
		case f.Name == "": // inlined struct: its fields are the parent's
			in, ok := Named(f.Type)
			if !ok {
				return nil
			}
			m, err := decodeMessage(in, v)
			if err != nil {
				return err
			}
			for k, val := range m {
				obj[k] = val
			}
		case f.Kind == "list":
			vals, err := decodeRepeated(f, typ, v, n)
			if err != nil {
				return fmt.Errorf("%s: %w", f.Name, err)
			}
			l, _ := obj[f.Name].([]any)
			obj[f.Name] = append(l, vals...)
		case f.Kind == "map":
			key, val, err := decodeMapEntry(f, v)
			if err != nil {
				return fmt.Errorf("%s: %w", f.Name, err)
			}
			m, _ := obj[f.Name].(map[string]any)
			if m == nil {
				m = map[string]any{}
				obj[f.Name] = m
			}
			m[key] = val
		default:
			val, err := decodeValue(f.Kind, f.Type, typ, v, n)
			if err != nil {
				return fmt.Errorf("%s: %w", f.Name, err)
			}
			if !f.Pointer && isZero(val) {
				return nil // always encoded for non-pointer fields: zero is absent
			}
			obj[f.Name] = val
		}
		return nil
	})
	return obj, err
}

func isZero(v any) bool {
	switch x := v.(type) {
	case string:
		return x == ""
	case bool:
		return !x
	case int64:
		return x == 0
	case float64:
		return x == 0
	case map[string]any:
		return len(x) == 0
	case nil:
		return true
	}
	return false
}

// decodeRepeated decodes one occurrence of a repeated field: one element,
// or several packed ones.
func decodeRepeated(f *Field, typ protowire.Type, v []byte, n uint64) ([]any, error) {
	packed := typ == protowire.BytesType && (f.Elem == "int32" || f.Elem == "int64" || f.Elem == "bool" || f.Elem == "double")
	if !packed {
		val, err := decodeValue(f.Elem, f.Type, typ, v, n)
		return []any{val}, err
	}
	var out []any
	for len(v) > 0 {
		var x uint64
		var l int
		if f.Elem == "double" {
			x, l = protowire.ConsumeFixed64(v)
		} else {
			x, l = protowire.ConsumeVarint(v)
		}
		if l < 0 {
			return nil, protowire.ParseError(l)
		}
		v = v[l:]
		val, err := decodeValue(f.Elem, "", protowire.VarintType, nil, x)
		if err != nil {
			return nil, err
		}
		out = append(out, val)
	}
	return out, nil
}

// decodeMapEntry decodes a map entry message (1: key, 2: value).
func decodeMapEntry(f *Field, b []byte) (string, any, error) {
	var key string
	var val any
	err := eachField(b, func(num protowire.Number, typ protowire.Type, v []byte, n uint64) error {
		switch num {
		case 1:
			key = string(v)
		case 2:
			var err error
			val, err = decodeValue(f.Elem, f.Type, typ, v, n)
			return err
		}
		return nil
	})
	if val == nil {
		val, _ = decodeValue(f.Elem, f.Type, protowire.BytesType, nil, 0) // an empty value is not encoded
	}
	return key, val, err
}

// decodeValue decodes one value of a kind.
func decodeValue(kind, typ string, wt protowire.Type, v []byte, n uint64) (any, error) {
	switch kind {
	case "string":
		return string(v), nil
	case "bytes":
		return base64.StdEncoding.EncodeToString(v), nil
	case "bool":
		return n != 0, nil
	case "int32":
		return int64(int32(n)), nil
	case "int64":
		return int64(n), nil
	case "double":
		return math.Float64frombits(n), nil
	case "object":
		t, ok := Named(typ)
		if !ok {
			return map[string]any{}, nil
		}
		return decodeMessage(t, v)
	case "time", "microTime":
		if len(v) == 0 {
			return "", nil // the zero time is an empty message
		}
		var sec, nanos int64
		err := eachField(v, func(num protowire.Number, _ protowire.Type, _ []byte, x uint64) error {
			switch num {
			case 1:
				sec = int64(x)
			case 2:
				nanos = int64(int32(x))
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		tm := time.Unix(sec, nanos).UTC()
		if kind == "microTime" {
			return tm.Format("2006-01-02T15:04:05.000000Z07:00"), nil
		}
		return tm.Format(time.RFC3339), nil
	case "duration":
		d, _, err := firstField(v)
		return time.Duration(int64(d)).String(), err
	case "quantity":
		_, q, err := firstField(v)
		return string(q), err
	case "intOrString":
		var isString bool
		var i int64
		var s string
		err := eachField(v, func(num protowire.Number, _ protowire.Type, b []byte, x uint64) error {
			switch num {
			case 1:
				isString = x == 1
			case 2:
				i = int64(int32(x))
			case 3:
				s = string(b)
			}
			return nil
		})
		if isString {
			return s, err
		}
		return i, err
	case "schemaOrArray", "schemaOrBool", "schemaOrStringArray":
		return decodeSchemaUnion(kind, typ, v)
	case "raw", "fieldsV1":
		_, raw, err := firstField(v)
		if err != nil || len(raw) == 0 {
			return nil, err
		}
		if !json.Valid(raw) {
			return nil, errors.New("embedded object is not JSON")
		}
		return json.RawMessage(raw), nil
	}
	return nil, fmt.Errorf("unknown field kind %q", kind)
}

// decodeSchemaUnion decodes a JSON schema's either-or message into its
// JSON: JSONSchemaPropsOrArray (1: schema, 2: schemas) is the schema or the
// list; JSONSchemaPropsOrBool (1: allows, 2: schema) the schema or the
// boolean; JSONSchemaPropsOrStringArray (1: schema, 2: property) the
// schema or the list of names. typ is the schema's type.
func decodeSchemaUnion(kind, typ string, b []byte) (any, error) {
	t, ok := Named(typ)
	if !ok {
		return nil, fmt.Errorf("no type %s", typ)
	}
	var schema map[string]any
	var list []any
	allows := false
	schemaField := protowire.Number(1)
	if kind == "schemaOrBool" {
		schemaField = 2
	}
	err := eachField(b, func(num protowire.Number, _ protowire.Type, v []byte, n uint64) error {
		switch {
		case num == schemaField:
			m, err := decodeMessage(t, v)
			schema = m
			return err
		case kind == "schemaOrBool" && num == 1:
			allows = n != 0
		case kind == "schemaOrArray" && num == 2:
			m, err := decodeMessage(t, v)
			list = append(list, m)
			return err
		case kind == "schemaOrStringArray" && num == 2:
			list = append(list, string(v))
		}
		return nil
	})
	switch {
	case err != nil:
		return nil, err
	case schema != nil:
		return schema, nil
	case kind == "schemaOrBool":
		return allows, nil
	case list == nil:
		return []any{}, nil
	}
	return list, nil
}

// firstField is field 1 of a message that wraps one value (Quantity,
// Duration, RawExtension): as a number, or as bytes.
func firstField(b []byte) (n uint64, v []byte, err error) {
	err = eachField(b, func(num protowire.Number, _ protowire.Type, bv []byte, x uint64) error {
		if num == 1 {
			n, v = x, bv
		}
		return nil
	})
	return n, v, err
}
