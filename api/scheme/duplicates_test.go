package scheme

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

func TestDuplicateFields(t *testing.T) {
	for _, tt := range []struct {
		json string
		want []string
	}{
		{`{"a":1,"b":2}`, nil},
		{`{"spec":{"replicas":1,"replicas":2}}`, []string{`duplicate field "spec.replicas"`}},
		{`{"spec":{"containers":[{"name":"a","image":"x","name":"b"}]},"kind":"Pod","kind":"Pod"}`,
			[]string{`duplicate field "spec.containers[0].name"`, `duplicate field "kind"`}},
		{`{"a":{"x":1},"b":{"x":1}}`, nil}, // the same key in two objects is no duplicate
		{`not json`, nil},
		{`{"a\"b":1,"a\"b":2, "s":"x,}]"}`, []string{`duplicate field "a\\\"b"`}},
		{`{"k0":0,"k1":1,"k2":2,"k3":3,"k4":4,"k5":5,"k6":6,"k7":7,"k8":8,"k9":9,"k10":0,"k11":1,"k12":2,"k13":3,"k14":4,"k15":5,"k16":6,"k17":7,"k3":3}`,
			[]string{`duplicate field "k3"`}},
		{`{"a":[1,{"b":true,"b":null}]}`, []string{`duplicate field "a[1].b"`}},
	} {
		if got := DuplicateFields([]byte(tt.json)); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("DuplicateFields(%s) = %q, want %q", tt.json, got, tt.want)
		}
	}
}

// FuzzDuplicateFields: any bytes are scanned without a panic, and what a
// valid JSON document reports names only keys it holds.
func FuzzDuplicateFields(f *testing.F) {
	for _, s := range []string{`{"a":1}`, `{"a":1,"a":2}`, `[{"x":[{"y":1,"y":2}]}]`, `{"a":"\"}"}`, `{`, `"`, `{"a":}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		dups := DuplicateFields(data)
		if !json.Valid(data) {
			return
		}
		for _, d := range dups {
			p := strings.TrimSuffix(strings.TrimPrefix(d, `duplicate field "`), `"`)
			last := p[strings.LastIndexAny(p, ".]")+1:]
			if !bytes.Contains(data, []byte(last)) {
				t.Errorf("%q reported for %q", d, data)
			}
		}
	})
}
