package k8sapi_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/kobune/kobune/api/k8sapi"
	"github.com/kobune/kobune/api/scheme"
)

// TestProtoToJSONMatchesKubernetesJSON decodes objects that
// k8s.io/apimachinery's own protobuf serializer wrote (testdata, made by
// `go run ./tools/k8sapi -fixtures`) and checks that they mean what the
// same objects in Kubernetes' JSON mean: decoded into Kobune's types, both
// are equal field by field — replicas: 0 stays 0, bytes stay bytes,
// IntOrString and Quantity keep their form.
func TestProtoToJSONMatchesKubernetesJSON(t *testing.T) {
	files, _ := filepath.Glob("testdata/*.pb")
	if len(files) < 5 {
		t.Fatalf("testdata has %d protobuf fixtures", len(files))
	}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".pb")
		pb, _ := os.ReadFile(f)
		want, _ := os.ReadFile(strings.TrimSuffix(f, ".pb") + ".json")
		got, err := k8sapi.ProtoToJSON(pb)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if name == "selfsubjectaccessreview" {
			// Not a stored kind: compare the JSON documents themselves.
			var g, w map[string]any
			_ = json.Unmarshal(got, &g)
			_ = json.Unmarshal(want, &w)
			delete(w, "metadata")
			delete(w, "status")
			delete(g, "metadata")
			delete(g, "status")
			if !reflect.DeepEqual(g, w) {
				t.Errorf("%s:\n got %s\nwant %s", name, got, want)
			}
			continue
		}
		var tm struct{ APIVersion, Kind string }
		_ = json.Unmarshal(want, &tm)
		k, err := scheme.ByKind(tm.APIVersion, tm.Kind)
		if err != nil {
			t.Fatal(err)
		}
		fromProto, err := k.Decode(got)
		if err != nil {
			t.Errorf("%s: decoding the protobuf's JSON: %v\n%s", name, err, got)
			continue
		}
		fromJSON, err := k.Decode(want)
		if err != nil {
			t.Fatal(err)
		}
		a, _ := json.Marshal(fromProto)
		b, _ := json.Marshal(fromJSON)
		if string(a) != string(b) {
			t.Errorf("%s: protobuf and JSON differ:\n proto %s\n  json %s", name, a, b)
		}
	}
}

// TestProtoToJSONRefusesGarbage: a body that is not Kubernetes protobuf,
// or is cut short, is an error, never a panic or a half object.
func TestProtoToJSONRefusesGarbage(t *testing.T) {
	pb, _ := os.ReadFile("testdata/deployment.pb")
	for _, b := range [][]byte{nil, []byte("{}"), []byte("k8s\x00\xff\xff\xff"), pb[:len(pb)/2], append([]byte("k8s\x00"), 0x0a, 0x05, 'x')} {
		if _, err := k8sapi.ProtoToJSON(b); err == nil {
			t.Errorf("%q: no error", b)
		}
	}
}
