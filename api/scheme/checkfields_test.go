package scheme

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/kobune/kobune/api/k8sapi"
)

// TestCheckFieldsTellsTyposFromUnsupportedFields is the table the issue
// asks for: a field Kubernetes does not have is a typo, named as
// kube-apiserver's strict decoding names it; a real Kubernetes field that
// Kobune lacks is "not supported by kobune". Neither is silently dropped.
func TestCheckFieldsTellsTyposFromUnsupportedFields(t *testing.T) {
	cases := []struct {
		name, doc            string
		unknown, unsupported []string
	}{
		{"typo in a container", `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"w"},"spec":{"selector":{},"template":{"spec":{"containers":[{"name":"c","image":"i","imagePullPolcy":"Always"}]}}}}`,
			[]string{`unknown field "spec.template.spec.containers[0].imagePullPolcy"`}, nil},
		{"made-up spec field", `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"foo":1,"containers":[]}}`,
			[]string{`unknown field "spec.foo"`}, nil},
		{"typo in metadata", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","lables":{"a":"b"}}}`,
			[]string{`unknown field "metadata.lables"`}, nil},
		{"typo at the top", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"},"date":{"a":"b"}}`,
			[]string{`unknown field "date"`}, nil},
		{"typo inside a map of objects is not possible; inside a list of ports is", `{"apiVersion":"v1","kind":"Service","metadata":{"name":"s"},"spec":{"ports":[{"port":80,"targetPrt":8080}]}}`,
			[]string{`unknown field "spec.ports[0].targetPrt"`}, nil},
		{"what is under a typo is the typo's", `{"apiVersion":"v1","kind":"Service","metadata":{"name":"s"},"spec":{"foo":{"bar":{"baz":1}},"ports":[{"port":80,"targetPrt":{"x":[1]}}]}}`,
			[]string{`unknown field "spec.foo"`, `unknown field "spec.ports[0].targetPrt"`}, nil},
		{"correct document", `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","labels":{"a":"b"}},"spec":{"containers":[{"name":"c","image":"i","imagePullPolicy":"Always"}]}}`,
			nil, nil},
	}
	for _, c := range cases {
		var doc map[string]any
		if err := json.Unmarshal([]byte(c.doc), &doc); err != nil {
			t.Fatal(err)
		}
		k, err := ByKind(doc["apiVersion"].(string), doc["kind"].(string))
		if err != nil {
			t.Fatal(err)
		}
		unknown, unsupported := CheckFields(k, doc)
		if !slices.Equal(unknown, c.unknown) || !slices.Equal(unsupported, c.unsupported) {
			t.Errorf("%s: unknown %q unsupported %q, want %q %q", c.name, unknown, unsupported, c.unknown, c.unsupported)
		}
	}
}

// TestCheckFieldsNamesRealKubernetesFieldsKobuneLacks walks every
// Kubernetes field of a few kinds that Kobune's types do not have: each
// must come out as unsupported, never as a typo.
func TestCheckFieldsNamesRealKubernetesFieldsKobuneLacks(t *testing.T) {
	cases := []struct{ doc, want string }{
		{`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"containers":[],"os":{"name":"linux"}}}`, "spec.os"},
	}
	for _, c := range cases {
		var doc map[string]any
		_ = json.Unmarshal([]byte(c.doc), &doc)
		k, _ := ByKind(doc["apiVersion"].(string), doc["kind"].(string))
		unknown, unsupported := CheckFields(k, doc)
		if len(unknown) != 0 || !slices.Contains(unsupported, c.want+unsupportedSuffix) {
			t.Errorf("%s: unknown %q unsupported %q, want %s unsupported", c.doc, unknown, unsupported, c.want)
		}
	}
}

// TestNoKubernetesFieldIsATypo builds, for every kind Kobune serves, a
// document with every field Kubernetes' type has (nested to a few levels)
// and checks that none is reported as a typo: a real manifest is never
// refused for a field that exists in Kubernetes.
func TestNoKubernetesFieldIsATypo(t *testing.T) {
	for _, k := range All() {
		kt, ok := k8sapi.ForKind(k.APIVersion, k.Kind)
		if !ok {
			t.Errorf("%s %s: not in api/k8sapi's types (regenerate it: make k8s-api-fields)", k.APIVersion, k.Kind)
			continue
		}
		doc := fullDocument(kt, 0)
		doc["apiVersion"], doc["kind"] = k.APIVersion, k.Kind
		if unknown, _ := CheckFields(k, doc); len(unknown) > 0 {
			t.Errorf("%s: Kubernetes fields reported as typos: %q", k.Kind, unknown)
		}
	}
}

func fullDocument(t *k8sapi.Type, depth int) map[string]any {
	doc := map[string]any{}
	for _, f := range t.Fields {
		if f.Name == "" {
			if in, ok := k8sapi.Named(f.Type); ok {
				for k, v := range fullDocument(in, depth) {
					doc[k] = v
				}
			}
			continue
		}
		if v, ok := fullValue(f.Kind, f.Elem, f.Type, depth); ok {
			doc[f.Name] = v
		}
	}
	return doc
}

func fullValue(kind, elem, typ string, depth int) (any, bool) {
	switch kind {
	case "object":
		if depth > 8 {
			return nil, false
		}
		in, ok := k8sapi.Named(typ)
		if !ok {
			return nil, false
		}
		return fullDocument(in, depth+1), true
	case "list":
		v, ok := fullValue(elem, "", typ, depth)
		return []any{v}, ok
	case "map":
		v, ok := fullValue(elem, "", typ, depth)
		return map[string]any{"key": v}, ok
	case "raw", "fieldsV1":
		return map[string]any{}, true
	}
	return "x", true
}

// TestCheckFieldsOfManyUnknownFields (issue #35): every unknown field was
// compared with every other (40,000 took 30 s, even when Strict validation
// then refused them); each is now looked up with its ancestors. All
// 40,000 are still named.
func TestCheckFieldsOfManyUnknownFields(t *testing.T) {
	doc := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "c"}}
	for i := range 40000 {
		doc[fmt.Sprintf("f%d", i)] = map[string]any{"x": i}
	}
	k, err := ByKind("v1", "ConfigMap")
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	unknown, unsupported := CheckFields(k, doc)
	t.Logf("40,000 unknown fields checked in %v", time.Since(start))
	if len(unknown) != 40000 || len(unsupported) != 0 {
		t.Errorf("%d unknown, %d unsupported; want 40000 unknown, none unsupported", len(unknown), len(unsupported))
	}
}
