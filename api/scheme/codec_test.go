package scheme

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/kobune/kobune/api/meta"
)

// FuzzCodecAgreesWithEncodingJSON holds the fast codec (codec.go) to
// encoding/json: whatever the fast strict decoder accepts, encoding/json's
// strict decoder accepts too, into an equal object; and Encode writes
// json.Marshal's bytes for every object encoding/json can decode. Inputs are
// JSON or YAML (converted to JSON); the kind is taken from the input, and
// Pod is used when it names none. Its seeds include FuzzDecode's corpus, so
// a plain `go test` checks all of those manifests too.
func FuzzCodecAgreesWithEncodingJSON(f *testing.F) {
	files, _ := filepath.Glob("testdata/fuzz/FuzzDecode/*")
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		// The corpus format: "go test fuzz v1" then []byte("...").
		_, lit, _ := strings.Cut(string(b), "\n")
		lit = strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(lit), "[]byte("), ")")
		data, err := strconv.Unquote(lit)
		if err != nil {
			f.Fatalf("%s: %v", name, err)
		}
		f.Add([]byte(data))
	}
	if len(files) < 100 {
		f.Fatalf("FuzzDecode's corpus has %d inputs; expected hundreds", len(files))
	}
	f.Add([]byte(manifest))
	f.Add([]byte(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","labels":{"a<b":"&"}},"spec":{"containers":[{"name":"c","image":"i","resources":{"limits":{"cpu":1.5,"memory":"1e3"}}}]}}`))
	f.Add([]byte(`{"kind":"Deployment","spec":{"strategy":{"rollingUpdate":{"maxSurge":"25%","maxUnavailable":0}}}} {}`))
	f.Add([]byte(`{"kind":"Pod","metadata":{"creationTimestamp":"2026-12-01T03:04:05Z","NAME":"x"}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		js := data // JSON as sent, with its own spacing and trailing bytes
		if !bytes.HasPrefix(bytes.TrimSpace(data), []byte("{")) {
			if y, err := yaml.YAMLToJSON(data); err == nil {
				js = y
			}
		}
		var head struct{ Kind string }
		_ = json.Unmarshal(js, &head)
		k, _ := ByResource("pods")
		for _, c := range All() {
			if c.Kind == head.Kind {
				k = c
			}
		}

		fast := k.New()
		fastErr := fastDecodeStrict(js, fast)
		std := k.New()
		dec := json.NewDecoder(bytes.NewReader(js))
		dec.DisallowUnknownFields()
		stdErr := dec.Decode(std)
		if stdErr == nil && len(bytes.TrimSpace(js[dec.InputOffset():])) > 0 {
			stdErr = errTrailingData // json.Unmarshal refuses data after the value
		}
		if fastErr == nil {
			if stdErr != nil {
				t.Fatalf("fast decoder accepted what encoding/json refuses (%v):\n%s", stdErr, js)
			}
			if !reflect.DeepEqual(fast, std) {
				t.Fatalf("decoders disagree on\n%s\nfast: %+v\nstd:  %+v", js, fast, std)
			}
		}

		loose := k.New()
		if json.Unmarshal(js, loose) != nil {
			return
		}
		want, wantErr := json.Marshal(loose)
		got, gotErr := Encode(loose)
		if (wantErr == nil) != (gotErr == nil) || !bytes.Equal(got, want) {
			t.Fatalf("Encode differs from json.Marshal for\n%s\nEncode:       %s (%v)\njson.Marshal: %s (%v)", js, got, gotErr, want, wantErr)
		}
	})
}

// Both fast decoders refuse unknown fields and trailing data, and the
// option that makes Unmarshal refuse them was found.
func TestFastDecodersAreStrict(t *testing.T) {
	if disallowUnknownFields == nil {
		t.Fatal("the strict option for goccy's Unmarshal was not found: fastDecodeStrict falls back to the slower stream decoder")
	}
	k, _ := ByResource("pods")
	for name, decode := range map[string]func([]byte, meta.Object) error{"fast": fastDecodeStrict, "stream": slowDecodeStrict} {
		for _, in := range []string{`{"spec":{"bogus":1}}`, `{"metadata":{"name":"a"}} {}`, `{"metadata":{"name":"a"}} x`} {
			if err := decode([]byte(in), k.New()); err == nil {
				t.Errorf("%s decoder accepted %s", name, in)
			}
		}
		if err := decode([]byte(`{"metadata":{"name":"a"}}  `), k.New()); err != nil {
			t.Errorf("%s decoder refused a valid object: %v", name, err)
		}
	}
}
