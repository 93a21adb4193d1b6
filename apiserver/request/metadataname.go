package request

import (
	"bytes"
	"encoding/json"
)

// MetadataName is an object's metadata.name, read with a token scanner
// that stops there (metadata comes first in what clients send), so that
// authorizing a create does not parse the whole object a second time.
func MetadataName(obj []byte) string {
	dec := json.NewDecoder(bytes.NewReader(obj))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return ""
	}
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return ""
		}
		if key != "metadata" {
			if skipValue(dec) != nil {
				return ""
			}
			continue
		}
		if t, err := dec.Token(); err != nil || t != json.Delim('{') {
			return ""
		}
		for dec.More() {
			k, err := dec.Token()
			if err != nil {
				return ""
			}
			if k == "name" {
				v, _ := dec.Token()
				n, _ := v.(string)
				return n
			}
			if skipValue(dec) != nil {
				return ""
			}
		}
		return ""
	}
	return ""
}

// skipValue reads past one JSON value.
func skipValue(dec *json.Decoder) error {
	depth := 0
	for {
		t, err := dec.Token()
		if err != nil {
			return err
		}
		switch t {
		case json.Delim('{'), json.Delim('['):
			depth++
		case json.Delim('}'), json.Delim(']'):
			depth--
		}
		if depth == 0 {
			return nil
		}
	}
}
