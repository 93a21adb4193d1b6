package meta

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// Unstructured is an object of a kind the API server learned at run time
// (a custom resource, defined by a CustomResourceDefinition): its type and
// object metadata typed, as every object's are, and the rest as plain JSON
// values — numbers kept as json.Number, so that 3 stays an integer and
// 2^60 exact. Status is the "status" field (nil when the object has none),
// apart from the rest so that the status subresource can keep or replace
// it as it does a built-in kind's Status; Content holds every other
// top-level field ("spec", "data", ...).
//
// It mirrors k8s.io/apimachinery's unstructured.Unstructured.
type Unstructured struct {
	TypeMeta
	ObjectMeta
	Status  any
	Content map[string]any
}

// MarshalJSON writes the object as one JSON object.
func (u *Unstructured) MarshalJSON() ([]byte, error) {
	m := make(map[string]any, len(u.Content)+4)
	for k, v := range u.Content {
		m[k] = v
	}
	if u.APIVersion != "" {
		m["apiVersion"] = u.APIVersion
	}
	if u.Kind != "" {
		m["kind"] = u.Kind
	}
	m["metadata"] = &u.ObjectMeta
	if u.Status != nil {
		m["status"] = u.Status
	}
	return json.Marshal(m)
}

// UnmarshalJSON reads a JSON object: apiVersion and kind must be strings,
// metadata an object of ObjectMeta's fields.
func (u *Unstructured) UnmarshalJSON(b []byte) error {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(b, &fields); err != nil {
		return err
	}
	if fields == nil {
		return fmt.Errorf("an object must be a JSON object, not null")
	}
	*u = Unstructured{Content: map[string]any{}}
	for k, raw := range fields {
		var err error
		switch k {
		case "apiVersion":
			err = json.Unmarshal(raw, &u.APIVersion)
		case "kind":
			err = json.Unmarshal(raw, &u.Kind)
		case "metadata":
			if !bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
				err = json.Unmarshal(raw, &u.ObjectMeta)
			}
		case "status":
			u.Status, err = DecodeJSONValue(raw)
		default:
			u.Content[k], err = DecodeJSONValue(raw)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", k, err)
		}
	}
	return nil
}

// DecodeJSONValue decodes any JSON value, numbers as json.Number.
func DecodeJSONValue(raw []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}

// Object returns the whole object as a JSON value (a map), as a schema
// sees it; metadata is a map too.
func (u *Unstructured) Object() (map[string]any, error) {
	b, err := u.MarshalJSON()
	if err != nil {
		return nil, err
	}
	v, err := DecodeJSONValue(b)
	if err != nil {
		return nil, err
	}
	return v.(map[string]any), nil
}
