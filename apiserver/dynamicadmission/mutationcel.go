package dynamicadmission

import (
	"reflect"
	"strings"
	"sync"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
)

// A MutatingAdmissionPolicy's applyConfiguration is a CEL expression that
// builds the part of the object it sets, written as object constructions:
// Object{spec: Object.spec{replicas: 3}}. Kubernetes type-checks those
// names against the kind's schema; Kobune's type provider accepts
// "Object" and every "Object.<field>..." as a struct of dynamic fields and
// builds each as a map, which is then merged into the object as
// server-side apply merges (mutation.go), where a field the kind does not
// have is refused.

// objectTypes adds the Object types to a provider.
type objectTypes struct{ types.Provider }

func isObjectType(name string) bool {
	return name == "Object" || strings.HasPrefix(name, "Object.") || name == "JSONPatch"
}

func (p objectTypes) FindStructType(name string) (*types.Type, bool) {
	if isObjectType(name) {
		return types.NewTypeTypeWithParam(types.NewObjectType(name)), true
	}
	return p.Provider.FindStructType(name)
}

func (p objectTypes) FindStructFieldNames(name string) ([]string, bool) {
	if isObjectType(name) {
		return nil, true
	}
	return p.Provider.FindStructFieldNames(name)
}

func (p objectTypes) FindStructFieldType(name, field string) (*types.FieldType, bool) {
	if isObjectType(name) {
		return &types.FieldType{Type: types.DynType,
			IsSet:   func(any) bool { return true },
			GetFrom: func(any) (any, error) { return nil, nil }}, true
	}
	return p.Provider.FindStructFieldType(name, field)
}

func (p objectTypes) NewValue(name string, fields map[string]ref.Val) ref.Val {
	if !isObjectType(name) {
		return p.Provider.NewValue(name, fields)
	}
	m := make(map[string]any, len(fields))
	for k, v := range fields {
		m[k] = nativeJSON(v)
	}
	return types.DefaultTypeAdapter.NativeToValue(m)
}

// nativeJSON turns what CEL values convert to into JSON's shapes: maps
// keyed by strings, lists, strings, numbers (integers kept), booleans.
func nativeJSON(v any) any {
	switch x := v.(type) {
	case ref.Val:
		n, err := x.ConvertToNative(reflect.TypeFor[any]())
		if err != nil {
			return nil
		}
		return nativeJSON(n)
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = nativeJSON(e)
		}
		return out
	case map[any]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			ks, ok := nativeJSON(k).(string)
			if !ok {
				continue
			}
			out[ks] = nativeJSON(e)
		}
		return out
	case map[ref.Val]ref.Val:
		out := make(map[string]any, len(x))
		for k, e := range x {
			if ks, ok := k.Value().(string); ok {
				out[ks] = nativeJSON(e)
			}
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = nativeJSON(e)
		}
		return out
	case []ref.Val:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = nativeJSON(e)
		}
		return out
	}
	return v
}

// MutationEnv is PolicyEnv with the Object types.
var MutationEnv = sync.OnceValues(func() (*cel.Env, error) {
	base, err := PolicyEnv()
	if err != nil {
		return nil, err
	}
	return base.Extend(cel.CustomTypeProvider(objectTypes{base.CELTypeProvider()}))
})
